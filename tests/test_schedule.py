"""Fleet scale (issue 12): the schedule spreads targets, serves the oldest due first and counts what it
skips; detector windows survive a restart; a stop stores every finished check."""

from __future__ import annotations

import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

from outbox import quiet_writer
from prometheus_client import CollectorRegistry
from servers import Misbehaving, wait_for

from monitor.checks.engine import Result
from monitor.checks.schedule import CheckLoop, Schedule, next_slot, phase
from monitor.config import Config, Detectors, Target
from monitor.daemon import Cycle, Daemon, daemon_cycle
from monitor.incidents.history import Held, Window
from monitor.incidents.tracker import Tracker
from monitor.metrics import Metrics
from monitor.store import Store


def target(name: str, interval: float = 10.0, url: str = "http://127.0.0.1:9/") -> Target:
    return Target.model_validate({"name": name, "url": url, "interval": interval})


def test_targets_are_spread_over_their_interval_and_keep_their_phase() -> None:
    clock = [1000.0]
    schedule = Schedule([target(f"svc-{i}") for i in range(1000)], clock=lambda: clock[0])
    first = schedule.take(limit=10_000)
    assert len(first) == 1000 and {t.due for t in first} == {1000.0}  # all due at start
    for taken in first:
        schedule.done(taken.target.name, taken.started)
    dues = schedule.due_times()
    assert all(1000.0 < due <= 1010.0 for due in dues.values())
    per_second = Counter(int(due - 1000.0) for due in dues.values())
    assert len(per_second) == 10 and max(per_second.values()) < 2 * 100  # even, give or take the hash
    again = Schedule([target(f"svc-{i}") for i in range(1000)], clock=lambda: 5003.0)
    for taken in again.take(limit=10_000):
        again.done(taken.target.name, taken.started)
    beats = [(again.due_times()[name] - due) / 10.0 for name, due in dues.items()]
    assert all(abs(beat - round(beat)) < 1e-6 for beat in beats)  # a restart keeps each target on its beat


def test_next_slot_is_strictly_after() -> None:
    assert next_slot(100.0, 3.0, 10.0) == 103.0
    assert next_slot(103.0, 3.0, 10.0) == 113.0
    assert 0 <= phase("api", 30.0) < 30.0 and phase("api", 30.0) == phase("api", 30.0)


def test_under_overload_the_oldest_due_go_first_and_missed_slots_count_as_skipped() -> None:
    clock = [0.0]
    schedule = Schedule([target(n, interval=1.0) for n in "abcd"], clock=lambda: clock[0])
    for taken in schedule.take(limit=4):
        schedule.done(taken.target.name, taken.started)
    dues = schedule.due_times()
    clock[0] = 4.5  # the daemon was stuck for 4.5 s: each target missed 3 or 4 slots
    first = schedule.take(limit=2)
    assert [t.target.name for t in first] == sorted(dues, key=dues.__getitem__)[:2]
    for taken in first:
        assert taken.lag == 4.5 - dues[taken.target.name]
        assert taken.skipped == len([s for s in range(10) if dues[taken.target.name] + s < 4.5]) - 1
    assert [t.target.name for t in schedule.take(limit=10)] == sorted(dues, key=dues.__getitem__)[2:]
    assert schedule.take(limit=10, now=100.0) == []  # all four busy: no storm of missed runs


def test_a_reload_keeps_unchanged_targets_on_their_slot() -> None:
    clock = [0.0]
    schedule = Schedule([target("a"), target("b"), target("c")], clock=lambda: clock[0])
    for taken in schedule.take(limit=3):
        schedule.done(taken.target.name, taken.started)
    before = schedule.due_times()
    clock[0] = 2.0
    schedule.set_targets([target("a"), target("b", interval=60.0), target("d")])
    after = schedule.due_times()
    assert after["a"] == before["a"] and "c" not in after and after["d"] == 2.0
    assert after["b"] != before["b"] and (after["b"] - phase("b", 60.0)) % 60.0 < 1e-6


def test_the_loop_behind_its_schedule_checks_every_target_and_exports_lag_and_skips(web: Misbehaving) -> None:
    metrics = Metrics(CollectorRegistry())
    schedule = Schedule([target(f"t{i}", interval=0.2, url=web.url("/slowish")) for i in range(20)])
    results: list[Result] = []
    loop = CheckLoop(
        schedule, results.extend, concurrency=1, flush_every=0.05, observe=lambda taken: metrics.observe_schedule(taken.lag, taken.skipped)
    ).start()
    try:
        # one check at a time, 50 ms each, cannot serve 20 targets every 200 ms: oldest due first reaches all
        wait_for(lambda: {r.name for r in results} == {f"t{i}" for i in range(20)}, timeout=30)
        wait_for(lambda: metrics.registry.get_sample_value("monitor_checks_skipped_total", {"reason": "late"}), timeout=30)
    finally:
        loop.stop()
    assert all(r.ok for r in results)
    lags, lagged = (metrics.registry.get_sample_value(f"monitor_schedule_lag_seconds_{part}") for part in ("count", "sum"))
    assert lags is not None and lags >= len(results)
    assert lagged is not None and lagged > 0


def test_a_check_that_begins_past_a_slot_edge_serves_that_slot(web: Misbehaving) -> None:
    """A target due now (at start, by a reload, taken over from a hung worker), taken just before one of its slots
    and begun just after (a busy loop): its result is recorded in that slot, so that slot is the one served, and the
    next check comes at the slot after, not at once in the same slot (two results for one slot, the second 20 ms
    after the first)."""
    import time

    from monitor.checks.engine import Checker

    interval, late = 0.5, 0.04

    def busy_then_now() -> float:
        time.sleep(late)  # the loop held between taking the check and beginning it
        return time.time()

    served = target("edge", interval=interval, url=web.url("/"))
    edge = next_slot(time.time() + 0.1, phase("edge", interval), interval)
    time.sleep(max(0.0, edge - 0.02 - time.time()))  # taken 20 ms before the edge, begun 20 ms after it
    results: list[Result] = []
    loop = CheckLoop(Schedule([served]), results.extend, flush_every=0.05, checker=lambda: Checker(clock=busy_then_now))
    loop.start()
    try:
        wait_for(lambda: len(results) >= 3, timeout=10)
    finally:
        loop.stop()
    slots = Counter(int((r.checked_at - phase("edge", interval)) // interval) for r in results)
    assert results[0].checked_at > edge and max(slots.values()) == 1, [round(r.checked_at - edge, 3) for r in results]


def test_a_stopped_daemon_has_stored_every_check_it_started(web: Misbehaving, tmp_path: Path) -> None:
    config = Config.model_validate(
        {
            "agent": {"mode": "off"},
            "metrics": {"enabled": False},
            "targets": [{"name": f"t{i}", "url": web.url("/healthy"), "interval": "100ms"} for i in range(50)],
        }
    )
    daemon = Daemon(config, store=Store(tmp_path / "m.db"), registry=CollectorRegistry())
    daemon.start(serve_metrics=False)
    wait_for(lambda: (daemon.metrics.registry.get_sample_value("monitor_schedule_lag_seconds_count") or 0) >= 200)
    daemon.stop()
    started = daemon.metrics.registry.get_sample_value("monitor_schedule_lag_seconds_count")
    store = Store(tmp_path / "m.db")
    assert store.results.count_results() == started
    store.close()


def feed(cycle: Cycle, steps: list[tuple[bool, float]], clock: list[float]) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    for ok, latency in steps:
        clock[0] += 30
        result = Result(
            "api",
            "http://api/",
            ok,
            "ok" if ok else "critical",
            200 if ok else 500,
            latency,
            None if ok else "unexpected_status",
            "status",
            clock[0],
        )
        events += [(e.kind, e.incident.pattern) for e in cycle.after_checks([result])]
    return events


def incidents(store: Store) -> list[tuple[Any, ...]]:
    return [(i.pattern, i.severity, i.summary, i.status) for i in store.incidents.recent_incidents(limit=1000)]


DETECTORS = {
    "consecutive": 2,
    "window_failures": 3,
    "window_size": 6,
    "flap_changes": 4,
    "flap_window": 300,
    "latency_recent": 3,
    "latency_baseline": 10,
    "recover_after": 2,
}


def test_detector_windows_rebuilt_from_sqlite_after_a_restart_give_the_same_detections(tmp_path: Path) -> None:
    rng = random.Random(12)
    steps = [(rng.random() > 0.3, rng.choice([5.0, 6.0, 40.0])) for _ in range(120)]
    steps[40:55] = [(False, 5.0)] * 15  # a long outage: its summary counts every failure

    def run(path: Path, restart_at: list[int]) -> tuple[list[tuple[str, Any]], list[tuple[Any, ...]]]:
        clock, events, done = [1000.0], [], 0
        for stop in [*restart_at, len(steps)]:
            store = Store(path, clock=lambda: clock[0])
            config = Config.model_validate(
                {"agent": {"mode": "off"}, "detectors": DETECTORS, "targets": [{"name": "api", "url": "http://api/"}]}
            )
            events += feed(daemon_cycle(config, store, clock=lambda: clock[0]), steps[done:stop], clock)
            done = stop
            found = incidents(store)
            store.close()
        return events, found

    def reference(path: Path) -> tuple[list[tuple[str, Any]], list[tuple[Any, ...]]]:
        """The detectors on the history read from SQLite at every check, as before issue 12."""
        clock = [1000.0]
        events: list[tuple[str, Any]] = []
        store = Store(path, clock=lambda: clock[0])
        tracker = Tracker(store, Detectors.model_validate(DETECTORS), writer=quiet_writer(store), clock=lambda: clock[0])
        for ok, latency in steps:
            clock[0] += 30
            store.results.add_results(
                [
                    Result(
                        "api",
                        "http://api/",
                        ok,
                        "ok" if ok else "critical",
                        200 if ok else 500,
                        latency,
                        None if ok else "unexpected_status",
                        "status",
                        clock[0],
                    )
                ]
            )
            events += [(e.kind, e.incident.pattern) for e in tracker.observe("api")[1]]
        return events, incidents(store)

    expected = reference(tmp_path / "reference.db")
    assert {kind for kind, _ in expected[0]} >= {"opened", "resolved"}
    runs = [int(m.group(1)) for _, _, summary, _ in expected[1] for m in [re.search(r"(\d+) consecutive", summary)] if m]
    assert max(runs) >= 15
    assert run(tmp_path / "windows.db", []) == expected
    assert run(tmp_path / "restarted.db", [17, 60, 61, 100]) == expected


def test_a_window_keeps_only_what_the_detectors_can_see() -> None:
    detectors = Detectors.model_validate(DETECTORS)
    window = Window([], limit=200)
    for n in range(1000):
        rows = window.add(Held(float(n), int(n % 7 != 0), 5.0, "ok", None, 200, "status 200"), detectors, float(n))
    assert len(rows) == 200  # the flapping window (300 s of 1 s checks) is the longest need, past the limit
    detectors = Detectors.model_validate({**DETECTORS, "flap_window": 10})
    rows = window.add(Held(1000.0, 1, 5.0, "ok", None, 200, "status 200"), detectors, 1000.0)
    assert 13 <= sum(1 for row in rows if row.ok) <= 14 and len(rows) < 20


def test_a_second_cycle_on_the_same_store_leaves_no_window_stale(tmp_path: Path) -> None:
    """The demo records checks outside its agent's cycle: through the one recorder, so every window sees them."""
    rng = random.Random(7)
    steps = [(rng.random() > 0.4, 5.0) for _ in range(90)]
    clock = [1000.0]
    store = Store(tmp_path / "two.db", clock=lambda: clock[0])
    config = Config.model_validate({"agent": {"mode": "off"}, "detectors": DETECTORS, "targets": [{"name": "api", "url": "http://api/"}]})
    first = daemon_cycle(config, store, clock=lambda: clock[0])
    cycles = [first, Cycle(config, store, first.parts, fleet=first.fleet, clock=lambda: clock[0])]
    events = []
    for n, step in enumerate(steps):
        events += feed(cycles[(n // 4) % 2], [step], clock)
    found = incidents(store)
    store.close()

    clock = [1000.0]
    store = Store(tmp_path / "reference.db", clock=lambda: clock[0])
    tracker = Tracker(store, Detectors.model_validate(DETECTORS), writer=quiet_writer(store), clock=lambda: clock[0])
    expected = []
    for ok, latency in steps:
        clock[0] += 30
        store.results.add_results(
            [
                Result(
                    "api",
                    "http://api/",
                    ok,
                    "ok" if ok else "critical",
                    200 if ok else 500,
                    latency,
                    None if ok else "unexpected_status",
                    "status",
                    clock[0],
                )
            ]
        )
        expected += [(e.kind, e.incident.pattern) for e in tracker.observe("api")[1]]
    assert (events, found) == (expected, incidents(store)) and expected
    store.close()
