"""Maintenance: whether alerts about an incident are held back. The one place this is decided.

Two things silence an incident's alerts:

* the incident itself is silenced: it opened while its target was in a maintenance window (the writer
  marks it so, for good), or someone silenced it in the web UI;
* its target is in a maintenance window now: no change to it is sent while the window lasts.

A refresh (re-sending to Alertmanager an alert that already fires, so that it does not time out) is no
new notification: only the incident's own silence stops it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from monitor.config import Maintenance as Window


class Maintenance:
    """The configured maintenance windows, read when asked (a reloaded config applies at once).

    ``Maintenance(lambda: config.maintenance)``; ``Maintenance()`` has no windows.
    """

    def __init__(self, windows: Callable[[], Sequence[Window]] = tuple, *,
                 clock: Callable[[], float] = time.time) -> None:
        self.windows, self.clock = windows, clock

    def covers(self, target: str, at: float | None = None) -> bool:
        """Whether ``target`` is in a maintenance window at ``at`` (now)."""
        moment = self.clock() if at is None else at
        return any(window.covers(target, moment) for window in self.windows())

    def silences(self, incident: Mapping[str, Any], *, refresh: bool = False) -> bool:
        """Whether alerts about ``incident`` (as stored) are held back now; see the module docstring."""
        if incident.get("silenced"):
            return True
        return not refresh and self.covers(incident["target"])
