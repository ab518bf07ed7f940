"""Detection in the workers (issue 34): a worker's judge makes the verdicts, the recorder stores each batch with one
statement and opens, updates and resolves exactly the incidents it did when it judged every result itself."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

import monitor
from monitor.config import Config
from monitor.core.results import Result, StoredResult
from monitor.daemon import Cycle, daemon_cycle
from monitor.incidents.verdicts import Judge, Settings
from monitor.metrics import Metrics
from monitor.store import Store
from monitor.store.engines import Sqlite

NAMES = ["api", "db", "web", "cdn"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def config(db_path: str) -> Config:
    return Config.model_validate(
        {
            "database": db_path,
            "agent": {"mode": "off"},
            "metrics": {"enabled": False},
            "detectors": {"consecutive": 3, "window_failures": 3, "window_size": 6, "recover_after": 2, "page_on_drift": True},
            "targets": [{"name": name, "url": f"http://127.0.0.1:9/{name}", "interval": "1s"} for name in NAMES],
        }
    )


def script() -> list[list[tuple[str, bool, float]]]:
    """Rounds of (target, ok, latency_ms): api goes down and recovers, db flaps, web slows down, cdn stays up."""
    rounds = []
    for n in range(80):
        api = not 10 <= n < 20
        db = n < 30 or n % 3 != 0
        web_ms = 2.0 if n < 60 else 80.0
        rounds.append([("api", api, 3.0), ("db", db, 4.0), ("web", True, web_ms), ("cdn", True, 1.0)])
    return rounds


def result(name: str, ok: bool, ms: float, at: float) -> Result:
    if ok:
        return Result(name, f"http://127.0.0.1:9/{name}", True, "ok", 200, ms, None, "", at, phases={"connect": 0.2})
    return Result(name, f"http://127.0.0.1:9/{name}", False, "critical", 503, ms, "http_5xx", "HTTP 503", at, excerpt="HTTP/1.1 503")


def run(db_path: str, judged: bool) -> tuple[list[tuple[str, str, str]], list[dict[str, Any]], Cycle]:
    """The script through the cycle: the parent judging (``after_checks``), or a worker's judge (``after_batch``)."""
    clock = Clock()
    cfg = config(db_path)
    store = Store(db_path, clock=clock)
    cycle = daemon_cycle(cfg, store, metrics=Metrics(CollectorRegistry()), clock=clock)
    judge = Judge(lambda name: store.results.recent_results(name, 200), clock=clock)
    judge.follow(cfg.targets, Settings(cfg.detectors))
    events: list[tuple[str, str, str]] = []
    for round_ in script():
        clock.now += 1.0
        results = [result(name, ok, ms, clock.now - ms / 1000) for name, ok, ms in round_]
        changed = cycle.after_batch(judge(results)) if judged else cycle.after_checks(results)
        events += [(e.kind, e.incident.target, e.incident.pattern) for e in changed]
    incidents: list[dict[str, Any]] = []
    while (row := store.incidents.incident(len(incidents) + 1)) is not None:
        incidents.append({key: getattr(row, key) for key in ("target", "pattern", "status", "severity", "summary", "evidence", "notes")})
    return events, incidents, cycle


def test_a_workers_verdicts_open_update_and_resolve_exactly_the_incidents_the_parent_did(tmp_path: Any) -> None:
    before, before_incidents, _ = run(str(tmp_path / "before.db"), judged=False)
    now, now_incidents, cycle = run(str(tmp_path / "now.db"), judged=True)
    assert {kind for kind, _, _ in before} >= {"opened", "resolved"}  # the script does open and close incidents
    assert {target for _, target, _ in before} == {"api", "db", "web"}
    assert now == before
    assert now_incidents == before_incidents
    assert cycle.store.results.count_results() == 80 * len(NAMES)


def test_the_detectors_are_run_by_one_judge() -> None:
    """The tracker and a worker's judge both ask monitor.incidents.judge: nothing else runs the detectors or says a
    target recovered, so the two process modes cannot judge a window differently."""
    root = Path(monitor.__file__).parent
    callers = {
        str(path.relative_to(root.parent))
        for path in root.rglob("*.py")
        if any(call in path.read_text() for call in ("patterns.detect(", "patterns.recovered("))
    }
    assert callers == {"monitor/incidents/judge.py"}


@pytest.mark.sqlite_only("SQLite's trace of each statement")
def test_a_healthy_batch_costs_the_recorder_two_statements_however_many_results(tmp_path: Any) -> None:
    db_path = str(tmp_path / "m.db")
    cfg = config(db_path)
    store = Store(db_path)
    cycle = daemon_cycle(cfg, store, metrics=Metrics(CollectorRegistry()))
    judge = Judge(lambda name: store.results.recent_results(name, 200))
    judge.follow(cfg.targets, Settings(cfg.detectors))
    at = time.time()
    cycle.after_batch(judge([result(name, True, 1.0, at) for name in NAMES]))  # first results: not yet recovered
    statements: list[str] = []
    assert isinstance(store.engine, Sqlite)
    conn = store.engine.conn
    conn.set_trace_callback(statements.append)
    batch = judge([result(name, True, 1.0, at + n) for n in range(1, 26) for name in NAMES])
    assert batch.verdicts == {}  # healthy: nothing but rows and counts goes up
    assert cycle.after_batch(batch) == []
    conn.set_trace_callback(None)
    work = [s for s in statements if not s.startswith(("BEGIN", "COMMIT", "--"))]
    # executemany traces its one INSERT once a row (values filled in); the only read is which targets have an incident open
    assert {s.split(" VALUES ")[0].split()[2] if s.startswith("INSERT") else s.split(" WHERE ")[0] for s in work} == {
        "results_recent",  # SQLite's results go there first (schema._v25)
        "SELECT DISTINCT target FROM incidents",
    }
    assert sum(s.startswith("SELECT") for s in work) == 1
    assert cycle.metrics is not None
    registry = cycle.metrics.registry
    assert registry.get_sample_value("monitor_checks_total", {"target": "api", "kind": "http", "result": "ok"}) == 26
    assert registry.get_sample_value("monitor_check_phase_duration_seconds_count", {"kind": "http", "phase": "connect"}) == 104
    assert registry.get_sample_value("monitor_result_age_seconds_count") == 104


def test_a_judge_keeps_windows_of_its_share_only_and_reads_a_returning_one_again(tmp_path: Any) -> None:
    db_path = str(tmp_path / "j.db")
    cfg = config(db_path)
    store = Store(db_path)
    reads: list[str] = []

    def read(name: str) -> list[StoredResult]:
        reads.append(name)
        return store.results.recent_results(name, 200)

    judge = Judge(read)
    judge.follow(cfg.targets[:1], Settings(cfg.detectors))  # api only
    at = 1_000_000.0
    fails = [result("api", False, 1.0, at + n) for n in range(2)]
    store.results.add_results(fails)
    assert judge([result("api", False, 1.0, at + 2)]).verdicts[0].paging[0].name == "consecutive"  # 2 stored + 1
    judge([result("db", True, 1.0, at + 2)])  # a check that ended after db left its share: judged, not kept
    judge([result("db", True, 1.0, at + 3)])
    assert reads == ["api", "db", "db"]
    judge.follow(cfg.targets[1:2], Settings(cfg.detectors))  # api goes to another worker, db comes here
    judge([result("api", True, 1.0, at + 3)])
    assert reads[-1] == "api"


def test_a_batch_the_database_refused_is_kept_and_stored_by_the_next(tmp_path: Any, write_lock: Any) -> None:
    db_path = str(tmp_path / "l.db")
    cfg = config(db_path)
    store = Store(db_path, timeout=0.05)
    cycle = daemon_cycle(cfg, store, metrics=Metrics(CollectorRegistry()))
    judge = Judge(lambda name: [])
    judge.follow(cfg.targets, Settings(cfg.detectors))
    at = time.time()
    with write_lock(db_path):
        assert cycle.after_batch(judge([result(name, True, 1.0, at) for name in NAMES])) == []
        assert cycle.unsaved() == len(NAMES)
    cycle.after_batch(judge([result(name, True, 1.0, at + 1) for name in NAMES]))
    assert (store.results.count_results(), cycle.unsaved()) == (2 * len(NAMES), 0)
