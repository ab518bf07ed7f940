"""Incident lifecycle: after each check, open, update or resolve a target's incident.

An incident opens when a detector fires, with the severity of what opened it (``warning``
when every failed check behind it was a soft condition, such as latency, else ``critical``).
It is updated when its leading pattern changes or its severity worsens (it never softens while
open; its summary follows every check, silently), and resolves after
``detectors.recover_after`` consecutive passing checks, whatever the flapping window says
(latency drift, which passing checks show, keeps it open while detected; drift opens an incident, or keeps
one open, only with ``detectors.page_on_drift``). A flap that restarts is a new incident: when a target
fails again within ``detectors.flap_window`` of its last incident's recovery, the new incident's notes say
``flap restarted: follows #N``. Each change is published by the writer, and returned as an :class:`Event`
(the daemon asks the agent on "opened" and "updated"). An incident that opened in a maintenance window,
silenced, is released when the window is over and its target still fails
(:meth:`~monitor.incidents.writer.Writer.release`): its "opened" goes out then.

The :class:`Tracker` decides; the :class:`~monitor.incidents.writer.Writer` it was given writes and
publishes. The check scheduler and the agent share one tracker (and so one writer), and every
observation goes through it, one at a time. Each target's recent results are kept in memory: the
:class:`~monitor.incidents.recorder.Recorder`, the one entry point of results, hands the tracker every
result it stores, so a check costs no read of its history.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence

from monitor.config import Config, Detectors
from monitor.core.batches import Verdict
from monitor.core.incidents import Event, Incident, Pattern
from monitor.core.results import Result
from monitor.incidents import judge
from monitor.incidents.history import History, Window, rows_needed
from monitor.incidents.judge import HISTORY
from monitor.incidents.paging import Paging
from monitor.incidents.writer import Writer
from monitor.store import Store

__all__ = ["HISTORY", "Event", "Tracker"]

Opening = Callable[[list[Pattern]], tuple[str | None, str | None]]  # an incident opening now: its root cause, evidence


class Tracker:
    """Turns detector output into incidents, through its writer (made with it: :mod:`monitor.wiring`)."""

    def __init__(self, store: Store, detectors: Detectors, *, writer: Writer, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.detectors = detectors
        self.own: dict[str, Detectors] = {}  # targets' own thresholds (targets[].detectors)
        self.rows: dict[str, int] = {}  # the rows each target's window holds (history.rows_needed; else HISTORY)
        self.clock = clock
        self.writer = writer
        self._lock = threading.RLock()
        self._windows: dict[str, Window] = {}  # each target's recent results, as the detectors see them
        self.paging = Paging()  # receivers with thresholds of their own (alerts.per_receiver)

    def apply_config(self, config: Config) -> None:
        """After a config reload: its detector thresholds (its writer reads the maintenance windows when asked), and
        the rows each window holds: a window whose size changed is read again from the store on its next result.
        A quorum target's window takes a row from each of its locations an interval."""
        self.detectors = config.detectors
        self.own = {t.name: t.detectors for t in config.targets if t.detectors is not None}
        self.paging.apply_config(config)
        self.rows = {
            t.name: rows_needed(t.detectors or self.detectors, t.interval / (t.quorum.locations if t.quorum else 1), HISTORY)
            for t in config.targets
        }
        with self._lock:
            for name in [name for name, window in self._windows.items() if window.limit != self.rows.get(name, HISTORY)]:
                del self._windows[name]

    def thresholds(self, target: str) -> Detectors:
        """The target's own detector thresholds, else the top-level ones."""
        return self.own.get(target, self.detectors)

    def observe(self, target: str, result: Result | None = None) -> tuple[list[Pattern], list[Event]]:
        """Run the detectors on the target's history; bring its incident up to date.

        With ``result`` (just stored), the history is the target's window in memory, read from the store
        once (see :meth:`prime`), and then kept up to date. Without it, the history is read from the store.
        """
        with self._lock:
            rows = self._history(target, result)
            judged = judge.judge(target, rows, self.thresholds(target), self.clock())
            opening: Opening = lambda active: judge.opening(rows, active, result)  # noqa: E731
            return judged.found, self._decide(target, judged, opening, ok=rows.ok)

    def prime(self, targets: Iterable[str]) -> None:
        """Read the history of the targets without a window, before their new results are stored."""
        with self._lock:
            for target in targets:
                if target not in self._windows:
                    rows = self.rows.get(target, HISTORY)
                    self._windows[target] = Window(self.store.results.recent_results(target, rows), rows)

    def remember(self, target: str, result: Result) -> None:
        """A result just stored that the detectors do not judge by (it came too late): it joins the target's
        window as history, and nothing is detected."""
        with self._lock:
            window = self._windows.get(target)
            if window is not None:
                window.add(result, self.detectors, self.clock())

    def forget(self, target: str) -> None:
        """Drop a target's window (it left the config, or its results were stored without it)."""
        self.forget_all([target])

    def forget_all(self, targets: Iterable[str]) -> None:
        """Drop the windows of ``targets`` (their results were judged elsewhere: a worker's)."""
        with self._lock:
            if self._windows:
                for target in targets:
                    self._windows.pop(target, None)

    def _history(self, target: str, result: Result | None) -> History:
        window = self._windows.get(target)
        if result is not None and window is not None:
            return window.add(result, self.thresholds(target), self.clock())
        rows = self.store.results.recent_results(target, HISTORY)  # holds ``result``: it was stored first
        if result is not None:
            self._windows[target] = Window(rows, self.rows.get(target, HISTORY))
        return History.of(rows)

    def judged(self, target: str, verdict: Verdict) -> list[Event]:
        """Bring the target's incident up to date from a verdict its worker made on its own window
        (:mod:`monitor.incidents.verdicts`): what :meth:`observe` does after the detectors."""
        with self._lock:
            run = verdict.run or (1 if verdict.failed else HISTORY)  # a verdict made here for a healthy result: recovered
            judged = judge.Findings(verdict.found, verdict.paging, verdict.failed, verdict.recovered, run)
            opening: Opening = lambda active: (verdict.cause, verdict.evidence)  # noqa: E731
            return self._decide(target, judged, opening)

    def _decide(self, target: str, judged: judge.Findings, opening: Opening, *, ok: Sequence[int] | None = None) -> list[Event]:
        """The incident's transition after what the judge found (here, or in the target's worker): open, update,
        release, page a receiver with thresholds of its own, or resolve; ``ok``: the window's passes, newest first."""
        active, latest_failed = judged.active, judged.failed
        current = self.store.incidents.open_incidents(target)
        before, told = self.paging.step(target, latest_failed, judged.run, bool(current), ok)
        own = self.paging.names(target)
        if current:
            # recover_after passes close it, whatever the flapping window says; drift is slowness in
            # passing checks, so an incident stays open while drift is detected.
            if judged.recovered and not judge.lingering(judged.paging):
                # only the close that found it open is the transition: a resolve is sent once
                self.paging.keep(target, frozenset())
                closed = (self.writer.resolve(i.id, quiet=own - before) for i in current)
                return [e for e in closed if e is not None]
            self.paging.keep(target, told)
            changed = self._update(current[-1], active, own - told) + self._released(current[-1], latest_failed or bool(active))
            return changed + self._paged(current[-1], active, before, told)
        self.paging.keep(target, frozenset())
        return self._open(target, active, opening, own - told, told) if active else []

    def _open(self, target: str, active: list[Pattern], opening: Opening, quiet: frozenset[str], told: frozenset[str]) -> list[Event]:
        """Open the target's incident (told to no receiver in ``quiet``); ``told``: those with thresholds of their own
        that hear of it."""
        cause, found = opening(active)
        summary, severity = _summary(active), _severity(active)
        opened = self.writer.open(target, active[0].name, summary, severity, root_cause=cause, found=active, evidence=found, quiet=quiet)
        if opened is None:  # another writer opened it since we looked: this is an update of that one
            current = self.store.incidents.open_incidents(target)
            return self._update(current[-1], active) if current else []
        self.paging.keep(target, told)
        self._link_restarted_flap(target, opened.incident.id)
        return [opened]

    def _paged(self, incident: Incident, active: list[Pattern], before: frozenset[str], told: frozenset[str]) -> list[Event]:
        """An open incident's "opened" and "resolved" for receivers with thresholds of their own that reached them."""
        summary = _summary(active) if active else incident.summary or ""
        paged = [
            self.writer.page(incident, kind, names, summary=summary)
            for kind, names in (("opened", told - before), ("resolved", before - told))
            if names
        ]
        return [event for event in paged if event is not None]

    def _link_restarted_flap(self, target: str, incident_id: int) -> None:
        """A target failing again within ``flap_window`` of its last recovery: the new incident names the last."""
        last = self.store.incidents.last_resolved_incident(target)
        if last is None or last.closed_at is None:
            return
        since = self.clock() - last.closed_at
        if since <= self.thresholds(target).flap_window:
            self.writer.annotate(incident_id, f"flap restarted: follows #{last.id}, which recovered {since:.0f} s earlier")

    def _released(self, incident: Incident, failing: bool) -> list[Event]:
        """A silenced incident whose target still fails: maintenance may have held it, and its window be over."""
        released = self.writer.release(incident) if failing and incident.silenced else None
        return [released] if released is not None else []

    def _update(self, incident: Incident, active: list[Pattern], quiet: frozenset[str] = frozenset()) -> list[Event]:
        """Counts in the summary change every check: only a new leading pattern or severity is an event (told to
        no receiver in ``quiet``: those with thresholds of their own not told of the incident now)."""
        if not active:
            return []
        summary, head = _summary(active), active[0].name
        severity = _worse(incident.severity, _severity(active))  # escalates, never softens while open
        if (incident.summary, incident.severity, incident.pattern) == (summary, severity, head):
            return []
        updated = self.writer.update(incident, summary=summary, severity=severity, pattern=head, found=active, quiet=quiet)
        return [updated] if updated is not None else []


def _summary(found: list[Pattern]) -> str:
    return "; ".join(p.summary for p in found)


def _severity(found: list[Pattern]) -> str:
    return "critical" if any(p.severity == "critical" for p in found) else "warning"


def _worse(a: str | None, b: str) -> str:
    return "critical" if "critical" in (a, b) else b
