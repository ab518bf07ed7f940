"""One writer for incident state: the scheduler's and the agent's updates, run at the same time."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections import Counter
from pathlib import Path

from outbox import quiet_writer
from past import known
from prometheus_client import CollectorRegistry
from smolagents.memory import ActionStep, ToolCall
from smolagents.monitoring import Timing

from monitor.checks.engine import Result
from monitor.config import Config
from monitor.daemon import Daemon
from monitor.store import Store
from monitor.store.engines import Sqlite
from monitor.store.postgres import Postgres
from monitor.store.writes import IncidentWrites

INTERLEAVINGS = 500
SHAPE = "xxx.."  # per iteration: failed, failed, failed, passed, passed: incidents open and resolve


def daemon_for(db_path: str) -> Daemon:
    config = Config.model_validate(
        {
            "database": db_path,
            "targets": [{"name": "api", "url": "http://127.0.0.1:9/api"}],
            "detectors": {"consecutive": 2, "recover_after": 2},
            "model": {"id": "builtin"},
            # first messages go at once (0s, no wait for the diagnosis), so that each transition is queued as it happens
            "alerts": {"webhooks": [{"url": "http://127.0.0.1:9/hook"}], "wait_for_diagnosis": "0s"},
            "metrics": {"enabled": False},
        }
    )
    daemon = Daemon(config, registry=CollectorRegistry())
    daemon.cycle.queue = queue.Queue()  # as the running daemon does: investigations wait for the agent worker
    return daemon


def agent_step() -> ActionStep:
    call = ToolCall(name="check_target", arguments={"name": "api"}, id="call-1")
    return ActionStep(step_number=1, timing=Timing(start_time=0.0), tool_calls=[call])


def transitions(store: Store) -> Counter[tuple[int, str]]:
    """Every notification ever queued, as (incident, event): a transition sent twice counts twice."""
    rows = store._rows("SELECT payload FROM outbox")
    return Counter((json.loads(r["payload"])["incident"]["id"], json.loads(r["payload"])["event"]) for r in rows)


def test_the_scheduler_and_the_agent_never_duplicate_an_incident_or_a_transition(db_path: str) -> None:
    daemon = daemon_for(db_path)
    store, cycle, investigator = daemon.store, daemon.cycle, daemon.investigator
    assert investigator is not None
    duplicates: set[int] = set()
    gate = threading.Barrier(2, timeout=10)

    def agent() -> None:
        for _ in range(INTERLEAVINGS):
            gate.wait()
            investigator.watch_patterns(agent_step())  # its changes are published by the one writer
            gate.wait()

    worker = threading.Thread(target=agent)
    worker.start()
    start = time.time() - 30  # results the detectors judge: newer than backlog.stale_after intervals
    try:
        for i in range(INTERLEAVINGS):
            ok = SHAPE[i % len(SHAPE)] == "."
            result = Result(
                "api",
                "http://127.0.0.1:9/api",
                ok,
                "ok" if ok else "critical",
                200 if ok else 500,
                5.0,
                None if ok else "unexpected_status",
                "",
                start + i * 0.1,
            )
            gate.wait()
            cycle.after_checks([result])
            gate.wait()
            duplicates.update(row.id for row in store.incidents.open_incidents("api")[:-1])
    except BaseException:
        gate.abort()  # only on failure: an abort would break the agent's last wait
        raise
    finally:
        worker.join(10)
    sent = transitions(store)
    assert store.incidents.count_incidents() >= INTERLEAVINGS // len(SHAPE) - 1
    repeated = sum(count - 1 for count in sent.values())
    assert (len(duplicates), repeated) == (0, 0), f"{len(duplicates)} duplicate incidents, {repeated} repeated transitions"
    assert {kind for _, kind in sent} == {"opened", "resolved"}


def test_the_store_refuses_a_second_open_incident_for_a_target(tmp_path: Path) -> None:
    import pytest

    store = Store(tmp_path / "m.db")
    IncidentWrites(store).open_incident("api", "consecutive", "down")
    with pytest.raises(store.engine.integrity):
        IncidentWrites(store).open_incident("api", "window", "down again")
    IncidentWrites(store).open_incident("web", "consecutive", "down")
    assert [i.target for i in store.incidents.open_incidents()] == ["api", "web"]


def test_even_two_trackers_cannot_open_twice_or_resolve_twice(db_path: str) -> None:
    """The store's constraints, not the shared lock: a second writer's transition finds nothing to do."""
    from monitor.config import Detectors
    from monitor.incidents.tracker import Tracker

    store = Store(db_path)
    detectors = Detectors(consecutive=2, recover_after=2)
    writers = [Tracker(store, detectors, writer=quiet_writer(store)), Tracker(store, detectors, writer=quiet_writer(store))]
    events: list[list[tuple[int, str]]] = [[], []]
    gate = threading.Barrier(2, timeout=10)

    def write(n: int) -> None:
        for _ in range(INTERLEAVINGS):
            gate.wait()
            events[n] += [(e.incident.id, e.kind) for e in writers[n].observe("api")[1]]
            gate.wait()

    other = threading.Thread(target=write, args=(1,))
    other.start()
    for i in range(INTERLEAVINGS):
        ok = SHAPE[i % len(SHAPE)] == "."
        store.results.add_results([Result("api", "u", ok, "ok" if ok else "critical", 200, 5.0, None, "", float(i))])
        gate.wait()
        events[0] += [(e.incident.id, e.kind) for e in writers[0].observe("api")[1]]
        gate.wait()
        assert len(store.incidents.open_incidents("api")) <= 1
    other.join(10)
    sent = Counter(events[0] + events[1])
    assert store.incidents.count_incidents() == INTERLEAVINGS // len(SHAPE)
    assert [key for key, count in sent.items() if count > 1] == []
    kinds = Counter(kind for _, kind in sent)
    assert (kinds["opened"], kinds["resolved"]) == (INTERLEAVINGS // len(SHAPE),) * 2


def test_an_import_never_makes_a_second_open_incident(db_path: str) -> None:
    store = Store(db_path)
    mine = IncidentWrites(store).open_incident("api", "consecutive", "down")
    rows = [
        {"target": "api", "pattern": "window", "status": "open", "opened_at": 1.0},
        {"target": "web", "pattern": "window", "status": "open", "opened_at": 2.0},
        {"target": "web", "pattern": "flapping", "status": "open", "opened_at": 3.0},
    ]
    assert IncidentWrites(store).load_dump({"incidents": rows})["incidents"] == 3
    assert [(i.id, i.target) for i in store.incidents.open_incidents()] == [(mine, "api"), (mine + 2, "web")]
    found = store.incidents.incident(mine + 1)
    assert found is not None and "already had an open incident" in (found.notes or "")


def test_incidents_of_targets_no_longer_configured_are_closed_with_a_note(tmp_path: Path) -> None:
    path = tmp_path / "monitor.yaml"
    path.write_text(
        "targets:\n  - {name: api, url: 'http://127.0.0.1:9/api'}\n  - {name: web, url: 'http://127.0.0.1:9/'}\n"
        "alerts:\n  webhooks: [{url: 'http://127.0.0.1:9/hook'}]\nagent: {mode: 'off'}\n"
        "metrics: {enabled: false}\n"
    )
    from monitor import config as config_module

    daemon = Daemon(config_module.load(str(path)), store=Store(tmp_path / "m.db"), registry=CollectorRegistry(), config_path=str(path))
    store = daemon.store
    kept, removed = (
        IncidentWrites(store).open_incident("api", "consecutive", "down"),
        IncidentWrites(store).open_incident("web", "consecutive", "down"),
    )
    stray = IncidentWrites(store).open_incident("http://127.0.0.1:9/x?token=***", "check_failed", "from monitor investigate URL")
    daemon.housekeeping()
    assert [i.id for i in store.incidents.open_incidents()] == [kept, removed]
    closed = store.incidents.incident(stray)
    assert closed is not None and "no longer configured" in (closed.notes or "")

    path.write_text(path.read_text().replace("  - {name: web, url: 'http://127.0.0.1:9/'}\n", ""))
    assert daemon.reload()
    assert [i.id for i in store.incidents.open_incidents()] == [kept]
    gone = store.incidents.incident(removed)
    assert gone is not None and "no longer configured" in (gone.notes or "")
    assert sorted(k for k in transitions(store) if k[1] == "resolved") == [(removed, "resolved"), (stray, "resolved")]


def test_a_run_cut_short_by_a_crash_leaves_its_incident_saying_so(db_path: str) -> None:
    store = Store(db_path)
    incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
    run = store.runs.start_run("investigate api", target="api", incident_id=incident)
    assert isinstance(store.engine, (Sqlite, Postgres))  # either store: its one connection, cut
    store.engine.conn.close()  # kill -9: the run stays 'running'

    daemon = Daemon(
        Config.model_validate({"agent": {"mode": "off"}, "metrics": {"enabled": False}}), store=Store(db_path), registry=CollectorRegistry()
    )
    row = known(daemon.store.incidents.incident(incident))
    assert known(daemon.store.runs.run(run)).state == "interrupted"
    assert row.agent_state == "interrupted"
    assert f"agent run #{run} was cut short" in (row.notes or "")
