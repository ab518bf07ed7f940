"""Incident lifecycle: after each check, open, update or resolve a target's incident.

An incident opens when a detector fires, is updated while patterns change, and
resolves after ``detectors.recover_after`` consecutive passing checks with no
pattern left. Each change is returned as an :class:`Event` for alerting.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from monitor import patterns
from monitor.config import Detectors
from monitor.patterns import Pattern
from monitor.store import Store

HISTORY = 200


@dataclass
class Event:
    kind: str  # opened | updated | resolved
    incident: dict[str, Any]
    patterns: list[Pattern] = field(default_factory=list)


class Tracker:
    """Turns detector output into incidents in the store."""

    def __init__(self, store: Store, detectors: Detectors, *, clock: Callable[[], float] = time.time,
                 silenced: Callable[[str, float], bool] = lambda target, at: False) -> None:
        self.store = store
        self.detectors = detectors
        self.clock = clock
        self.silenced = silenced

    def observe(self, target: str) -> tuple[list[Pattern], list[Event]]:
        """Run the detectors on the target's history; bring its incident up to date."""
        rows = self.store.recent_results(target, HISTORY)
        found = patterns.detect(target, rows, self.detectors, self.clock())
        return found, self._apply(target, found, rows)

    def _apply(self, target: str, found: list[Pattern], rows: list[dict[str, Any]]) -> list[Event]:
        current = self.store.open_incidents(target)
        if found:
            summary = "; ".join(p.summary for p in found)
            severity = "critical" if any(p.severity == "critical" for p in found) else "warning"
            if not current:
                silenced = self.silenced(target, self.clock())
                incident_id = self.store.open_incident(target, found[0].name, summary, severity, silenced)
                return [Event("opened", self._get(incident_id), found)]
            incident = current[-1]
            if incident["summary"] != summary or incident["severity"] != severity:
                self.store.update_incident(incident["id"], summary=summary, severity=severity)
                return [Event("updated", self._get(incident["id"]), found)]
            return []
        if current and patterns.recovered(rows, self.detectors.recover_after):
            events = []
            for incident in current:
                self.store.close_incident(incident["id"])
                events.append(Event("resolved", self._get(incident["id"])))
            return events
        return []

    def _get(self, incident_id: int) -> dict[str, Any]:
        incident = self.store.incident(incident_id)
        assert incident is not None
        return incident
