# The part of APScheduler 3.x that monitor.daemon uses; tests/test_seam.py checks it against the package.
import abc
from collections.abc import Callable, Mapping, Sequence
from typing import Any

class BackgroundScheduler(metaclass=abc.ABCMeta):
    def __init__(self, gconfig: Mapping[str, Any] = ..., **options: Any) -> None: ...
    def add_job(
        self,
        func: Callable[..., object],
        trigger: str | None = None,
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        id: str | None = None,
        name: str | None = None,
        misfire_grace_time: int | None = ...,
        coalesce: bool = ...,
        max_instances: int = ...,
        next_run_time: Any = ...,
        jobstore: str = "default",
        executor: str = "default",
        replace_existing: bool = False,
        **trigger_args: Any,
    ) -> object: ...
    def start(self, *args: Any, **kwargs: Any) -> None: ...
    def shutdown(self, *args: Any, **kwargs: Any) -> None: ...
