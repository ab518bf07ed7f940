"""Forgetting: importance decays and grows with recalls; pruning bounds the store and leaves a summary."""

from __future__ import annotations

import calendar
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from outbox import quiet_writer
from prometheus_client import CollectorRegistry

from monitor import wiring
from monitor.cli.main import main
from monitor.config import Config, MemoryConfig
from monitor.core.incidents import Forgettable
from monitor.daemon import Daemon
from monitor.memory import forgetting
from monitor.memory.forgetting import DAY, Policy
from monitor.store import Store
from monitor.store.writes import IncidentWrites

MAR_1 = float(calendar.timegm((2026, 3, 1, 0, 0, 0)))
HALF = Policy().half_life


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def incident(
    store: Store,
    clock: Clock,
    at: float,
    target: str = "api",
    pattern: str = "consecutive",
    cause: str | None = "timeout",
    resolution: str | None = None,
    close: bool = True,
) -> int:
    clock.now = at
    incident_id = IncidentWrites(store).open_incident(target, pattern, f"{target} failed", root_cause=cause)
    if close:
        clock.now = at + 600
        IncidentWrites(store).close_incident(incident_id, resolution)
    return incident_id


def candidate(store: Store, incident_id: int, now: float) -> Forgettable:
    return next(r for r in store.importance.forgettable(now + 1) if r.id == incident_id)


def test_importance_halves_each_half_life_and_grows_with_each_recall(db_path: str) -> None:
    clock = Clock(MAR_1)
    store = Store(db_path, clock=clock)
    noise = incident(store, clock, MAR_1)
    fix = incident(store, clock, MAR_1, target="shop", resolution="raised the pool to 50")
    start = forgetting.value(candidate(store, noise, MAR_1), MAR_1)
    later = MAR_1 + HALF
    assert forgetting.value(candidate(store, noise, later), later) == pytest.approx(start / 2)
    # a confirmed fix is worth more than noise of the same age, and more still once it is recalled
    assert forgetting.value(candidate(store, fix, later), later) > 2 * forgetting.value(candidate(store, noise, later), later)
    clock.now = later
    store.importance.mark_recalled([noise])
    after_recall = forgetting.value(candidate(store, noise, later), later)
    assert after_recall == pytest.approx(start / 2 + 1.0)
    clock.now = later + HALF  # the recall decays too, and a second recall adds to what is left of the first
    store.importance.mark_recalled([noise, 10_000])  # an id that is not an incident is ignored
    record = store.importance.recalls(noise)
    assert record is not None and record["recalls"] == 2 and record["score"] == pytest.approx(1.5)
    assert store.importance.recalls(10_000) is None


def test_pruning_keeps_open_and_recently_recalled_incidents_and_summarizes_what_went(db_path: str) -> None:
    clock = Clock(MAR_1)
    store = Store(db_path, clock=clock)
    noise = [incident(store, clock, MAR_1 + day * DAY) for day in range(0, 90, 3)]  # 30 timeouts, Mar–May
    old_open = incident(store, clock, MAR_1, target="db", cause="server_error", close=False)
    recalled = noise[0]  # the oldest of all, but recalled yesterday
    fixes = [
        incident(store, clock, MAR_1 + day * DAY, target="shop", cause="server_error", resolution=f"fix {day}") for day in (10, 20, 30)
    ]
    now = MAR_1 + 100 * DAY
    clock.now = now - DAY
    store.importance.mark_recalled([recalled])
    clock.now = now
    gone = forgetting.prune(quiet_writer(store), 20)
    kept = {row.id for row in store.incidents.recent_incidents(limit=100)}
    assert gone == 34 - forgetting.low_water(20) and len(kept) == 18
    assert {old_open, recalled, *fixes} <= kept
    assert set(noise[-13:]) <= kept  # the newest noise stays: it has not decayed yet
    [summary] = store.importance.pruned()
    assert (summary["target"], summary["pattern"], summary["root_cause"], summary["incidents"]) == ("api", "consecutive", "timeout", 16)
    assert forgetting.describe(summary) == "pruned 16 consecutive incidents of api (timeout, Mar–Apr 2026)"
    assert forgetting.prune(quiet_writer(store), 20) == 0  # under the bound: nothing to do


def test_a_second_prune_adds_to_the_summary_row_of_its_group(db_path: str) -> None:
    clock = Clock(MAR_1)
    store = Store(db_path, clock=clock)
    for day in range(30):
        incident(store, clock, MAR_1 + day * DAY)
    clock.now = MAR_1 + 31 * DAY
    forgetting.prune(quiet_writer(store), 20)  # 30 → 18
    for day in range(31, 40):
        incident(store, clock, MAR_1 + day * DAY)
    clock.now = MAR_1 + 100 * DAY
    forgetting.prune(quiet_writer(store), 20)  # 27 → 18
    [summary] = store.importance.pruned()
    assert summary["incidents"] == 21 and summary["first_opened"] == MAR_1
    assert forgetting.describe(summary).startswith("pruned 21 consecutive incidents of api (timeout, Mar 2026")


def test_pruning_ten_thousand_incidents_is_quick(db_path: str) -> None:
    now = MAR_1 + 200 * DAY
    store = Store(db_path, clock=lambda: now)
    rows = [
        {
            "id": n,
            "target": f"t{n % 50}",
            "pattern": "consecutive",
            "status": "resolved",
            "opened_at": MAR_1 + n * 1000.0,
            "closed_at": MAR_1 + n * 1000.0 + 60,
            "root_cause": "timeout",
            "resolution": "restarted" if n % 100 == 0 else None,
        }
        for n in range(11_000)
    ]
    IncidentWrites(store).load_dump({"incidents": rows}, batch=5000)
    store.importance.mark_recalled([1, 2, 3])
    started = time.perf_counter()
    gone = forgetting.prune(quiet_writer(store), 10_000)
    seconds = time.perf_counter() - started
    assert gone == 2000 and store.incidents.count_incidents() == 9000
    assert all(store.incidents.incident(n) is not None for n in (1, 2, 3))  # recalled: kept, though the oldest
    assert sum(g["incidents"] for g in store.importance.pruned()) == 2000
    assert seconds < 5, f"pruning 2,000 of 11,000 incidents took {seconds:.1f}s"


def test_a_recall_shown_to_the_model_marks_the_incidents_recalled(db_path: str) -> None:
    store = Store(db_path)
    past = IncidentWrites(store).open_incident("api", "consecutive", "timeouts")
    IncidentWrites(store).close_incident(past, "restarted the pool")
    box = wiring.toolbox(Config(), store)
    box.begin(run_id=1, incident_id=None, focus="api")
    box.saw(f"#{past} [resolved] target api, consecutive: timeouts | resolution: restarted the pool")
    record = store.importance.recalls(past)
    assert record is not None and record["recalls"] == 1


def test_the_daemons_housekeeping_bounds_the_incidents(db_path: str) -> None:
    config = Config.model_validate({"database": db_path, "metrics": {"enabled": False}, "memory": {"max_incidents": 10}})
    daemon = Daemon(config, registry=CollectorRegistry())
    IncidentWrites(daemon.store).load_dump(
        {"incidents": [{"id": n, "target": "api", "pattern": "consecutive", "status": "resolved", "opened_at": 1e9 + n} for n in range(15)]}
    )
    daemon.housekeeping()
    count, pruned = daemon.store.incidents.count_incidents(), daemon.store.importance.pruned()
    daemon.close()
    assert count == 9 and pruned[0]["incidents"] == 6


def test_max_incidents_is_validated() -> None:
    assert MemoryConfig().max_incidents == 10_000
    with pytest.raises(ValueError, match="max_incidents"):
        MemoryConfig(max_incidents=0)


def test_memory_stats_say_what_was_pruned(db_path: str, tmp_path: Path) -> None:
    clock = Clock(MAR_1)
    store = Store(db_path, clock=clock)
    for day in range(20):
        incident(store, clock, MAR_1 + day * 4 * DAY)
    clock.now = MAR_1 + 100 * DAY
    forgetting.prune(quiet_writer(store), 10)
    store.close()
    result = CliRunner().invoke(main, ["memory", "stats", "--db", db_path])
    assert result.exit_code == 0, result.output
    assert "pruned 11 consecutive incidents of api (timeout, Mar–Apr 2026)" in result.output
