"""Every Prometheus series of monitor, defined here and nowhere else.

Checks::

    monitor_check_up{target,kind}                    0 when the last check found the target down (critical), else 1
    monitor_check_severity{target,kind}              the last check's result: 0 ok, 1 warning, 2 critical
    monitor_check_duration_seconds{target,kind}      histogram of check latency (a heartbeat's: its run time)
    monitor_checks_total{target,kind,result}         result: ok, warning, critical
    monitor_check_phase_duration_seconds{kind,phase} histogram of each phase of every check: dns, connect, tls,
                                                     first_byte, body; tcp's reply, dns's resolve (per target:
                                                     ``monitor check --json``)

``kind`` is what the target checks: http, tcp, tls, dns, icmp, heartbeat, or a declared kind's name.
    monitor_check_tls_cert_expiry_timestamp_seconds{target}
    monitor_check_tls_cert_expires_in_seconds{target}

Incidents::

    monitor_incidents_open{target}
    monitor_incidents_total{target,pattern}

Agent::

    monitor_agent_runs_total{state}
    monitor_agent_steps_total
    monitor_llm_request_duration_seconds             histogram
    monitor_llm_tokens_total{direction}              direction: input, output

Memory size, read off the scrape path (a scrape never waits on a database writer)::

    monitor_agent_memory_steps{type}                 working memory steps by type
    monitor_agent_memory_bytes                       history bytes the next request carries
    monitor_agent_memory_tokens_estimate             the same, in estimated tokens
    monitor_memory_incidents                         incidents in long-term memory (SQLite)
    monitor_db_size_bytes                            the database file, WAL included

Notifications (the outbox)::

    monitor_notifications_pending                    queued, not yet delivered
    monitor_notifications_total{receiver,result}     result: delivered, failed (an attempt), dropped (expired,
                                                     gave up, or its receiver left the config)
    monitor_notifications_taken_over_total{replica}  with ``lease``: undelivered notifications this replica took over
                                                     from ``replica``, whose lease had ended (it delivers them now)

Daemon::

    monitor_last_cycle_timestamp_seconds             when the last check cycle completed
    monitor_last_cycle_max_age_seconds               how old that may get before /healthz answers 503 (three of
                                                     the longest check intervals, plus 30 s)
    monitor_results_unsaved                          check results kept in memory while the database refuses them
                                                     (/healthz says "degraded" meanwhile)
    monitor_schedule_lag_seconds                     histogram of how late each check started after it was due
    monitor_checks_skipped_total{reason}             slots of a target that passed unchecked; reason: backlog (checks
                                                     were held back until results were recorded), late (the daemon
                                                     was behind, or the target's previous check was still running)
    monitor_results_backlog                          checks started and not yet recorded (config ``backlog``)
    monitor_result_age_seconds                       histogram of how long after its check ended a result was stored
    monitor_results_stale_total                      results stored too late for the detectors to judge by
                                                     (``backlog.stale_after`` intervals of their target)
    monitor_config_last_reload_successful            0 after a SIGHUP whose file was refused
    monitor_replicas{replica}                        the replicas the targets are split between (config ``replicas``),
                                                     as this replica (``replica_index``) sees it: fewer series
                                                     than the value means a shard goes unchecked
    monitor_targets                                  the targets this replica checks (its shard)
    monitor_members                                  with ``lease``: the live replicas (holding a lease) this
                                                     replica sees; the targets are shared among them
    monitor_config_last_reload_success_timestamp_seconds
    monitor_workers{state}                           with ``workers``: checking processes live and down (being
                                                     started again: their share went to the others)
    monitor_worker_restarts_total{reason}            checking processes started again after they ended: died
                                                     (its pipe closed), hung (killed after a silence)

Pass ``registry=CollectorRegistry()`` for an isolated set (tests); the default is
prometheus_client's global registry.

A ``/probe`` answer has blackbox_exporter's series (:mod:`monitor.metrics.probes`), with those its kind declares.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily

from monitor.core.batches import AGE_BUCKETS, LAG_BUCKETS, PHASE_BUCKETS
from monitor.core.memory import MemoryStats
from monitor.core.results import Result
from monitor.metrics.collectors import RefreshedCollector, elsewhere, escape, written_elsewhere
from monitor.metrics.histograms import CountedHistogram
from monitor.metrics.targets import TargetSeries

LLM_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class MemoryCollector(RefreshedCollector):
    """Memory sizes from ``source()`` (:meth:`monitor.core.memory.MemoryStats.to_json`)."""

    EMPTY: dict[str, Any] = {"steps": {}, "bytes": 0, "tokens_estimate": 0, "incidents": 0, "db_bytes": 0}

    def families(self, stats: dict[str, Any]) -> Iterator[GaugeMetricFamily]:
        steps = GaugeMetricFamily("monitor_agent_memory_steps", "Steps in the agent's working memory, by type.", labels=["type"])
        for kind in ("summary", "task", "action", "planning"):
            steps.add_metric([kind], stats["steps"].get(kind, 0))
        yield steps
        yield GaugeMetricFamily(
            "monitor_agent_memory_bytes", "Bytes of history the agent's next model request carries.", value=stats["bytes"]
        )
        yield GaugeMetricFamily(
            "monitor_agent_memory_tokens_estimate", "Estimated tokens of that history (bytes / 4).", value=stats["tokens_estimate"]
        )
        yield GaugeMetricFamily("monitor_memory_incidents", "Incidents in long-term memory (SQLite).", value=stats["incidents"])
        yield GaugeMetricFamily("monitor_db_size_bytes", "Size of the SQLite database, WAL included.", value=stats["db_bytes"])


class OpenIncidentsCollector(RefreshedCollector):
    """``monitor_incidents_open{target}`` from ``source()``: open incidents by configured target name.

    Computed at scrape time from the store, so a check costs nothing here however many targets
    there are, and an incident resolved from another process (``monitor incidents resolve``) shows
    at the next scrape.
    """

    HEADER = "# HELP monitor_incidents_open Open incidents.\n# TYPE monitor_incidents_open gauge\n"

    def collect(self) -> Iterator[GaugeMetricFamily]:
        return iter(()) if written_elsewhere() else super().collect()

    def exposition(self, wanted: set[str]) -> bytes:
        """The family in the text format, written here: one line per target."""
        if wanted and "monitor_incidents_open" not in wanted:
            return b""
        lines = [f'monitor_incidents_open{{target="{escape(target)}"}} {count}\n' for target, count in self.figures().items()]
        return (self.HEADER + "".join(lines)).encode()

    def families(self, stats: dict[str, Any]) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("monitor_incidents_open", "Open incidents.", labels=["target"])
        for target, count in stats.items():
            family.add_metric([target], count)
        yield family


class Metrics:
    """All series; the daemon and the agent report through its ``observe_*`` methods."""

    def __init__(self, registry: CollectorRegistry = REGISTRY, *, target_histograms: bool = True) -> None:
        self.registry = registry
        self.target_series = TargetSeries(histograms=target_histograms)
        self.last_cycle_at: float | None = None
        self.refused: tuple[float, int, str] | None = None  # when the database last refused results, how many wait, why
        self.worker_states: list[dict[str, Any]] = []  # with ``workers``: each one's number, pid, live, restarts
        self._define_checks(registry)
        self._define_incidents_and_agent(registry)
        self._define_daemon(registry)
        self._define_notifications(registry)

    def _define_checks(self, registry: CollectorRegistry) -> None:
        registry.register(self.target_series)  # each target's: up, severity, duration, checks, certificate
        self.check_phases = CountedHistogram(  # a worker's batch comes counted into its buckets
            "monitor_check_phase_duration_seconds",
            "Time in each phase of a check (dns, connect, tls, first_byte, body, reply, resolve).",
            ["kind", "phase"],
            buckets=PHASE_BUCKETS,
            registry=registry,
        )

    def _define_incidents_and_agent(self, registry: CollectorRegistry) -> None:
        self.incidents_open = OpenIncidentsCollector(dict)
        registry.register(self.incidents_open)
        self.incidents = Counter(
            "monitor_incidents_total", "Incidents opened, by failure pattern.", ["target", "pattern"], registry=registry
        )
        self.agent_runs = Counter("monitor_agent_runs_total", "Agent investigations, by end state.", ["state"], registry=registry)
        self.agent_steps = Counter("monitor_agent_steps_total", "Agent steps taken.", registry=registry)
        self.llm_duration = Histogram(
            "monitor_llm_request_duration_seconds", "Duration of model requests.", buckets=LLM_BUCKETS, registry=registry
        )
        self.llm_tokens = Counter(
            "monitor_llm_tokens_total", "Model tokens, by direction (input, output).", ["direction"], registry=registry
        )

    def _define_daemon(self, registry: CollectorRegistry) -> None:
        self.last_cycle = Gauge("monitor_last_cycle_timestamp_seconds", "When the last check cycle completed.", registry=registry)
        self.unsaved = Gauge("monitor_results_unsaved", "Check results kept in memory while the database refuses them.", registry=registry)
        self.last_cycle_max_age = Gauge(
            "monitor_last_cycle_max_age_seconds", "How old the last cycle may get before /healthz answers 503.", registry=registry
        )
        self.schedule_lag = CountedHistogram(
            "monitor_schedule_lag_seconds", "How late each check started after it was due.", buckets=LAG_BUCKETS, registry=registry
        )
        self.checks_skipped = Counter(
            "monitor_checks_skipped_total",
            "Slots of a target that passed unchecked, by reason (backlog, late).",
            ["reason"],
            registry=registry,
        )
        self.backlog = Gauge("monitor_results_backlog", "Checks started and not yet recorded.", registry=registry)
        self.result_age = CountedHistogram(
            "monitor_result_age_seconds", "How long after its check ended a result was stored.", buckets=AGE_BUCKETS, registry=registry
        )
        self.results_stale = Counter(
            "monitor_results_stale_total", "Results stored too late for the detectors to judge by.", registry=registry
        )
        self.reload_ok = Gauge(
            "monitor_config_last_reload_successful",
            "1 when the config file in force is the last one read, 0 after a refused reload.",
            registry=registry,
        )
        self.reload_at = Gauge(
            "monitor_config_last_reload_success_timestamp_seconds", "When the config in force was read (Unix time).", registry=registry
        )
        self._define_fleet(registry)

    def _define_fleet(self, registry: CollectorRegistry) -> None:
        self.replicas = Gauge(
            "monitor_replicas", "Replicas the targets are split between, by this replica's number.", ["replica"], registry=registry
        )
        self.targets = Gauge("monitor_targets", "Targets this replica checks (its shard of the config's).", registry=registry)
        self.members = Gauge("monitor_members", "Live replicas (holding a lease) this replica sees.", registry=registry)
        self.workers = Gauge("monitor_workers", "Checking processes of this daemon (workers), live and down.", ["state"], registry=registry)
        self.worker_restarts = Counter(
            "monitor_worker_restarts",
            "Checking processes started again after they ended, by reason (died: its pipe closed; hung: killed for its silence).",
            ["reason"],
            registry=registry,
        )

    def _define_notifications(self, registry: CollectorRegistry) -> None:
        self.notifications_pending = Gauge(
            "monitor_notifications_pending", "Notifications queued in the outbox, not yet delivered.", registry=registry
        )
        self.notifications = Counter(
            "monitor_notifications_total",
            "Notification deliveries by receiver and result (delivered, failed, dropped).",
            ["receiver", "result"],
            registry=registry,
        )
        self.taken_over = Counter(
            "monitor_notifications_taken_over",
            "Undelivered notifications taken over from a replica whose lease ended, by replica.",
            ["replica"],
            registry=registry,
        )
        self.embed_pending = Gauge(
            "monitor_memory_embed_pending",
            "Incidents waiting for their vector (recall by meaning), at the embedder's last pass.",
            registry=registry,
        )
        self.embedded = Counter("monitor_memory_embedded", "Incidents the daemon embedded in the background.", registry=registry)

    def watch_memory(self, source: Callable[[], MemoryStats], wait: float = 0.5) -> None:
        """Memory sizes from ``source()``; a scrape waits at most ``wait`` seconds for fresh ones."""
        self.registry.register(MemoryCollector(lambda: source().to_json(), wait))

    def watch_incidents(self, source: Callable[[], dict[str, int]]) -> None:
        """Read ``monitor_incidents_open`` from ``source()`` at scrape time: {target: open incidents}."""
        self.incidents_open.source = source

    def observe_results(self, results: Iterable[Result]) -> None:
        results = list(results)
        self.target_series.observe(results)
        for r in results:
            for phase, ms in (r.phases or {}).items():
                self.check_phases.observe(ms / 1000, r.kind, phase)

    def forget_targets(self, targets: Iterable[tuple[str, str]]) -> None:
        """Drop every series of the targets, ``(name, kind)``, that left the config: their per-target series
        (one lookup each), and their incidents' in one walk of that family (a walk per target spent 90 s of CPU
        on a reload that removed 1,000 of 50,000 targets)."""
        names = set()
        for name, _kind in targets:
            names.add(name)
            self.target_series.forget(name)
        opened = {
            (sample.labels["target"], sample.labels["pattern"])
            for family in self.incidents.collect()
            for sample in family.samples
            if sample.labels.get("target") in names
        }
        for labels in opened:
            self.incidents.remove(*labels)

    def observe_reload(self, ok: bool, at: float) -> None:
        self.reload_ok.set(1 if ok else 0)
        if ok:
            self.reload_at.set(at)

    def observe_cycle(self, at: float) -> None:
        self.last_cycle_at = at
        self.last_cycle.set(at)

    def observe_unsaved(self, count: int, reason: str | None, at: float | None = None) -> None:
        """``count`` results wait in memory because the database refused them (``reason``); 0 and None: it took them."""
        self.unsaved.set(count)
        self.refused = None if reason is None else (time.time() if at is None else at, count, reason)

    def observe_shard(self, replica: int, replicas: int, targets: int) -> None:
        self.replicas.clear()
        self.replicas.labels(str(replica)).set(replicas)
        self.targets.set(targets)

    def observe_members(self, members: int) -> None:
        self.members.set(members)

    def observe_taken_over(self, replica: int, count: int) -> None:
        self.taken_over.labels(str(replica)).inc(count)

    def observe_workers(self, live: int, wanted: int, states: list[dict[str, Any]]) -> None:
        self.workers.labels("live").set(live)
        self.workers.labels("down").set(wanted - live)
        self.worker_states = states

    def observe_worker_restart(self, reason: str = "died") -> None:
        """A checking process started again after it ended (``reason``: died, hung)."""
        self.worker_restarts.labels(reason).inc()

    def observe_max_age(self, seconds: float) -> None:
        self.last_cycle_max_age.set(seconds)

    def observe_schedule(self, lag: float, skipped: int, reason: str = "late") -> None:
        """One check started ``lag`` seconds after it was due, with ``skipped`` slots of its target missed
        (``reason``: backlog, late)."""
        self.schedule_lag.observe(lag)
        if skipped:
            self.checks_skipped.labels(reason).inc(skipped)

    def watch_backlog(self, size: Callable[[], int]) -> None:
        """Read ``monitor_results_backlog`` from ``size()`` at scrape time."""
        self.backlog.set_function(size)

    def observe_notification(self, receiver: str, result: str) -> None:
        self.notifications.labels(receiver, result).inc()

    def observe_embedding(self, embedded: int, pending: int) -> None:
        """The background embedder embedded ``embedded`` incidents; ``pending`` still wait."""
        self.embedded.inc(embedded)
        self.embed_pending.set(pending)

    def observe_pending(self, pending: int) -> None:
        self.notifications_pending.set(pending)

    def observe_incident(self, target: str, pattern: str) -> None:
        self.incidents.labels(target, pattern).inc()

    def observe_run(self, state: str) -> None:
        self.agent_runs.labels(state).inc()

    def observe_step(self) -> None:
        self.agent_steps.inc()

    def observe_llm(self, seconds: float, input_tokens: int, output_tokens: int) -> None:
        self.llm_duration.observe(seconds)
        self.llm_tokens.labels("input").inc(input_tokens)
        self.llm_tokens.labels("output").inc(output_tokens)

    def scrape(self, names: Iterable[str] = ()) -> bytes:
        """The exposition text; with ``names`` (as ``/metrics?name[]=...`` gives them), only those series."""
        wanted = set(names)
        with elsewhere():  # the families with a line per target are written below, faster
            text = generate_latest(self.registry.restricted_registry(wanted) if wanted else self.registry)
        return text + self.incidents_open.exposition(wanted) + self.target_series.exposition(wanted)

    def health(self, max_age: float, now: float | None = None) -> tuple[bool, dict[str, Any]]:
        """Healthy while the last completed cycle is younger than ``max_age`` seconds; degraded (but alive:
        a restart would lose them) while checks go on and their results wait for the database, or while a
        checking process is being started again (the others check its share)."""
        now = time.time() if now is None else now
        age = None if self.last_cycle_at is None else now - self.last_cycle_at
        ok = age is not None and age <= max_age
        body: dict[str, Any] = {"status": "ok" if ok else "stale", "seconds_since_last_cycle": age, "max_age_seconds": max_age}
        states = self.worker_states
        if states:
            body["workers"] = states
        if ok and any(not state["live"] for state in states):  # its share is checked by the others meanwhile
            body["status"] = "degraded"
        if self.refused is not None and now - self.refused[0] <= max_age:
            at, count, reason = self.refused
            return True, {**body, "status": "degraded", "unsaved_results": count, "database": f"refuses writes: {reason}"}
        return ok, body
