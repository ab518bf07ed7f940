"""A listener's refusals, counted and logged at most once a minute: a flood of connections is one line, not a
gigabyte of log."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable


class Refusals:
    """Counts why ``listener`` closed connections unanswered; logs a summary at most every ``every`` seconds."""

    def __init__(
        self,
        listener: str,
        *,
        log: logging.Logger,
        every: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        what: str = "closed connections unanswered",
    ) -> None:
        self.listener, self.log, self.every, self.clock, self.what = listener, log, every, clock, what
        self.total = 0
        self._counts: Counter[str] = Counter()
        self._logged_at: float | None = None
        self._lock = threading.Lock()

    def note(self, reason: str) -> None:
        """One connection closed for ``reason``; the summary goes out now if none did in the last minute."""
        with self._lock:
            self.total += 1
            self._counts[reason] += 1
            now = self.clock()
            if self._logged_at is not None and now - self._logged_at < self.every:
                return
            self._logged_at, counts = now, self._counts
            self._counts = Counter()
        said = ", ".join(f"{n} {why}" for why, n in counts.most_common())
        self.log.warning("%s %s: %s (next summary in %.0fs at the earliest)", self.listener, self.what, said, self.every)
