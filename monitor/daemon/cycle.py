"""The cycle: what happens after checks, with or without a scheduler::

    results → recorder (store → metrics → detectors → incidents, published by the writer)
            → the agent, when a detector fires (agent.mode: on_anomaly) or
              every time (every_cycle), within agent.max_runs_per_hour

Healthy checks never reach the model. When the agent fails or is over budget, detection and alerting
have already happened, and the incident says why the agent did not help.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from monitor import wiring
from monitor.alerts.delivery import Alerts
from monitor.config import Config
from monitor.core.batches import Batch
from monitor.core.incidents import Event, Incident, Pattern
from monitor.core.results import Result
from monitor.daemon.members import Ownership
from monitor.incidents.recorder import Observed
from monitor.incidents.writer import Writer
from monitor.memory import graph
from monitor.metrics import Metrics
from monitor.store import Store

if TYPE_CHECKING:  # smolagents: imported once there is an agent
    from smolagents.memory import ActionStep

    from monitor.agent.diagnosis import Outcome
    from monitor.agent.investigator import Investigator

log = logging.getLogger("monitor.daemon")

OVER_BUDGET = "over_budget"


def daemon_cycle(
    config: Config,
    store: Store,
    *,
    metrics: Metrics | None = None,
    alerts: Alerts | None = None,
    investigator: Investigator | None = None,
    clock: Callable[[], float] = time.time,
    own: Callable[[Config], set[str]] | None = None,
) -> Cycle:
    """A daemon's cycle, over the parts the composition root makes for it (:func:`monitor.wiring.incidents`): one
    incident writer, whose changes ``alerts`` deliver and ``metrics`` count, and the recorder that asks the targets in
    force (this replica's, ``own``; default: its static share) which series to keep and how long a result is fresh."""
    fleet = wiring.Fleet(config, own=own or Ownership(lambda: config).names)
    parts = wiring.incidents(
        config, store, alerts=alerts, metrics=metrics, clock=clock, windows=lambda: fleet.config.maintenance, fleet=fleet
    )
    return Cycle(config, store, parts, fleet=fleet, metrics=metrics, investigator=investigator, clock=clock)


class Cycle:
    """After-check logic shared by the daemon, ``--once``, ``investigate`` and the demo."""

    def __init__(
        self,
        config: Config,
        store: Store,
        parts: wiring.Incidents,
        *,
        fleet: wiring.Fleet,
        metrics: Metrics | None = None,
        investigator: Investigator | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``parts``: the one writer of incident state and the one way in for results, shared with the investigator
        (both made by :mod:`monitor.wiring`); ``fleet``: the targets in force, as ``parts``' recorder reads them."""
        self.config, self.store, self.metrics, self.fleet = config, store, metrics, fleet
        self.investigator, self.clock = investigator, clock
        self.parts, self.tracker, self.recorder = parts, parts.tracker, parts.recorder
        self.agent_lock = threading.Lock()
        self.queue: queue.Queue[tuple[Result, list[Pattern]]] | None = None
        self._queued: set[str] = set()
        if metrics is not None:
            metrics.watch_incidents(self.open_incidents_by_target)

    def apply_config(self, config: Config) -> None:
        """After a config reload: the targets, maintenance windows and agent settings it judges by."""
        self.config = config
        self.fleet.apply_config(config)

    @property
    def incidents(self) -> Writer:
        """The one writer of incident state."""
        return self.tracker.writer

    def open_incidents_by_target(self) -> dict[str, int]:
        """Open incidents of each target this replica checks (0 for none), read at scrape time, not per check;
        another replica exports its own, so that a sum over replicas counts each incident once."""
        names = self.own_names()
        counts = dict.fromkeys(sorted(names), 0)
        for incident in self.store.incidents.open_incidents():
            if incident.target in names:
                counts[incident.target] += 1
        return counts

    def target_names(self) -> set[str]:
        """The configured names."""
        return self.fleet.names()

    def own_names(self) -> set[str]:
        """The configured names this replica checks: all of them, or its share when there are replicas."""
        return self.fleet.own_names()

    def after_checks(self, results: list[Result]) -> list[Event]:
        """Record, detect, alert and maybe investigate; returns the incident events."""
        return self._after(self.recorder.record(results, then=self.learn))

    def _after(self, observed: list[Observed] | None) -> list[Event]:
        """What the recorder saw change: the events, and the agent asked where they call for it."""
        if observed is None:
            return []
        events: list[Event] = []
        for result, found, changed in observed:
            events.extend(changed)
            if self.wants_agent(changed):
                self.request(result, found)
        if self.metrics is not None:
            self.metrics.observe_cycle(self.clock())
        return events

    def after_batch(self, batch: Batch) -> list[Event]:
        """A worker's judged batch: recorded, and then as :meth:`after_checks`."""
        return self._after(self.recorder.record_batch(batch, then=self.learn))

    def learn(self, result: Result, events: list[Event]) -> None:
        """What an incident that just opened teaches the fleet's graph (the components its answer names, the
        incidents it opened with): once per incident, never per check. A failure to learn fails nothing else."""
        for event in events:
            if event.kind != "opened":
                continue
            try:
                graph.learn_opened(
                    self.store, event.incident, " ".join(part for part in (result.error, result.detail, result.excerpt) if part)
                )
            except Exception:
                log.exception("the fleet's graph learned nothing from incident #%s", event.incident.id)

    def unsaved(self) -> int:
        """Results a locked database kept back, waiting for the next cycle."""
        return self.recorder.unsaved()

    def flush(self) -> None:
        """Store the results a locked database kept back; raises if it still cannot."""
        self.recorder.flush()

    def wants_agent(self, events: list[Event]) -> bool:
        mode = self.config.agent.mode
        if self.investigator is None or mode == "off":
            return False
        return mode == "every_cycle" or any(e.kind in ("opened", "updated") for e in events)

    def request(self, result: Result, found: list[Pattern]) -> None:
        """Investigate now, or hand it to the agent worker (one queued investigation per target)."""
        if self.queue is None:
            self.investigate(result, found)
        elif result.name not in self._queued:
            self._queued.add(result.name)
            self.queue.put((result, found))

    def over_budget(self) -> bool:
        return self.store.runs.runs_since(self.clock() - 3600) >= self.config.agent.max_runs_per_hour

    def investigate(
        self, result: Result, found: list[Pattern], *, incident_id: int | None = None, on_step: Callable[[ActionStep], None] | None = None
    ) -> Outcome | None:
        """Run the agent on a target's current incident, within the budget; None when over it."""
        if not self.over_budget():
            return self.investigate_now(result, found, incident_id=incident_id, on_step=on_step)
        self._queued.discard(result.name)
        self._refuse_over_budget(self._incident(result, incident_id)[1])
        return None

    def investigate_now(
        self, result: Result, found: list[Pattern], *, incident_id: int | None = None, on_step: Callable[[ActionStep], None] | None = None
    ) -> Outcome:
        """Run the agent on a target's current incident (``incident_id``; default: its newest open one), budget or not."""
        self._queued.discard(result.name)
        incident_id, incident = self._incident(result, incident_id)
        from monitor.agent.tools import format_result  # smolagents: only once there is an agent

        if self.investigator is None:
            raise RuntimeError("this cycle has no investigator (no agent): nothing can investigate")
        with self.agent_lock:
            return self.investigator.investigate(
                result.name,
                incident=incident_id,
                pattern=incident.pattern if incident else (found[0].name if found else "check"),
                summary=(incident.summary or "") if incident else "; ".join(p.summary for p in found),
                latest=format_result(result),
                on_step=on_step,
            )

    def _incident(self, result: Result, incident_id: int | None) -> tuple[int | None, Incident | None]:
        """The incident to investigate (``incident_id``; default: the target's newest open one), and its row."""
        if incident_id is None:
            current = self.store.incidents.open_incidents(result.name)
            incident_id = current[-1].id if current else None
        return incident_id, self.store.incidents.incident(incident_id) if incident_id is not None else None

    def _refuse_over_budget(self, incident: Incident | None) -> None:
        limit = self.config.agent.max_runs_per_hour
        if incident is not None and incident.agent_state != OVER_BUDGET:
            self.incidents.annotate(
                incident.id, f"agent not run: over budget ({limit} runs per hour); the detection stands", agent_state=OVER_BUDGET
            )
        if self.metrics is not None:
            self.metrics.observe_run(OVER_BUDGET)

    def drain(self) -> None:
        """Run every queued investigation now (for --once and tests)."""
        while self.queue is not None and not self.queue.empty():
            result, found = self.queue.get_nowait()
            self.investigate(result, found)


def investigate_results(
    config: Config, store: Store, results: list[Result], *, always: bool = False, on_step: Callable[[ActionStep], None] | None = None
) -> Iterator[tuple[Outcome, str]]:
    """For ``monitor investigate``: record the results, then the agent on each failing one (each, with
    ``always``)."""
    parts = wiring.incidents(config, store, clock=time.time)
    cycle: Cycle | None = None
    for result, found, _ in parts.recorder.record(results) or []:
        if result.ok and not always:
            continue
        if cycle is None:  # the agent (smolagents, the model) only once there is something to investigate
            investigator = wiring.investigator(config, store, parts)
            cycle = Cycle(config, store, parts, fleet=wiring.Fleet(config), investigator=investigator)
            graph.sync_config(store, config)
        incident_id = _incident_of(parts.writer, store, result, found)
        yield cycle.investigate_now(result, found, incident_id=incident_id, on_step=on_step), result.name


def _incident_of(writer: Writer, store: Store, result: Result, found: list[Pattern]) -> int | None:
    """The target's open incident; for a failing check with none (the detectors want more), one opened now."""
    current = store.incidents.open_incidents(result.name)
    if current or result.ok:
        return current[-1].id if current else None
    opened = writer.open(result.name, found[0].name if found else "check_failed", f"{result.error}: {result.detail}", result.severity)
    return (opened.incident if opened is not None else store.incidents.open_incidents(result.name)[-1]).id
