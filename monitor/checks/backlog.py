"""The results between a check's start and the store: counted, aged, and handed to the writer in batches.

The check loop asks :meth:`Backlog.room` before it starts checks, so checking runs only as far ahead of
recording as ``backlog.max_results`` and ``backlog.max_age`` allow (see :mod:`monitor.config.backlog`)::

    loop:    room() → started(n) → ... finished(result) (or dropped())
    writer:  wait_batch() → take() → deliver → recorded(n)

A result is unrecorded from the moment its check starts until :meth:`recorded`: in flight, waiting, or
in the batch being written. Safe to share between the loop's thread and the writer's.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

from monitor.config import BacklogConfig
from monitor.core.results import Result


class Backlog:
    """Counts and ages the unrecorded results; ``limits()`` is read at each call, so a reload takes effect."""

    def __init__(self, limits: Callable[[], BacklogConfig] = BacklogConfig, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits, self.clock = limits, clock
        self._waiting: deque[tuple[float, Result]] = deque()
        self._in_flight = 0
        self._writing: tuple[int, float | None] = (0, None)  # the batch being written: its size, its oldest
        self._ready = threading.Condition()

    def __len__(self) -> int:
        """Checks started and not yet recorded."""
        with self._ready:
            return self._in_flight + len(self._waiting) + self._writing[0]

    def room(self) -> int:
        """How many checks may start now: none while the oldest waiting result is older than ``max_age``."""
        limits = self.limits()
        with self._ready:
            if self._oldest_age() > limits.max_age:
                return 0
            return max(0, limits.max_results - self._in_flight - len(self._waiting) - self._writing[0])

    def oldest_age(self) -> float:
        """Seconds the oldest result finished and not yet recorded has waited (0: none waits)."""
        with self._ready:
            return self._oldest_age()

    def _oldest_age(self) -> float:
        finished = [at for at in (self._writing[1], self._waiting[0][0] if self._waiting else None) if at is not None]
        return self.clock() - min(finished) if finished else 0.0

    def started(self, count: int = 1) -> None:
        with self._ready:
            self._in_flight += count

    def finished(self, result: Result) -> None:
        """A check ended with ``result``: it waits for the writer."""
        with self._ready:
            self._in_flight -= 1
            self._waiting.append((self.clock(), result))
            if len(self._waiting) >= self.limits().batch:
                self._ready.notify()

    def dropped(self) -> None:
        """A check ended without a result (cancelled at stop)."""
        with self._ready:
            self._in_flight -= 1

    def wait_batch(self, timeout: float) -> None:
        """Until a whole batch waits, or ``timeout`` seconds."""
        with self._ready:
            if len(self._waiting) < self.limits().batch:
                self._ready.wait(timeout)

    def take(self) -> list[Result]:
        """The oldest waiting results, at most ``batch``; they count as unrecorded until :meth:`recorded`."""
        size = self.limits().batch
        with self._ready:
            batch = [self._waiting.popleft() for _ in range(min(size, len(self._waiting)))]
            if batch:
                self._writing = (self._writing[0] + len(batch), batch[0][0])
        return [result for _, result in batch]

    def recorded(self, count: int) -> None:
        """The writer is done with ``count`` results taken earlier (stored, or kept by a refusing database)."""
        with self._ready:
            self._writing = (max(0, self._writing[0] - count), None)
