# The part of APScheduler 3.x that monitor.daemon uses; tests/test_seam.py checks it against the package.
import abc

class ThreadPoolExecutor(metaclass=abc.ABCMeta):
    def __init__(self, max_workers: int = 10, pool_kwargs: dict[str, object] | None = None) -> None: ...
