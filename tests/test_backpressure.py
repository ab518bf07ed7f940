"""Backpressure (issue 22, part 1): checks start only as fast as results are recorded, what cannot start
is counted as skipped, and the detectors never judge a target by a result that came minutes late."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client import CollectorRegistry
from servers import Misbehaving, wait_for

from monitor.checks.backlog import Backlog
from monitor.config import BacklogConfig, Config
from monitor.core.results import Result
from monitor.daemon import Daemon, daemon_cycle
from monitor.metrics import Metrics
from monitor.store import Base, Store
from monitor.store.base import part
from monitor.store.results import ResultsPart


class SlowResults(ResultsPart):
    """The real results part, whose every write takes 100 ms: far slower than the checks come."""

    def __init__(self, db: Base) -> None:
        super().__init__(db)
        self.batches: list[int] = []
        self.unrecorded: list[float] = []  # at each write: checks started minus results stored before it
        self.started: Callable[[], float] = lambda: 0.0

    def add_results(self, results: list[Result]) -> None:
        self.unrecorded.append(self.started() - sum(self.batches))
        self.batches.append(len(results))
        time.sleep(0.1)
        super().add_results(results)


class SlowStore(Store):
    """A real store whose results part is :class:`SlowResults`."""

    results = part(SlowResults)


def test_a_slow_store_holds_checks_back_within_the_bound_and_counts_them_skipped(web: Misbehaving, db_path: str) -> None:
    config = Config.model_validate(
        {
            "agent": {"mode": "off"},
            "metrics": {"enabled": False},
            "backlog": {"max_results": 30, "batch": 10},
            "targets": [{"name": f"t{i}", "url": web.url("/healthy"), "interval": "100ms"} for i in range(100)],
        }
    )
    store = SlowStore(db_path)
    daemon = Daemon(config, store=store, registry=CollectorRegistry())
    sample = daemon.metrics.registry.get_sample_value
    slow = store.results
    slow.started = lambda: sample("monitor_schedule_lag_seconds_count") or 0.0
    daemon.start(serve_metrics=False)
    try:  # 1,000 checks a second demanded; the store takes at most 100 a second
        wait_for(lambda: len(slow.batches) >= 15, timeout=30)
        backlog = sample("monitor_results_backlog")
        assert backlog is not None and backlog <= 30
    finally:
        daemon.stop()
    assert max(slow.batches) <= 10  # the writer works in bounded batches
    assert max(slow.unrecorded) <= 30  # started, not yet stored: never past max_results
    started = sample("monitor_schedule_lag_seconds_count")
    assert started is not None
    assert Store(db_path).results.count_results() == started  # every check started was recorded
    skipped = sample("monitor_checks_skipped_total", {"reason": "backlog"})
    assert skipped is not None and skipped > started  # the rest: held back, counted
    assert sample("monitor_result_age_seconds_count") == started


def test_checks_wait_while_the_oldest_result_waits_longer_than_max_age() -> None:
    clock = [0.0]
    limits = BacklogConfig(max_results=100, max_age=1.0, batch=3)
    backlog = Backlog(lambda: limits, clock=lambda: clock[0])
    backlog.started(5)
    assert (backlog.room(), len(backlog)) == (95, 5)
    for n in range(5):
        backlog.finished(Result(f"t{n}", "http://t/", True, "ok", 200, 1.0, None, "", 0.0))
    clock[0] = 1.5
    assert backlog.room() == 0 and backlog.oldest_age() == 1.5  # few results, but they waited too long
    assert [r.name for r in backlog.take()] == ["t0", "t1", "t2"]  # the oldest first, one batch
    assert backlog.room() == 0  # being written counts: still unrecorded
    backlog.recorded(3)
    assert backlog.room() == 0  # t3 and t4 still wait, for 1.5 s
    backlog.take()
    backlog.recorded(2)
    assert (backlog.room(), len(backlog)) == (100, 0)


def failing(at: float) -> Result:
    return Result("api", "http://api/", False, "critical", 500, 5.0, "unexpected_status", "status 500", at)


def test_a_result_recorded_minutes_late_is_stored_but_opens_no_incident(tmp_path: Path) -> None:
    clock = [10_000.0]
    config = Config.model_validate(
        {"agent": {"mode": "off"}, "detectors": {"consecutive": 2}, "targets": [{"name": "api", "url": "http://api/", "interval": "10s"}]}
    )
    store = Store(tmp_path / "late.db", clock=lambda: clock[0])
    metrics = Metrics(CollectorRegistry())
    cycle = daemon_cycle(config, store, metrics=metrics, clock=lambda: clock[0])
    # three failures from minutes ago, kept back (a database that refused writes) and recorded only now
    assert cycle.after_checks([failing(clock[0] - 300 + n) for n in range(3)]) == []
    assert store.results.count_results("api") == 3 and store.incidents.open_incidents("api") == []
    assert metrics.registry.get_sample_value("monitor_results_stale_total") == 3
    clock[0] += 10
    events = cycle.after_checks([failing(clock[0] - 1)])  # what the target does now: judged, with its history
    assert [e.kind for e in events] == ["opened"] and store.incidents.open_incidents("api")
    store.close()


def test_a_reload_changes_the_bound_the_loop_reads(web: Misbehaving) -> None:
    from monitor.checks.schedule import CheckLoop, Schedule
    from monitor.config import Target

    limits = [BacklogConfig(max_results=1)]
    most, batches = [0], [0]
    lock = threading.Lock()

    def deliver(batch: list[Result]) -> None:
        with lock:
            most[0] = max(most[0], len(batch))
            batches[0] += 1

    targets = [Target.model_validate({"name": f"t{i}", "url": web.url("/healthy"), "interval": "50ms"}) for i in range(20)]
    loop = CheckLoop(Schedule(targets), deliver, concurrency=20, flush_every=0.05, backlog=lambda: limits[0]).start()
    try:
        wait_for(lambda: batches[0] >= 5)  # several flushes of twenty targets due every 50 ms
        assert most[0] == 1  # one result at a time: the bound of one
        limits[0] = BacklogConfig(max_results=20)
        wait_for(lambda: most[0] > 1)
    finally:
        loop.stop()
