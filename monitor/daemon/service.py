"""``monitor run``: the daemon. It reads as the whole story::

    open the store → one incident writer, one recorder of results (the cycle) → the agent's worker,
    the embedder of incident memories (:mod:`monitor.daemon.indexer`)
    → start: the check loop, housekeeping, alert senders, /metrics + /healthz, the web UI
    → wait for a signal: SIGHUP reloads the config, SIGTERM or SIGINT stops it cleanly

The :class:`~monitor.checks.schedule.CheckLoop` checks every target: one event loop, shared connection pools, each
target on a stable phase of its interval, oldest due first when it falls behind (its lag and the checks it skipped
are exported), results recorded in batches of one transaction each. APScheduler runs housekeeping. Investigations
run on their own worker thread (:mod:`monitor.daemon.agent`) so checks never wait for a model, alert delivery on
others. SIGHUP reloads the config file: it is read and validated whole before anything changes, then swapped in
whole (:class:`~monitor.config.ConfigHolder`) and applied by each part that subscribed; a bad one is logged and
ignored, and what needs a restart (database, metrics address, the web UI's listener) is logged. SIGTERM or SIGINT
stops it within seconds: in-flight writes finish, the working memory is saved and the database closed.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from prometheus_client import REGISTRY, CollectorRegistry

from monitor import wiring
from monitor.checks.engine import Checker
from monitor.checks.heartbeat import Heartbeats
from monitor.checks.schedule import CheckLoop, Schedule, Taken
from monitor.config import Config, ConfigHolder, Target
from monitor.core.batches import Batch
from monitor.core.memory import MemoryStats, WorkingStats
from monitor.core.results import Result
from monitor.daemon.agent import AgentWorker
from monitor.daemon.cycle import daemon_cycle
from monitor.daemon.housekeeping import follow_up, housekeeping
from monitor.daemon.indexer import Indexer, Loader
from monitor.daemon.listeners import listen
from monitor.daemon.members import Ownership
from monitor.daemon.reloads import read_config
from monitor.daemon.restarts import restart_needed
from monitor.daemon.signals import Signals
from monitor.daemon.workers import Workers
from monitor.incidents.verdicts import Settings
from monitor.listener import MetricsServer
from monitor.memory import graph
from monitor.memory.recall import shared_embedder
from monitor.metrics import Metrics
from monitor.store import Store
from monitor.store.engines import describe

if TYPE_CHECKING:  # each imported once it is made: APScheduler at start, smolagents with an agent, the web with web.enabled
    from apscheduler.schedulers.background import BackgroundScheduler
    from smolagents.models import Model

    from monitor.agent.investigator import Investigator
    from monitor.web.server import WebServer

log = logging.getLogger("monitor.daemon")

STOP_GRACE = 8.0
MAINTENANCE_EVERY = 10  # seconds between looks for maintenance windows that started or ended (logged)
FOLLOW_UP_EVERY = 5  # seconds between looks for reminders and escalations due: each comes within that of its time


class Daemon:
    """``monitor run``: see the module docstring."""

    fatal: str | None = None  # why the daemon stopped by itself (monitor run then exits 3)
    workers: Workers | None = None  # workers: N > 1: the checking processes (the daemon records their results)
    checks: CheckLoop | None = None  # once started: the loop that checks this replica's share (or hands it out)
    scheduler: BackgroundScheduler | None = None  # once started: APScheduler's, for housekeeping
    server: MetricsServer | None = None  # /metrics and /healthz, when served
    web: WebServer | None = None  # the web UI, when web.enabled
    status: WebServer | None = None  # the status pages' own, when web.status_listen is set

    def __init__(
        self,
        config: Config,
        *,
        store: Store | None = None,
        registry: CollectorRegistry = REGISTRY,
        model: Model | None = None,
        clock: Callable[[], float] = time.time,
        config_path: str | None = None,
        listen: str | None = None,
        embedders: Loader = shared_embedder,
    ) -> None:
        if listen:  # --metrics-listen: over the config's metrics address, now and at every reload
            config = config.model_copy(update={"metrics": config.metrics.listening_on(listen)})
        # the config in force; a reload swaps it whole and each part below applies it (see reload)
        self.holder, self._applied = ConfigHolder(config), config
        self.config_path, self.listen = config_path, listen
        self.store = store or wiring.store(config.database or "monitor.db", replica=config.replica_index or 0)
        self.metrics = Metrics(registry, target_histograms=config.metrics.target_histograms)
        self.metrics.observe_reload(True, clock())
        self.maintenance = wiring.maintenance_of(lambda: self.config.maintenance, clock=clock)
        self.alerts = wiring.alerts(config, self.store, clock=clock, metrics=self.metrics, maintenance=self.maintenance)
        self._model, self._clock = model, clock
        # which targets are this replica's: the static split, or (lease) its share of the live members
        self.ownership = Ownership(lambda: self.config, self.store, on_change=self._follow_share, metrics=self.metrics)
        self._owned, self._share_lock, self._reloading = set[str](), threading.Lock(), threading.Lock()
        # one writer of incident state and one way in for results, for the check loop, the agent and the web UI
        self.cycle = daemon_cycle(config, self.store, metrics=self.metrics, alerts=self.alerts, clock=clock, own=self.ownership.names)
        self.tracker, self.incidents = self.cycle.tracker, self.cycle.incidents
        self.incidents.interrupted_runs()  # runs a previous process left open: it crashed or was killed
        graph.sync_config(self.store, config)  # what targets are and depend on (depends_on), as configured
        self.stopping, self.signals = threading.Event(), Signals()
        self._agent_parts(config, embedders)
        self.heartbeats = Heartbeats(self.store, self.ping_targets(), clock=clock)
        self.schedule = Schedule()
        self._subscribe()

    def _agent_parts(self, config: Config, embedders: Loader) -> None:
        """The agent's worker and the embedder of incident memories (``memory.embedder``; none: not at all)."""
        self.agents = AgentWorker(self.cycle, self._new_investigator, self.stopping)
        self.indexer = Indexer(self.store, lambda: self.config, metrics=self.metrics, load=embedders)
        self.incidents.publisher.subscribe(self.indexer.wake)  # embedded in the background, after each change
        if config.agent.mode != "off":
            self.cycle.investigator = self._new_investigator()
        self.metrics.watch_memory(self.memory_stats)

    def _subscribe(self) -> None:
        """Each part applies a reloaded config itself; the daemon then applies the rest (``_apply``)."""
        for part in (self.tracker, self.alerts, self.cycle, self.indexer):
            self.holder.subscribe(part.apply_config)
        self.holder.subscribe(self._apply)

    @property
    def config(self) -> Config:
        """The config in force (``holder.current``): a new object after each reload, never changed in place."""
        return self.holder.current

    def _new_investigator(self) -> Investigator:
        """The agent, over the cycle's parts: one writer of incidents, one way in for results."""
        return wiring.investigator(self.config, self.store, self.cycle.parts, model=self._model, metrics=self.metrics, clock=self._clock)

    @property
    def investigator(self) -> Investigator | None:
        """The agent, or None when it is off."""
        return self.cycle.investigator

    def memory_stats(self) -> MemoryStats:
        investigator = self.investigator
        working = investigator.stats() if investigator is not None else WorkingStats()
        return MemoryStats(working, self.store.incidents.count_incidents(), self.store.size_bytes())

    def own_targets(self) -> list[Target]:
        """The targets this replica checks: all of them, or its share (``replicas``, ``replica_index``, ``lease``)."""
        return self.ownership.own(self.config)

    def ping_targets(self) -> list[Target]:
        """The heartbeat targets whose pings this replica takes (on the metrics listener): all of them when
        the database is shared, so that any replica behind a load balancer records a ping for the one that
        checks it; else its own only, and a ping for another replica's target gets a 404, never a silent
        success its owner would not see."""
        return self.config.targets if self.store.shared else self.own_targets()

    def deliver(self, results: list[Result] | Batch) -> None:
        """A batch of finished checks from the check loop, or a worker's judged one: the cycle. Never raises into
        the loop."""
        location = self.config.location
        try:
            if isinstance(results, Batch):
                self.cycle.after_batch(results if location is None else results.located(location))
            else:  # where they were checked from: stored with each
                self.cycle.after_checks(results if location is None else [replace(r, location=location) for r in results])
        except Exception:
            log.exception("check cycle failed for %d results", len(results))

    def _observe_start(self, taken: Taken) -> None:
        self.metrics.observe_schedule(taken.lag, taken.skipped, "backlog" if taken.held else "late")

    def run_once(self) -> list[Result]:
        """``monitor run --once``: one cycle over every target, investigations and deliveries included."""
        results = Checker(concurrency=self.config.concurrency, heartbeats=self.heartbeats).run(self.own_targets())
        self.cycle.after_checks(results)
        self.cycle.drain()
        if self.alerts.enabled:
            self.alerts.deliver_due()
        self.cycle.flush()
        self.close()
        return results

    def start(self, serve_metrics: bool = True) -> None:
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler

        self.scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(2)}, timezone="UTC")
        self.ownership.start()  # with a lease: announced, and the others have let this replica's share go
        if self.config.workers > 1:
            self.workers = Workers(
                self.config.workers,
                self.deliver,
                metrics=self.metrics,
                concurrency=lambda: self.config.concurrency,
                backlog=lambda: self.config.backlog,
                settings=self._judging,
                by_demand=self.config.workers_by_demand,
            ).start()
        self._follow_share()
        self.checks = self._check_loop()
        for job, every in ((self.housekeeping, 60), (self.follow_up, FOLLOW_UP_EVERY), (self.maintenance.announce, MAINTENANCE_EVERY)):
            self.scheduler.add_job(job, "interval", id=job.__name__, seconds=every, coalesce=True, max_instances=1)
        self.maintenance.announce()  # a window already in force is logged at startup
        self.agents.start()
        self.alerts.start()
        self.indexer.start()
        self.metrics.observe_max_age(self._max_age())
        if serve_metrics:  # /metrics and /healthz, the web UI, the status pages: those the config turns on
            self.server, self.web, self.status = listen(
                self.holder,
                self.store,
                self.metrics,
                max_age=self._max_age(),
                pings=self.heartbeats.record,
                writer=self.incidents,
                clock=self._clock,
                edits=(self.config_path, self.reload) if self.config_path else None,  # the admin pages and API
            )
        self.store.when_claim_lost(self.abort)
        self.scheduler.start()
        self.checks.start()
        self._log_started()

    def _log_started(self) -> None:
        replica = (
            f" (replica {self.config.replica_index} of {self.config.replicas}: {len(self._owned)} of {len(self.config.targets)})"
            if self.config.replicas > 1
            else ""
        )
        log.info(
            "monitoring %d targets%s%s; agent: %s",
            len(self._owned),
            replica,
            f" with {len(self.workers.slots)} workers" if self.workers else "",
            self.investigator.model_label if self.investigator else "off",
        )

    def _judging(self) -> Settings:
        """What the workers' judges read: the thresholds, the database their windows come from, the agent's mode."""
        every = self.config.agent.mode == "every_cycle" and self.investigator is not None
        return Settings(self.config.detectors, self.store.engine.location, every)

    def _check_loop(self) -> CheckLoop:
        """The loop that checks this replica's share, only as fast as its results are recorded (``backlog``)."""
        loop = CheckLoop(
            self.schedule,
            self.deliver,
            concurrency=lambda: self.config.concurrency,
            observe=self._observe_start,
            checker=lambda: Checker(heartbeats=self.heartbeats),
            backlog=lambda: self.config.backlog,
            may_check=self.ownership.may_check,
        )
        self.metrics.watch_backlog(lambda: len(loop.backlog) + (self.workers.backlog() if self.workers else 0))
        return loop

    def _max_age(self) -> float:
        """How old the last cycle may be before /healthz says stale: three of the longest intervals."""
        return 3 * max((t.interval for t in self.config.targets), default=60) + 30

    def reload(self) -> bool:
        """SIGHUP, or a change from the web UI: re-read the config file, one reload at a time (the last file read is
        the one in force). A bad file is logged and changes nothing. The whole file is read and validated before
        anything changes; then the new config is swapped in whole (:class:`~monitor.config.ConfigHolder`) and every
        part that subscribed applies it: the tracker, alerts, the cycle and, last, the daemon's own wiring
        (:meth:`_apply`); the web UI reads the holder at each request. Unchanged targets keep their schedule. The
        database, the metrics address and the web UI's listener need a restart, and say so."""
        with self._reloading:
            new = self._read_config()
            if new is None or self.stopping.is_set():  # SIGTERM came while it was read: nothing to apply it to
                self.metrics.observe_reload(False, self.cycle.clock())
                return False
            self._log_restart_needed(new)
            keep = {"database": self.config.database, "workers": self.config.workers, "metrics": self.config.metrics}
            applied = self.holder.swap(new.model_copy(update=keep))
            self.metrics.observe_reload(applied, self.cycle.clock())
            log.info("config reloaded: %d targets", len(self.config.targets))
            return True

    def _read_config(self) -> Config | None:
        """The config file, read and validated whole; None (and a log line) when it cannot be used."""
        return read_config(self.config_path, self.listen) if self.config_path is not None else None

    def _apply(self, config: Config) -> None:
        """The daemon's own part of a reload: heartbeats, the agent, the schedule, the fleet's graph, /healthz's patience."""
        old, self._applied = self._applied, config
        self.heartbeats.configure(self.ping_targets())
        self.agents.reconfigure(config, model_changed=config.model != old.model)
        self._reschedule(old.targets)
        self._sync_graph()
        self.incidents.close_unconfigured(self.cycle.target_names())
        self.metrics.observe_max_age(self._max_age())
        if self.server is not None:
            self.server.max_age = self._max_age()

    def _sync_graph(self) -> None:
        try:
            graph.sync_config(self.store, self.config)
        except self.store.errors as exc:  # the next reload or restart writes it
            log.warning("the fleet's graph keeps the last config's edges: %s", describe(exc))

    def _log_restart_needed(self, new: Config) -> None:
        for what in restart_needed(self.config, new, database=str(self.store.path)):
            log.warning("config reload: %s", what)

    def _reschedule(self, old: list[Target]) -> None:
        """Added targets are due now, removed ones go (with their series and window); the others keep
        their place unless their interval moved."""
        current = {t.name for t in self.config.targets}
        gone = [(t.name, t.kind) for t in old if t.name not in current]
        self.metrics.forget_targets(gone)
        for name, _ in gone:
            self.tracker.forget(name)
        self._follow_share()

    def _follow_share(self) -> None:
        """Check this replica's targets as they are now (a reload, or the live members changed). A target that
        moves in or out has its detectors' window read again from the database, where the other replica left it,
        and one that moves out takes its series with it (the replica that checks it now exports them)."""
        with self._share_lock:
            own = self.own_targets()
            names = {t.name for t in own}
            for name in self._owned ^ names:
                self.tracker.forget(name)
            kinds = {t.name: t.kind for t in self.config.targets}  # one that left the config went in _reschedule
            self.metrics.forget_targets((name, kinds[name]) for name in self._owned - names if name in kinds)
            self._owned = names
            self.schedule.set_targets(own if self.workers is None else self.workers.assign(own))
            self.metrics.observe_shard(self.config.replica_index or 0, self.config.replicas, len(own))
            self.metrics.observe_members(len(self.ownership.members))
        if self.checks is not None:
            self.checks.wake()

    def housekeeping(self) -> None:
        """Retention and the other chores of :func:`monitor.daemon.housekeeping.housekeeping`."""
        housekeeping(self.cycle, self.config, alerts=self.alerts, indexer=self.indexer, memory_stats=self.memory_stats)

    def follow_up(self) -> None:
        """The reminders and escalations due of this replica's open incidents (none while the database is out)."""
        follow_up(self.cycle, self.alerts)

    def abort(self, reason: str) -> None:
        """Stop, from any thread, as SIGTERM would; ``monitor run`` then exits with ``reason`` (3)."""
        self.fatal = reason
        self.signals.wake()

    def stop(self) -> None:
        """Stop within seconds: no new jobs, in-flight writes finish, memory saved, database closed."""
        self.stopping.set()
        if self.investigator is not None:
            self.investigator.interrupt()
        if self.scheduler is not None:
            self.scheduler.shutdown(wait=False)
        deadline = time.monotonic() + STOP_GRACE
        if self.checks is not None:
            self.checks.stop(STOP_GRACE)  # checks in flight end, then every finished result is stored
        if self.workers is not None:
            self.workers.stop(max(0.1, deadline - time.monotonic()))
        self.agents.join(max(0.1, deadline - time.monotonic()))
        self.indexer.stop(max(0.1, deadline - time.monotonic()))
        self.alerts.stop()
        if self.server is not None:
            self.server.stop()
        for server in (self.web, self.status):
            if server is not None:
                server.stop()
        self.close()

    def close(self) -> None:
        self.ownership.stop()  # with a lease: ended now, so the others take this replica's share at once
        if self.investigator is not None:
            self.investigator.save()
        if self.cycle.unsaved():
            log.error("%d check results were not stored: the database refused them to the end", self.cycle.unsaved())
        self.store.close()

    def run_forever(self) -> None:
        """Start, reload on SIGHUP, stop cleanly on SIGTERM or SIGINT (:mod:`monitor.daemon.signals`)."""

        def stop() -> None:
            log.info("stopping")
            self.stop()
            log.info("stopped")

        self.signals.run(self.start, stop, self.reload, lambda: self.fatal is not None)
