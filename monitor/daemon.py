"""The daemon: APScheduler wiring, signals, and the cycle check → store → detect → agent → alert.

``Cycle`` is what happens after checks, with or without a scheduler::

    results → store → detectors → incidents (open / update / resolve)
            → alerts (unless in a maintenance window)
            → the agent, when a detector fires (agent.mode: on_anomaly) or
              every time (every_cycle), within agent.max_runs_per_hour

Healthy checks never reach the model. When the agent fails or is over budget,
detection and alerting have already happened, and the incident says why the
agent did not help.

``Daemon`` checks every target through one :class:`~monitor.checks.schedule.CheckLoop`:
one event loop, shared connection pools, each target on a stable phase of its
interval, oldest due first when it falls behind (its lag and the checks it
skipped are exported), results stored in batches of one transaction each.
APScheduler runs housekeeping. Investigations run on their own worker thread so
checks never wait for a model, alert delivery on another, and /metrics + /healthz. SIGHUP reloads the config file: it is read and validated
whole before anything changes, then swapped in at once; a bad one is logged and
ignored, and what needs a restart (database, metrics address) is logged. SIGTERM or SIGINT stops it within seconds: in-flight writes finish,
the working memory is saved and the database closed.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry

from monitor.alerts.delivery import Alerts
from monitor.checks.engine import Checker, Result
from monitor.checks.heartbeat import Heartbeats
from monitor.checks.schedule import CheckLoop, Schedule, Taken, shard
from monitor.config import Config, Target
from monitor.incidents.patterns import Pattern
from monitor.incidents.tracker import Event, Tracker
from monitor.memory import forgetting, graph
from monitor.metrics import Metrics, MetricsServer
from monitor.store import Store
from monitor.store.engines import describe, shown

log = logging.getLogger("monitor.daemon")

OVER_BUDGET = "over_budget"
MAX_UNSAVED = 100_000  # results held in memory while the database stays locked
REFUSED_EVERY = 60.0  # seconds between log lines while the database goes on refusing results
STOP_GRACE = 8.0


class Cycle:
    """After-check logic shared by the daemon, ``--once``, ``investigate`` and the demo."""

    def __init__(self, config: Config, store: Store, *, metrics: Metrics | None = None,
                 alerts: Alerts | None = None, investigator: Any = None,
                 clock: Callable[[], float] = time.time, tracker: Tracker | None = None) -> None:
        self.config, self.store, self.metrics, self.alerts = config, store, metrics, alerts
        self.investigator, self.clock = investigator, clock
        # the one writer of incident state: share it with the investigator (see Daemon)
        self.tracker = tracker or Tracker(store, config.detectors, clock=clock, silenced=config.in_maintenance,
                                          messages=alerts.messages if alerts is not None else None)
        self.agent_lock = threading.Lock()
        self.queue: queue.Queue[tuple[Result, list[Pattern]]] | None = None
        self._queued: set[str] = set()
        self._names: tuple[list[Target], set[str]] = ([], set())
        self._own: tuple[list[Target], set[str]] = ([], set())
        self._unsaved: list[Result] = []
        self._unsaved_lock = threading.Lock()
        self._refused_said = 0.0  # when the log last said the database refused results (0: it takes them)
        if metrics is not None:
            metrics.watch_incidents(self.open_incidents_by_target)

    def open_incidents_by_target(self) -> dict[str, int]:
        """Open incidents of each target this replica checks (0 for none), read at scrape time, not per check;
        another replica exports its own, so that a sum over replicas counts each incident once."""
        names = self.own_names()
        counts = dict.fromkeys(sorted(names), 0)
        for incident in self.store.open_incidents():
            if incident["target"] in names:
                counts[incident["target"]] += 1
        return counts

    def target_names(self) -> set[str]:
        """The configured names, computed again only when a reload brought a new list of targets."""
        targets = self.config.targets
        if self._names[0] is not targets:
            self._names = (targets, {t.name for t in targets})
        return self._names[1]

    def own_names(self) -> set[str]:
        """The configured names this replica checks: all of them, or its share when there are replicas."""
        targets = self.config.targets
        if self._own[0] is not targets:
            mine = shard(targets, self.config.replicas, self.config.replica_index or 0)
            self._own = (targets, {t.name for t in mine})
        return self._own[1]

    def after_checks(self, results: list[Result]) -> list[Event]:
        """Store, detect, alert and maybe investigate; returns the incident events."""
        saved = self.save(results)
        if self.metrics is not None:  # a check that was in flight when a reload removed its target: no series
            self.metrics.observe_results(r for r in results if r.name in self.target_names())
        if saved is None:
            return []
        events: list[Event] = []
        for result in saved:
            found, changed = self.tracker.observe(result.name, result)
            self.learn(result, changed)
            self.publish(changed)
            events.extend(changed)
            if self.wants_agent(changed):
                self.request(result, found)
        if self.metrics is not None:
            self.metrics.observe_cycle(self.clock())
        return events

    def learn(self, result: Result, events: list[Event]) -> None:
        """What an incident that just opened teaches the fleet's graph (the components its answer names, the
        incidents it opened with): once per incident, never per check. A failure to learn fails nothing else."""
        for event in events:
            if event.kind != "opened":
                continue
            try:
                graph.learn_opened(self.store, event.incident, " ".join(
                    part for part in (result.error, result.detail, result.excerpt) if part))
            except Exception:
                log.exception("the fleet's graph learned nothing from incident #%s", event.incident.get("id"))

    def save(self, results: list[Result]) -> list[Result] | None:
        """Store results, with any a locked database kept back earlier, in one transaction; returns what
        was stored, or None when the database refused (then they are kept for the next cycle)."""
        with self._unsaved_lock:
            batch, self._unsaved = self._unsaved + results, []
            try:
                self.store.add_results(batch)
            except self.store.errors as exc:
                if not self.store.engine.passing(exc):
                    raise
                self._unsaved = batch[-MAX_UNSAVED:]
                self._refused(describe(exc))
                return None
            if self._refused_said:
                log.info("the database took the %d results kept while it refused them", len(batch))
                self._refused_said = 0.0
                if self.metrics is not None:
                    self.metrics.observe_unsaved(0, None)
        return batch

    def _refused(self, reason: str) -> None:
        """Say that results are kept: at once, then once a minute (not once a check) while it lasts."""
        if self.metrics is not None:
            self.metrics.observe_unsaved(len(self._unsaved), reason)
        now = time.monotonic()
        if now - self._refused_said >= REFUSED_EVERY:
            log.warning("%d results kept in memory until the database takes them: %s", len(self._unsaved), reason)
            self._refused_said = now

    def unsaved(self) -> int:
        """Results a locked database kept back, waiting for the next cycle."""
        with self._unsaved_lock:
            return len(self._unsaved)

    def flush(self) -> None:
        """Store the results a locked database kept back; raises if it still cannot."""
        with self._unsaved_lock:
            if self._unsaved:
                self.store.add_results(self._unsaved)
                self._unsaved = []

    def publish(self, events: list[Event]) -> None:
        for event in events:
            incident = event.incident
            if event.kind == "opened" and self.metrics is not None:
                self.metrics.observe_incident(incident["target"], incident["pattern"])
            log.info("incident #%s %s: %s %s", incident["id"], event.kind, incident["target"], incident["summary"])
            silenced = self.config.in_maintenance(incident["target"], self.clock())
            if self.alerts is not None and not silenced:
                self.alerts.notify(event)

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
        return self.store.runs_since(self.clock() - 3600) >= self.config.agent.max_runs_per_hour

    def investigate(self, result: Result, found: list[Pattern], *, budget: bool = True,
                    incident_id: int | None = None, on_step: Callable[[Any], None] | None = None) -> Any:
        """Run the agent on a target's current incident; None when over budget."""
        self._queued.discard(result.name)
        if incident_id is None:
            current = self.store.open_incidents(result.name)
            incident_id = current[-1]["id"] if current else None
        incident = self.store.incident(incident_id) if incident_id is not None else None
        if budget and self.over_budget():
            limit = self.config.agent.max_runs_per_hour
            if incident is not None and incident.get("agent_state") != OVER_BUDGET:
                self.tracker.annotate(incident["id"], f"agent not run: over budget ({limit} runs per hour); "
                                      "the detection stands", agent_state=OVER_BUDGET)
            if self.metrics is not None:
                self.metrics.observe_run(OVER_BUDGET)
            return None
        from monitor.agent.tools import format_result  # smolagents: only once there is an agent

        with self.agent_lock:
            outcome = self.investigator.investigate(
                result.name, incident=incident_id,
                pattern=incident["pattern"] if incident else (found[0].name if found else "check"),
                summary=incident["summary"] if incident else "; ".join(p.summary for p in found),
                latest=format_result(result), on_step=on_step)
            self.publish(self.investigator.take_events())
        return outcome

    def drain(self) -> None:
        """Run every queued investigation now (for --once and tests)."""
        while self.queue is not None and not self.queue.empty():
            result, found = self.queue.get_nowait()
            self.investigate(result, found)


def investigate_results(config: Config, store: Store, results: list[Result], *, always: bool = False,
                        on_step: Callable[[Any], None] | None = None) -> Iterator[tuple[Any, str]]:
    """For ``monitor investigate``: the agent on each failing result (each result, with ``always``)."""
    cycle: Cycle | None = None
    for result in results:
        if result.ok and not always:
            continue
        if cycle is None:
            from monitor.agent.investigator import Investigator

            investigator = Investigator(config, store)
            cycle = Cycle(config, store, investigator=investigator, tracker=investigator.tracker)
            graph.sync_config(store, config)
        found, _ = cycle.tracker.observe(result.name)
        current = store.open_incidents(result.name)
        incident_id = current[-1]["id"] if current else None
        if incident_id is None and not result.ok:
            incident_id = cycle.tracker.open(result.name, found[0].name if found else "check_failed",
                                             f"{result.error}: {result.detail}", result.severity)
        yield cycle.investigate(result, found, budget=False, incident_id=incident_id, on_step=on_step), result.name


class Daemon:
    """``monitor run``: see the module docstring."""

    def __init__(self, config: Config, *, store: Store | None = None, registry: CollectorRegistry = REGISTRY,
                 model: Any = None, clock: Callable[[], float] = time.time, config_path: str | None = None,
                 listen: str | None = None) -> None:
        if listen:  # --metrics-listen: over the config's metrics address, now and at every reload
            config.metrics = config.metrics.listening_on(listen)
        self.config, self.config_path, self.listen = config, config_path, listen
        self.store = store or Store(config.database or "monitor.db", replica=config.replica_index or 0)
        self.metrics = Metrics(registry)
        self.metrics.observe_reload(True, clock())
        self.alerts = Alerts(config.alerts, self.store, clock=clock, metrics=self.metrics)
        self.store.mark_interrupted_runs()  # runs a previous process left open: it crashed or was killed
        graph.sync_config(self.store, config)  # what targets are and depend on (depends_on), as configured
        self._model, self._clock = model, clock
        # one writer of incident state for the check scheduler and the agent thread
        self.tracker = Tracker(self.store, config.detectors, clock=clock, silenced=config.in_maintenance,
                               messages=self.alerts.messages)
        self.investigator: Any = self._new_investigator() if config.agent.mode != "off" else None
        self.cycle = Cycle(config, self.store, metrics=self.metrics, alerts=self.alerts,
                           investigator=self.investigator, clock=clock, tracker=self.tracker)
        self.metrics.watch_memory(self.memory_stats)
        self.heartbeats = Heartbeats(self.store, self.ping_targets(), clock=clock)
        self.checker_concurrency = config.concurrency
        self.stopping = threading.Event()
        self.schedule = Schedule()
        self.checks: CheckLoop | None = None
        self.scheduler: Any = None
        self.server: MetricsServer | None = None
        self.web: Any = None  # monitor.web.app.WebServer, when web.enabled
        self._agent_thread: threading.Thread | None = None

    def _new_investigator(self) -> Any:
        from monitor.agent.investigator import Investigator

        return Investigator(self.config, self.store, model=self._model, metrics=self.metrics, clock=self._clock,
                            tracker=self.tracker)

    def memory_stats(self) -> dict[str, Any]:
        investigator = self.investigator
        working = (investigator.stats() if investigator is not None
                   else {"steps": {}, "bytes": 0, "tokens_estimate": 0})
        return {**working, "incidents": self.store.count_incidents(), "db_bytes": self.store.size_bytes()}

    def own_targets(self) -> list[Target]:
        """The targets this replica checks: all of them, or its share (``replicas``, ``replica_index``)."""
        return shard(self.config.targets, self.config.replicas, self.config.replica_index or 0)

    def ping_targets(self) -> list[Target]:
        """The heartbeat targets whose pings this replica takes (on the metrics listener): all of them when
        the database is shared, so that any replica behind a load balancer records a ping for the one that
        checks it; else its own only, and a ping for another replica's target gets a 404, never a silent
        success its owner would not see."""
        return self.config.targets if self.store.shared else self.own_targets()

    def deliver(self, results: list[Result]) -> None:
        """A batch of finished checks from the check loop: the cycle. Never raises into the loop."""
        try:
            self.cycle.after_checks(results)
        except Exception:
            log.exception("check cycle failed for %d results", len(results))

    def _observe_start(self, taken: Taken) -> None:
        self.metrics.observe_schedule(taken.lag, taken.skipped)

    def run_once(self) -> list[Result]:
        """``monitor run --once``: one cycle over every target, investigations and deliveries included."""
        results = Checker(concurrency=self.checker_concurrency, heartbeats=self.heartbeats).run(self.own_targets())
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
        self.schedule.set_targets(self.own_targets())
        self.checks = CheckLoop(self.schedule, self.deliver, concurrency=lambda: self.checker_concurrency,
                                observe=self._observe_start, checker=lambda: Checker(heartbeats=self.heartbeats))
        self.scheduler.add_job(self.housekeeping, "interval", id="housekeeping", seconds=60, coalesce=True,
                               max_instances=1)
        if self.investigator is not None:
            self._start_agent_worker()
        self.alerts.start()
        self.metrics.observe_max_age(self._max_age())
        self.metrics.observe_shard(self.config.replica_index or 0, self.config.replicas, len(self.own_targets()))
        if serve_metrics and self.config.metrics.enabled:
            self.server = MetricsServer(self.metrics, self.config.metrics.host, self.config.metrics.port,
                                        self._max_age(), pings=self.heartbeats.record).start()
            log.info("metrics on %s/metrics", self.server.url)
        if serve_metrics and self.config.web.enabled:
            from monitor.web.app import start_server  # starlette and uvicorn: only when the web UI is on

            self.web = start_server(self.store, self.config, clock=self._clock)
            log.info("web UI on %s", self.web.url)
        self.scheduler.start()
        self.checks.start()
        replica = (f" (replica {self.config.replica_index} of {self.config.replicas}: {len(self.schedule)} of "
                   f"{len(self.config.targets)})" if self.config.replicas > 1 else "")
        log.info("monitoring %d targets%s; agent: %s", len(self.schedule), replica,
                 self.investigator.model_label if self.investigator else "off")

    def _max_age(self) -> float:
        """How old the last cycle may be before /healthz says stale: three of the longest intervals."""
        return 3 * max((t.interval for t in self.config.targets), default=60) + 30

    def _start_agent_worker(self) -> None:
        self.cycle.queue = queue.Queue()
        self._agent_thread = threading.Thread(target=self._agent_worker, name="monitor-agent", daemon=True)
        self._agent_thread.start()

    def reload(self) -> bool:
        """SIGHUP: re-read the config file. A bad file is logged and changes nothing.

        The whole file is read and validated, and every new schedule built, before the running config
        is touched; then it is swapped in with one update. Targets, detectors, alerts, concurrency,
        the agent, the model and memory settings take effect at once; unchanged targets keep their
        schedule. The database and the metrics address need a restart, and say so.
        """
        from monitor import config as config_module

        if self.config_path is None:
            return False
        try:
            new = config_module.load(self.config_path)
        except config_module.ConfigError as exc:
            log.error("config not reloaded, the old one stays in force:\n%s", exc)
            self.metrics.observe_reload(False, self.cycle.clock())
            return False
        except Exception:  # a bug must not take the daemon down with it
            log.exception("config not reloaded, the old one stays in force")
            self.metrics.observe_reload(False, self.cycle.clock())
            return False
        if self.listen:
            new.metrics = new.metrics.listening_on(self.listen)
        self._log_restart_needed(new)
        new.database, new.metrics = self.config.database, self.config.metrics
        old_targets = {t.name: t for t in self.config.targets}
        model_changed = new.model != self.config.model
        # Everything holds this same Config object. One dict update swaps every field at once, so a
        # reader sees the old config or the new one, never half of each.
        vars(self.config).update(vars(new))
        self.checker_concurrency = self.config.concurrency
        self.heartbeats.configure(self.ping_targets())
        self.cycle.tracker.detectors = self.config.detectors
        self.alerts.config = self.config.alerts
        self._apply_agent(model_changed)
        self._reschedule(old_targets)
        self._sync_graph()
        self.cycle.publish(self.tracker.close_unconfigured(self.cycle.target_names()))
        self.metrics.observe_max_age(self._max_age())
        self.metrics.observe_shard(self.config.replica_index or 0, self.config.replicas, len(self.own_targets()))
        if self.server is not None:
            self.server.max_age = self._max_age()
        self.metrics.observe_reload(True, self.cycle.clock())
        log.info("config reloaded: %d targets", len(self.config.targets))
        return True

    def _sync_graph(self) -> None:
        try:
            graph.sync_config(self.store, self.config)
        except self.store.errors as exc:  # the next reload or restart writes it
            log.warning("the fleet's graph keeps the last config's edges: %s", describe(exc))

    def _log_restart_needed(self, new: Config) -> None:
        if new.database not in (None, self.config.database):
            log.warning("config reload: database %s is still %s until a restart", shown(new.database),
                        self.store.path)
        if new.metrics != self.config.metrics:
            log.warning("config reload: metrics settings change at the next restart (still %s:%d)",
                        self.config.metrics.host, self.config.metrics.port)

    def _apply_agent(self, model_changed: bool) -> None:
        """Agent settings now; a new model or a newly enabled agent on a worker, between investigations."""
        if self.investigator is not None:
            self.investigator.reconfigure()
        if not model_changed and (self.investigator is not None or self.config.agent.mode == "off"):
            return
        if self.scheduler is None:
            self._switch_agent(model_changed)
        else:
            # A thread of its own, not a one-shot scheduler job: shutting the scheduler down while it removed a
            # finished job raised JobLookupError in its thread.
            threading.Thread(target=self._switch_agent, args=[model_changed], name="reload-agent", daemon=True).start()

    def _switch_agent(self, model_changed: bool) -> None:
        try:
            with self.cycle.agent_lock:
                if self.investigator is None and self.config.agent.mode != "off":
                    self.investigator = self.cycle.investigator = self._new_investigator()
                    if self.scheduler is not None and not self.stopping.is_set():
                        self._start_agent_worker()
                elif self.investigator is not None and model_changed:
                    self.investigator.use_configured_model()
        except Exception:
            log.exception("the reloaded agent settings could not be applied")

    def _reschedule(self, old: dict[str, Target]) -> None:
        """Added targets are due now, removed ones go (with their series and window); the others keep
        their place unless their interval moved."""
        current = {t.name for t in self.config.targets}
        for name in old.keys() - current:
            self.metrics.forget_target(name)
            self.tracker.forget(name)
        self.schedule.set_targets(self.own_targets())
        if self.checks is not None:
            self.checks.wake()

    def _agent_worker(self) -> None:
        assert self.cycle.queue is not None
        while not self.stopping.is_set():
            try:
                result, found = self.cycle.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self.cycle.investigate(result, found)
            except self.store.errors as exc:  # housekeeping ends its run once the database answers
                log.warning("investigation of %s cut short, the database went away: %s", result.name, describe(exc))
            except Exception:
                log.exception("investigation of %s failed", result.name)

    def housekeeping(self) -> None:
        """Retention, re-sending firing alerts to Alertmanager, and looking for Ollama if it was absent."""
        try:
            self.store.prune(self.cycle.clock() - self.config.memory.retention)
            forgetting.prune(self.store, self.config.memory.max_incidents, clock=self.cycle.clock)
            self.store.add_memory_sample(self.memory_stats(),
                                         keep_since=self.cycle.clock() - self.config.memory.retention)
            self.cycle.publish(self.tracker.close_unconfigured(self.cycle.target_names()))
            own = self.cycle.own_names()  # another replica refreshes its own
            self.alerts.refresh([i for i in self.store.open_incidents() if i["target"] in own])
            if self.investigator is not None:
                with self.cycle.agent_lock:
                    self.investigator.settle()
                    self.investigator.reprobe()
        except Exception:
            log.exception("housekeeping failed")

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
        if self._agent_thread is not None:
            self._agent_thread.join(max(0.1, deadline - time.monotonic()))
        self.alerts.stop()
        if self.server is not None:
            self.server.stop()
        if self.web is not None:
            self.web.stop()
        self.close()

    def close(self) -> None:
        if self.investigator is not None:
            self.investigator.save()
        if self.cycle.unsaved():
            log.error("%d check results were not stored: the database stayed locked", self.cycle.unsaved())
        self.store.close()

    def run_forever(self) -> None:
        """Start, reload on SIGHUP, stop cleanly on SIGTERM or SIGINT.

        The handlers only let Python write the signal's number to a pipe (``set_wakeup_fd``); the main
        thread reads it and acts. No lock is taken inside a handler, and a reload starts at once.
        """
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        previous = signal.set_wakeup_fd(wake_write)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda *_: None)
        try:
            self.start()
            while True:
                received = set(os.read(wake_read, 64))
                if received & {signal.SIGTERM, signal.SIGINT}:
                    break
                if signal.SIGHUP in received:
                    try:
                        self.reload()
                    except Exception:  # reload logs its own failures; this is for a bug in it
                        log.exception("config reload failed; the daemon goes on")
            log.info("stopping")
            self.stop()
            log.info("stopped")
        finally:
            signal.set_wakeup_fd(previous)
            os.close(wake_read)
            os.close(wake_write)

