"""Maintenance: whether alerts about an incident are held back. The one place this is decided.

Two things silence an incident's alerts:

* the incident itself is silenced: someone silenced it in the web UI (for good), or it opened while its
  target was in a maintenance window (the writer marks it so). When that window is over and the target still
  fails, the writer releases it (:meth:`monitor.incidents.writer.Writer.release`): its "opened" goes out
  then, once;
* its target is in a maintenance window now: no change to it is sent while the window lasts. The "resolved" of
  an incident its receivers heard of before (it opened outside the window) waits for the window's end
  (:meth:`Maintenance.ends`), and goes out then, so that nobody is left with an alert open for ever.

Checks never stop in a window: results are stored and incidents open as ever, only their alerts wait.
:meth:`Maintenance.announce` logs each window once as it starts and once as it ends (the daemon asks every
few seconds); a reload that moves the end of a window in force logs its new end.

A refresh (re-sending to Alertmanager an alert that already fires, so that it does not time out) is no
new notification: only the incident's own silence stops it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

from monitor.config import Maintenance as Window
from monitor.core.incidents import Incident

log = logging.getLogger("monitor.maintenance")

CHAINED = 10  # overlapping windows followed to find when maintenance ends


class Maintenance:
    """The configured maintenance windows, read when asked (a reloaded config applies at once).

    ``Maintenance(lambda: config.maintenance)``; ``Maintenance()`` has no windows.
    """

    def __init__(self, windows: Callable[[], Sequence[Window]] = tuple, *, clock: Callable[[], float] = time.time) -> None:
        self.windows, self.clock = windows, clock
        self._open: dict[tuple[str, ...], tuple[float, float, str]] = {}  # what announce last saw in force

    def covers(self, target: str, at: float | None = None) -> bool:
        """Whether ``target`` is in a maintenance window at ``at`` (now)."""
        moment = self.clock() if at is None else at
        return any(window.covers(target, moment) for window in self.windows())

    def ends(self, target: str, at: float | None = None) -> float | None:
        """When the maintenance of ``target`` in force at ``at`` (now) is over, through the windows that overlap
        it; None when no window covers it."""
        moment = self.clock() if at is None else at
        until: float | None = None
        for _ in range(CHAINED):  # windows back to back (an hourly rule an hour long) would go on for ever
            spans = [window.active(moment if until is None else until) for window in self.windows() if target in window.targets]
            ends = [span[1] for span in spans if span is not None]
            if not ends:
                break
            until = max(ends)
        return until

    def silences(self, incident: Incident, *, refresh: bool = False) -> bool:
        """Whether alerts about ``incident`` (as stored) are held back now; see the module docstring."""
        if incident.silenced:
            return True
        return not refresh and self.covers(incident.target)

    def announce(self, at: float | None = None) -> list[str]:
        """Log each window that started or ended since the last call; returns the lines logged.

        Windows are told apart by their targets, so a reload that edits a window in force (its end, its
        reason) neither ends it nor starts it again."""
        moment = self.clock() if at is None else at
        now_open: dict[tuple[str, ...], tuple[float, float, str]] = {}
        for window in self.windows():
            span = window.active(moment)
            key = tuple(window.targets)
            if span is not None and span[1] > now_open.get(key, (0.0, 0.0, ""))[1]:
                now_open[key] = (*span, window.reason)
        lines = [
            _said(key, span, key in self._open) for key, span in now_open.items() if key not in self._open or self._open[key][1] != span[1]
        ]
        lines += [f"maintenance ended for {', '.join(key)}" + _why(span[2]) for key, span in self._open.items() if key not in now_open]
        self._open = now_open
        for line in lines:
            log.info("%s", line)
        return lines


def _said(targets: tuple[str, ...], span: tuple[float, float, str], known: bool) -> str:
    """A window that started, or one in force whose end moved (a reload, or the next occurrence of a rule)."""
    what = "goes on" if known else "started"
    return f"maintenance {what} for {', '.join(targets)} until {_utc(span[1])}" + _why(span[2])


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def _why(reason: str) -> str:
    return f" ({reason})" if reason else ""
