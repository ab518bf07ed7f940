"""Heartbeat pings, recorded off the listener's threads, so a locked database costs a job seconds, not a timeout."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout


class Busy(Exception):
    """The ping was not recorded in time (the database is locked, or too many pings wait): ping again."""


class PingDesk:
    """Takes pings for ``record`` (``Heartbeats.record``: token, event, message -> the target's name or None).

    One thread records them one at a time, as the store takes them anyway. ``take`` waits at most
    ``wait`` seconds from the ping's arrival for it to be recorded; past that, or with ``backlog`` pings already
    waiting, it raises :class:`Busy` and the job gets its 503 at once. A ping not yet begun is
    withdrawn; one already at the database may still land, which a second ping makes harmless.
    """

    def __init__(self, record: Callable[[str, str, str | None], str | None], *, wait: float = 3.0, backlog: int = 8) -> None:
        self.record, self.wait = record, wait
        self._slots = threading.BoundedSemaphore(backlog)
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="monitor-pings")

    def take(self, token: str, event: str, since: float | None = None, message: str | None = None) -> str | None:
        """The target's name, None for an unknown token; raises :class:`Busy`, or the store's error. The
        wait counts from ``since`` (``time.monotonic()``: when the ping arrived), else from now."""
        left = self.wait if since is None else since + self.wait - time.monotonic()
        if not self._slots.acquire(blocking=False):
            raise Busy("too many pings wait for the database")
        future: Future[str | None] = self._pool.submit(self.record, token, event, message)
        future.add_done_callback(lambda _: self._slots.release())
        try:
            return future.result(timeout=max(0.0, left))
        except FutureTimeout:
            future.cancel()
            raise Busy(f"the database took no ping within {self.wait:.0f}s") from None

    def stop(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
