"""Maintenance: whether alerts about an incident are held back. The one place this is decided.

Two things silence an incident's alerts:

* the incident itself is silenced: it opened while its target was in a maintenance window (the writer
  marks it so, for good), or someone silenced it in the web UI;
* its target is in a maintenance window now: no change to it is sent while the window lasts.

Checks never stop in a window: results are stored and incidents open as ever, only their alerts wait.
:meth:`Maintenance.announce` logs each window as it starts and ends (the daemon asks every few seconds).

A refresh (re-sending to Alertmanager an alert that already fires, so that it does not time out) is no
new notification: only the incident's own silence stops it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from monitor.config import Maintenance as Window

log = logging.getLogger("monitor.maintenance")


class Maintenance:
    """The configured maintenance windows, read when asked (a reloaded config applies at once).

    ``Maintenance(lambda: config.maintenance)``; ``Maintenance()`` has no windows.
    """

    def __init__(self, windows: Callable[[], Sequence[Window]] = tuple, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.windows, self.clock = windows, clock
        self._open: dict[tuple[str, ...], tuple[float, float]] = {}  # what announce last saw in force

    def covers(self, target: str, at: float | None = None) -> bool:
        """Whether ``target`` is in a maintenance window at ``at`` (now)."""
        moment = self.clock() if at is None else at
        return any(window.covers(target, moment) for window in self.windows())

    def silences(self, incident: Mapping[str, Any], *, refresh: bool = False) -> bool:
        """Whether alerts about ``incident`` (as stored) are held back now; see the module docstring."""
        if incident.get("silenced"):
            return True
        return not refresh and self.covers(incident["target"])

    def announce(self, at: float | None = None) -> list[str]:
        """Log each window that started or ended since the last call; returns the lines logged."""
        moment = self.clock() if at is None else at
        now_open = {}
        for window in self.windows():
            span = window.active(moment)
            if span is not None:
                now_open[(*window.targets, window.reason, window.rrule or "")] = span
        lines = [f"maintenance started for {', '.join(key[:-2])} until {_utc(span[1])}" + _why(key[-2])
                 for key, span in now_open.items() if self._open.get(key) != span]
        lines += [f"maintenance ended for {', '.join(key[:-2])}" + _why(key[-2])
                  for key, span in self._open.items() if now_open.get(key) != span]
        self._open = now_open
        for line in lines:
            log.info("%s", line)
        return lines


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def _why(reason: str) -> str:
    return f" ({reason})" if reason else ""
