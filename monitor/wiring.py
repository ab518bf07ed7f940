"""The composition root: where each process's parts are made and handed to each other, and nowhere else.

The daemon, ``monitor check``, ``monitor investigate``, ``monitor web``, the MCP server, the CLI's incident
commands, the eval, the demo and the checking workers all get their parts here; constructors take what they need
and build no collaborator of their own. One process has one of each, and everyone holds the same ones::

    store(location, ...)            the database, opened for every entry point (and for a worker's judge, which
                                    reads its targets' windows from it)
    maintenance_of(windows)         which targets are in a maintenance window, the one who asks the windows
    writer(config, store)           the one incident writer: each change queues what the alerts make of it (the
                                    daemon's alerts, else the config's receivers, queued for the daemon to deliver)
    incidents(config, store, ...)   :class:`Incidents`: that writer, the tracker that decides through it (the
                                    detectors, with the targets' own thresholds), the recorder that feeds it
    alerts(config, store, ...)      the daemon's alerts, which deliver
    investigator(config, store, incidents=...)   the agent, its tools writing through the same writer and recorder
    toolbox(config, store, incidents=...)        the agent's tools alone
    web_actions(config, store)      what the web UI may change: incidents through the writer, and its audit of them
    config_log(store)               the log of config changes, the web's editor's one write
    worker(conn, number, level)     a checking worker (``workers: N``), its results judged where they are made

The agent (smolagents, the model) and the alerts' receivers (httpx) are imported only when they are made: a
one-shot ``monitor check`` that changes nothing loads neither.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # each part is imported where it is made: a checking worker, forked from a server that imported
    # this module, loads only what it runs (no metrics, no alerts), and ``monitor check`` starts as fast
    from smolagents.models import Model

    from monitor.agent.investigator import Investigator
    from monitor.agent.tools.base import Toolbox
    from monitor.alerts.delivery import Alerts
    from monitor.config import Config, Target
    from monitor.config import Maintenance as Window
    from monitor.core.incidents import Event, Incident
    from monitor.incidents.events import Publisher
    from monitor.incidents.maintenance import Maintenance
    from monitor.incidents.recorder import Recorder
    from monitor.incidents.tracker import Tracker
    from monitor.incidents.writer import Messages, Writer
    from monitor.memory.embedding import Embedder
    from monitor.metrics import Metrics
    from monitor.store import Notification, Store
    from monitor.store.writers import ConfigLog, WebAudit

__all__ = [
    "Actions",
    "Fleet",
    "Incidents",
    "alerts",
    "config_log",
    "incidents",
    "investigator",
    "maintenance_of",
    "store",
    "toolbox",
    "web_actions",
    "worker",
    "writer",
]


@dataclass(frozen=True)
class Incidents:
    """One process's incident state: its one writer, the tracker that decides through it, and the recorder, the one
    way in for results, that hands the tracker each one."""

    writer: Writer
    tracker: Tracker
    recorder: Recorder


@dataclass(frozen=True)
class Actions:
    """What the web UI may change, and nothing else: an incident, through the incident writer (``writer()``: the
    daemon's, or one made for the action that queues its notifications for the daemon), and the audit of who asked
    what (``audit``)."""

    writer: Callable[[], Writer]
    audit: WebAudit


class Fleet:
    """The targets in force as the daemon's recorder asks of them, each computed again only when a reload brought a
    new list of targets: the configured names, this replica's (``own``; default: all), a quorum target by name, and
    how long a result stays fresh."""

    def __init__(self, config: Config, *, own: Callable[[Config], set[str]] | None = None) -> None:
        self.config, self._own = config, own
        self._names: tuple[list[Target], set[str]] = ([], set())
        self._quorums: tuple[list[Target], dict[str, Target]] = ([], {})
        self._intervals: tuple[list[Target], dict[str, float], float] = ([], {}, 60.0)

    def apply_config(self, config: Config) -> None:
        self.config = config

    def names(self) -> set[str]:
        """The configured names."""
        targets = self.config.targets
        if self._names[0] is not targets:
            self._names = (targets, {t.name for t in targets})
        return self._names[1]

    def own_names(self) -> set[str]:
        """The configured names this replica checks: all of them, or its share when there are replicas."""
        return self._own(self.config) if self._own is not None else self.names()

    def quorum_target(self, name: str) -> Target | None:
        """The target ``name`` if it is checked from several locations (``quorum``), else None."""
        targets = self.config.targets
        if self._quorums[0] is not targets:
            self._quorums = (targets, {t.name: t for t in targets if t.quorum is not None})
        return self._quorums[1].get(name)

    def fresh_for(self, name: str) -> float:
        """Seconds after its check a result of ``name`` is still judged by: ``backlog.stale_after`` intervals."""
        targets = self.config.targets
        if self._intervals[0] is not targets:  # the longest: for a target a reload removed
            self._intervals = (targets, {t.name: t.interval for t in targets}, max((t.interval for t in targets), default=60.0))
        _, intervals, longest = self._intervals
        return self.config.backlog.stale_after * intervals.get(name, longest)


def store(location: str | Path, *, replica: int = 0, create: bool = True, clock: Callable[[], float] = time.time) -> Store:
    """The store at ``location`` (a SQLite file, ``:memory:`` or a ``postgresql://`` URL) writing for daemon replica
    ``replica``; a reader's (``create=False``) makes nothing there and raises LookupError where there are no monitor
    tables."""
    from monitor.store import Store

    return Store(location, replica=replica, create=create, clock=clock)


def maintenance_of(windows: Callable[[], Sequence[Window]], *, clock: Callable[[], float] = time.time) -> Maintenance:
    """Which targets are in a maintenance window, asking ``windows()`` each time (a reload applies at once)."""
    from monitor.incidents.maintenance import Maintenance

    return Maintenance(windows, clock=clock)


def writer(
    config: Config,
    store: Store,
    *,
    alerts: Alerts | None = None,
    publisher: Publisher | None = None,
    windows: Callable[[], Sequence[Window]] | None = None,
    clock: Callable[[], float] | None = None,
) -> Writer:
    """The incident writer: each change queues what ``alerts`` make of it (default: alerts of ``config``'s
    receivers that only queue, for the daemon to deliver); ``windows``: the maintenance windows in force
    (default: ``config``'s)."""
    from monitor.incidents.events import Publisher
    from monitor.incidents.writer import Writer
    from monitor.store.writes import IncidentWrites

    clock = clock or store.clock
    maintenance = maintenance_of(windows or (lambda: config.maintenance), clock=clock)
    messages = alerts.messages if alerts is not None else _queued_for_daemon(config, store, maintenance, clock)
    writes = IncidentWrites(store)  # the incident-writing part: made here, for this writer, and nowhere else
    return Writer(
        writes, store.read_only(), memory=store.memory, publisher=publisher or Publisher(), messages=messages, maintenance=maintenance
    )


def _queued_for_daemon(config: Config, store: Store, maintenance: Maintenance, clock: Callable[[], float]) -> Messages:
    """The messages of ``config``'s receivers, for a process that queues them and leaves delivery to the daemon;
    its alerts are made at the first change (a one-shot ``monitor check`` that changes nothing loads none of them)."""
    made: list[Alerts] = []

    def messages(event: Event, row: Incident | None) -> Sequence[Notification]:
        if not made:
            made.append(alerts(config, store, clock=clock, maintenance=maintenance))
        return made[0].messages(event, row)

    return messages


def incidents(
    config: Config,
    store: Store,
    *,
    alerts: Alerts | None = None,
    metrics: Metrics | None = None,
    clock: Callable[[], float] | None = None,
    windows: Callable[[], Sequence[Window]] | None = None,
    fleet: Fleet | None = None,
) -> Incidents:
    """The writer, tracker and recorder of a process. Each change is heard by ``metrics`` (incidents opened) and
    ``alerts`` (delivered by a daemon's; without alerts, queued for the daemon); ``clock``: the detectors' (default:
    real time; the writer's, the store's); ``fleet``: the daemon's targets in force, which the recorder asks which
    series to keep, which targets are quorums and how long a result is fresh (none: every series, no quorum, always
    fresh)."""
    from monitor.incidents.events import Publisher
    from monitor.incidents.recorder import Recorder
    from monitor.incidents.tracker import Tracker

    made = writer(config, store, alerts=alerts, publisher=_heard_by(Publisher(), metrics, alerts), windows=windows, clock=clock)
    tracker = Tracker(store, config.detectors, clock=clock or time.time, writer=made)
    tracker.apply_config(config)
    if fleet is None:
        return Incidents(made, tracker, Recorder(store, tracker, metrics=metrics))
    recorder = Recorder(store, tracker, metrics=metrics, configured=fleet.own_names, quorums=fleet.quorum_target, fresh_for=fleet.fresh_for)
    return Incidents(made, tracker, recorder)


def _heard_by(publisher: Publisher, metrics: Metrics | None, alerts: Alerts | None) -> Publisher:
    """Where incident events go besides the log: the metrics (incidents opened), the alerts (woken to deliver)."""
    if metrics is not None:

        def count(event: Event) -> None:
            if event.kind == "opened":
                metrics.observe_incident(event.incident.target, event.incident.pattern)

        publisher.subscribe(count)
    if alerts is not None:
        publisher.subscribe(alerts.notify)
    return publisher


def alerts(
    config: Config,
    store: Store,
    *,
    metrics: Metrics | None = None,
    clock: Callable[[], float] = time.time,
    maintenance: Maintenance | None = None,
) -> Alerts:
    """The alerts of ``config``'s receivers and rules (a daemon's deliver them; elsewhere they only queue), holding
    back what ``maintenance`` says (default: ``config``'s windows)."""
    from monitor.alerts.delivery import Alerts
    from monitor.alerts.routes import Routes

    held = maintenance or maintenance_of(lambda: config.maintenance, clock=clock)
    return Alerts(config.alerts, store, clock=clock, metrics=metrics, routes=Routes(config), maintenance=held)


def toolbox(config: Config, store: Store, parts: Incidents | None = None, **options: Any) -> Toolbox:
    """The agent's tools, writing through ``parts`` (default: a process's own, queued for the daemon);
    ``options``: the :class:`~monitor.agent.tools.base.Toolbox`'s own (``embedder``, ``recall_sources``, ...)."""
    from monitor.agent.tools.base import Toolbox

    parts = parts or incidents(config, store)
    return Toolbox(config, store, incidents=parts.writer, results=parts.recorder, **options)


def investigator(
    config: Config,
    store: Store,
    parts: Incidents | None = None,
    *,
    model: Model | None = None,
    metrics: Metrics | None = None,
    clock: Callable[[], float] = time.time,
    embedder: Embedder | None | str = "configured",
) -> Investigator:
    """The agent, its tools writing through ``parts`` (the daemon's; default: its own, each change queued for the
    daemon to deliver, as ``monitor investigate`` and the eval want); ``embedder``: ``"configured"`` is the one
    ``memory.embedder`` names, loaded on first use."""
    from monitor.agent.investigator import Investigator

    parts = parts or incidents(config, store, metrics=metrics, clock=clock)
    box = toolbox(config, store, parts, embedder=embedder)
    return Investigator(config, store, parts.tracker, box, model=model, metrics=metrics, clock=clock)


def web_actions(config: Callable[[], Config], store: Store, *, own: Writer | None = None) -> Actions:
    """What the web UI may change: incidents through ``own`` (the daemon's writer; default: one made for each action
    with the config in force, ``config()``, that queues its notifications for the daemon, as ``monitor web`` wants),
    and the audit of who asked what. The web holds nothing else that writes: it reads through read-only parts."""
    from monitor.store.writers import WebAudit

    def made() -> Writer:
        return own if own is not None else writer(config(), store)

    return Actions(writer=made, audit=WebAudit(store.incidents))


def config_log(store: Store) -> ConfigLog:
    """The log of config changes made from the web UI and the admin API: the web's editor's one write."""
    from monitor.store.writers import ConfigLog

    return ConfigLog(store.changes)


def worker(conn: Connection, number: int, level: str) -> None:
    """A checking worker (what a forked worker runs): its batches come judged by its own
    :class:`~monitor.incidents.verdicts.Judge`, which reads its targets' windows from the daemon's database."""
    from monitor.checks import worker as checking
    from monitor.incidents.verdicts import Judge

    checking.serve(conn, number, level, judge=Judge(opens=lambda database: store(database, create=False)))
