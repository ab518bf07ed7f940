"""Incident lifecycle: after each check, open, update or resolve a target's incident.

An incident opens when a detector fires, with the severity of what opened it (``warning``
when every failed check behind it was a soft condition, such as latency, else ``critical``).
It is updated when its leading pattern changes or its severity worsens (it never softens while
open; its summary follows every check, silently), and resolves after
``detectors.recover_after`` consecutive passing checks, whatever the flapping window says
(latency drift, which passing checks show, keeps it open while detected). A flap that restarts
is a new incident: when a target fails again within ``detectors.flap_window`` of its last
incident's recovery, the new incident's notes say ``flap restarted: follows #N``. Each change is
returned as an :class:`Event` for alerting.

The :class:`Tracker` is the one writer of incident state: the check scheduler
and the agent share one, and every open, update, resolve and annotation goes
through it, one at a time. The store backs it with constraints, so even a second
writer cannot open a second incident for a target (a partial unique index) or
make a transition twice (a close or update counts only if the incident was open).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from monitor.checks.engine import Result
from monitor.config import Detectors
from monitor.incidents import patterns
from monitor.incidents.patterns import Pattern
from monitor.store import Store, result_row

HISTORY = 200


@dataclass
class Event:
    kind: str  # opened | updated | resolved | diagnosed
    incident: dict[str, Any]
    patterns: list[Pattern] = field(default_factory=list)
    queued: bool = False  # its notifications were queued with the change itself, in one transaction
    diagnosis: dict[str, Any] | None = None  # diagnosed: the agent's, as Diagnosis.to_dict() gives it


class Tracker:
    """Turns detector output into incidents in the store: the one writer of incident state."""

    def __init__(self, store: Store, detectors: Detectors, *, clock: Callable[[], float] = time.time,
                 silenced: Callable[[str, float], bool] = lambda target, at: False,
                 messages: Callable[[Event, dict[str, Any] | None], list[tuple[str, dict[str, Any]]]] | None = None,
                 ) -> None:
        self.store = store
        self.detectors = detectors
        self.clock = clock
        self.silenced = silenced
        self.messages = messages  # Alerts.messages: an incident and its first notification commit together
        self._lock = threading.RLock()
        self._windows: dict[str, patterns.Window] = {}  # each target's recent results, as the detectors see them

    def observe(self, target: str, result: Result | None = None) -> tuple[list[Pattern], list[Event]]:
        """Run the detectors on the target's history; bring its incident up to date.

        With ``result`` (just stored), the history is the target's window in memory, read from the
        store once, at the target's first result since start, and then kept up to date; so a check
        costs no read of its history. Without it, the history is read from the store.
        """
        with self._lock:
            rows = self._history(target, result)
            found = patterns.detect(target, rows, self.detectors, self.clock())
            return found, self._apply(target, found, rows)

    def forget(self, target: str) -> None:
        """Drop a target's window (it left the config)."""
        with self._lock:
            self._windows.pop(target, None)

    def _history(self, target: str, result: Result | None) -> list[patterns.Row]:
        window, written = self._windows.get(target), self.store.results_written(target)
        if result is not None and window is not None:
            if written == window.version + 1:  # ``result`` is the one result stored since: add it
                window.version = written
                return window.add(result_row(result), self.detectors, self.clock())
            if written == window.version and result.checked_at <= window.rows[0]["checked_at"]:
                return list(window.rows)  # read from the store with a later result of the same batch
        rows = self.store.recent_results(target, HISTORY)  # holds ``result``: it was stored first
        if result is None:
            self._windows.pop(target, None)  # someone looked outside the daemon's cycle: rebuild it next time
        else:  # the first result since start, or another writer stored results in between: read them all
            self._windows[target] = patterns.Window(rows, HISTORY, version=written)
        return list(rows)

    def open(self, target: str, pattern: str, summary: str, severity: str = "critical") -> int:
        """The target's open incident, opened now if it has none (``monitor investigate`` on a failing URL)."""
        with self._lock:
            current = self.store.open_incidents(target)
            if current:
                return int(current[-1]["id"])
            opened = self.store.open_incident_unless_open(target, pattern, summary, severity,
                                                          self.silenced(target, self.clock()))
            return opened if opened is not None else int(self.store.open_incidents(target)[-1]["id"])

    def close_unconfigured(self, configured: set[str]) -> list[Event]:
        """Resolve, with a note, the open incidents of targets not in ``configured`` (removed by a reload,
        imported, or opened by ``monitor investigate URL``): nothing would ever check them again."""
        events = []
        with self._lock:
            for incident in self.store.open_incidents():
                if incident["target"] in configured or not self.store.close_incident(incident["id"]):
                    continue
                self.store.append_incident_note(incident["id"], "closed: its target is no longer configured")
                events.append(Event("resolved", self._get(incident["id"])))
        return events

    def annotate(self, incident_id: int, note: str | None = None, **fields: Any) -> None:
        """Set fields of an incident (``agent_state``, ...) and append a note, open or resolved."""
        with self._lock:
            if fields:
                self.store.update_incident(incident_id, **fields)
            if note:
                self.store.append_incident_note(incident_id, note)

    def _apply(self, target: str, found: list[Pattern], rows: list[patterns.Row]) -> list[Event]:
        # Window and flapping counts lag behind recovery: they open or update an incident only
        # while the latest check fails. Latency drift concerns passing checks, so it always counts.
        latest_failed = bool(rows) and not rows[0]["ok"]
        active = [p for p in found if latest_failed or p.name == "latency_drift"]
        current = self.store.open_incidents(target)
        if current:
            # recover_after passes close it, whatever the flapping window says; drift is slowness in
            # passing checks, so an incident stays open while drift is detected.
            lingering = any(p.name == "latency_drift" for p in found)
            if patterns.recovered(rows, self.detectors.recover_after) and not lingering:
                # only the close that found it open is the transition: a resolve is sent once
                return [Event("resolved", self._get(i["id"])) for i in current if self.store.close_incident(i["id"])]
            return self._update(current[-1], active)
        if not active:
            return []
        silenced = self.silenced(target, self.clock())
        cause = patterns.root_cause_of(rows[0]["error"], rows[0]["status_code"], rows[0]["detail"] or "", active[0].name)
        messages = self.messages
        notify = None if messages is None else (lambda row: messages(Event("opened", row or {}, active), row))
        incident_id = self.store.open_incident_unless_open(target, active[0].name, _summary(active),
                                                           _severity(active), silenced, root_cause=cause,
                                                           notify=notify)
        if incident_id is None:  # another writer opened it since we looked: this is an update of that one
            current = self.store.open_incidents(target)
            return self._update(current[-1], active) if current else []
        self._link_restarted_flap(target, incident_id)
        return [Event("opened", self._get(incident_id), active, queued=messages is not None)]

    def _link_restarted_flap(self, target: str, incident_id: int) -> None:
        """A target failing again within ``flap_window`` of its last recovery: the new incident names the last."""
        last = self.store.last_resolved_incident(target)
        if last is None or last["closed_at"] is None:
            return
        since = self.clock() - last["closed_at"]
        if since <= self.detectors.flap_window:
            self.store.append_incident_note(
                incident_id, f"flap restarted: follows #{last['id']}, which recovered {since:.0f} s earlier")

    def _update(self, incident: dict[str, Any], active: list[Pattern]) -> list[Event]:
        """Counts in the summary change every check: only a new leading pattern or severity is an event."""
        if not active:
            return []
        summary, head = _summary(active), active[0].name
        severity = _worse(incident["severity"], _severity(active))  # escalates, never softens while open
        if (incident["summary"], incident["severity"], incident["pattern"]) == (summary, severity, head):
            return []
        seen = {"severity": incident["severity"], "pattern": incident["pattern"]}
        updated = self.store.update_incident(incident["id"], only_open=True, expect=seen, summary=summary,
                                             severity=severity, pattern=head)
        if not updated or (incident["severity"], incident["pattern"]) == (severity, head):
            return []
        return [Event("updated", self._get(incident["id"]), active)]

    def _get(self, incident_id: int) -> dict[str, Any]:
        incident = self.store.incident(incident_id)
        assert incident is not None
        return incident


def _summary(found: list[Pattern]) -> str:
    return "; ".join(p.summary for p in found)


def _severity(found: list[Pattern]) -> str:
    return "critical" if any(p.severity == "critical" for p in found) else "warning"


def _worse(a: str | None, b: str) -> str:
    return "critical" if "critical" in (a, b) else b
