"""Figures read off the scrape path: a scrape never waits on a database writer nor on the agent's memory lock.

Collectors with one line per target also write their own text for a scrape (an ``exposition`` method), far
faster than prometheus_client's generic path: :func:`elsewhere` hides them from it in the scraping thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

log = logging.getLogger("monitor.metrics")

_scraping = threading.local()


@contextmanager
def elsewhere() -> Iterator[None]:
    """While this thread renders the registry, collectors that write their own text yield nothing to it."""
    _scraping.elsewhere = True
    try:
        yield
    finally:
        _scraping.elsewhere = False


def written_elsewhere() -> bool:
    """Whether this thread's scrape takes a self-writing collector's text from its ``exposition``."""
    return bool(getattr(_scraping, "elsewhere", False))


def escape(value: str) -> str:
    """A label value as the text format writes it."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


class RefreshedCollector(Collector):
    """Figures from ``source()`` (a dict), read off the scrape path; subclasses turn them into families.

    A scrape starts one refresh in a background thread and waits up to ``wait`` seconds for it;
    past that, or while an earlier refresh is still stuck, it serves the last figures. So a
    database writer holding its lock, or an investigation holding the memory lock, never holds
    a scrape, and a thousand scrapes start at most one reader.
    """

    EMPTY: dict[str, Any] = {}

    def __init__(self, source: Callable[[], dict[str, Any]], wait: float = 0.5) -> None:
        self.source, self.wait = source, wait
        self.latest = self.EMPTY
        self._waiting = False  # the last refresh met a database error
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def figures(self) -> dict[str, Any]:
        """The freshest figures to be had within ``wait`` seconds."""
        with self._lock:
            reader = self._reader
            stuck = reader is not None and reader.is_alive()
            if reader is None or not stuck:
                reader = self._reader = threading.Thread(target=self._refresh, name="monitor-metrics-refresh", daemon=True)
                reader.start()
        reader.join(0 if stuck else self.wait)
        return self.latest

    def _refresh(self) -> None:
        try:
            self.latest = self.source()
            self._waiting = False
        except Exception as exc:  # a scrape shows the last figures; the reason goes to the log
            from monitor.store import database_errors
            from monitor.store.engines import describe

            if not isinstance(exc, database_errors()):
                log.exception("reading figures for /metrics failed (%s)", type(self).__name__)
            elif not self._waiting:  # once while the database is away, not once a scrape
                log.warning("figures for /metrics wait for the database (%s): %s", type(self).__name__, describe(exc))
            self._waiting = isinstance(exc, database_errors())

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return self.families(self.EMPTY)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return self.families(self.figures())

    def families(self, stats: dict[str, Any]) -> Iterator[GaugeMetricFamily]:
        raise NotImplementedError
