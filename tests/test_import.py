"""``monitor memory import`` on hostile files, and stored working memory that cannot crash a start (issue 8, 11)."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from outbox import quiet_writer
from postgres import query_plan
from prometheus_client import CollectorRegistry

from monitor.checks.engine import Result as Check
from monitor.cli.main import main
from monitor.config import Config
from monitor.memory import exports
from monitor.memory import working as memory
from monitor.store import Store
from monitor.store import memory as store_module
from monitor.store.writes import IncidentWrites


def export_file(tmp_path: Path, name: str = "e.json", **tables: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"format": "monitor-memory", "version": 1, **tables}))
    return path


def working(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"key": "working_memory", "value": json.dumps(steps), "updated_at": 1.0}]


def import_cli(path: Path, db: Path, *extra: str) -> Any:
    return CliRunner().invoke(main, ["memory", "import", str(path), "--db", str(db), *extra])


def digest(path: Path) -> str:
    """The file's bytes and what the store holds (under --store=postgres the file is empty; the rows are elsewhere)."""
    bytes_ = path.read_bytes()
    store = Store(path)
    rows = json.dumps(store.memory.dump(), sort_keys=True)
    store.close()
    return hashlib.sha256(bytes_ + rows.encode()).hexdigest()


def seeded(path: Path) -> Path:
    store = Store(path)
    IncidentWrites(store).open_incident("api", "consecutive", "api down")
    store.memory.save_memory("working_memory", [{"type": "task", "task": "target: api"}])
    store.close()
    return path


INCIDENT = {
    "id": 7,
    "target": "web",
    "pattern": "consecutive",
    "status": "resolved",
    "opened_at": 10.0,
    "summary": "web down",
    "resolution": "restarted",
}
RUN = {"id": 3, "incident_id": 7, "target": "web", "task": "target: web", "state": "success", "started_at": 11.0}
STEP = {"id": 1, "run_id": 3, "step_number": 1, "kind": "action", "observations": "web: CRITICAL"}


@pytest.mark.parametrize(
    ("tables", "where"),
    [
        ({"incidents": "all of them"}, "incidents: "),
        ({"incidents": [INCIDENT, 5]}, "incidents[1]: "),
        ({"incidents": [{**INCIDENT, "opened_at": "yesterday"}]}, "incidents[0].opened_at: "),
        ({"incidents": [{**INCIDENT, "target": None}]}, "incidents[0].target: "),
        ({"incidents": [{**INCIDENT, "id": [1]}]}, "incidents[0].id: "),
        ({"incidents": [{**INCIDENT, "silenced": 10**30}]}, "incidents[0].silenced: "),
        ({"incidents": [INCIDENT], "agent_runs": [{**RUN, "started_at": None}]}, "agent_runs[0].started_at: "),
        ({"agent_runs": [RUN], "agent_steps": [{**STEP, "run_id": {"a": 1}}]}, "agent_steps[0].run_id: "),
        ({"agent_runs": [RUN], "agent_steps": [{**STEP, "step_number": 10**20}]}, "agent_steps[0].step_number: "),
        ({"memory": [{"key": "working_memory", "value": 5, "updated_at": 1.0}]}, "memory[0].value: "),
        ({"memory": [{"key": "working_memory", "value": "not json", "updated_at": 1.0}]}, "memory[0].value: "),
        ({"memory": [{"key": "other", "value": "[]", "updated_at": 1.0}]}, "memory[0].key: "),
        ({"memory": [{"value": "[]", "updated_at": 1.0}]}, "memory[0].key: "),
        ({"memory": working([{"type": "task", "task": "t"}, {"type": "evil"}])}, "memory[0].value[1].type: "),
        ({"memory": working([{"type": "task"}])}, "memory[0].value[0].task: "),
        ({"memory": working([{"type": "action", "tool_calls": [{"name": 1}]}])}, "memory[0].value[0].tool_calls[0]"),
        ({"memory": working([{"type": "action", "tokens": ["a", "b"]}])}, "memory[0].value[0].tokens: "),
        ({"memory": working([{"type": "summary", "text": "s", "folded": "many"}])}, "memory[0].value[0].folded: "),
        # hostile input, round three, finding 8: each of these was imported
        ({"incidents": [{**INCIDENT, "opened_at": 1e308}]}, "incidents[0].opened_at: must be a finite number no larger"),
        ({"agent_runs": [{**RUN, "started_at": -1e300}]}, "agent_runs[0].started_at: must be a finite number"),
        ({"incidents": [{**INCIDENT, "summary": "web \ud800 down"}]}, "incidents[0].summary: a lone surrogate (\\ud800)"),
        (
            {"memory": working([{"type": "summary", "text": "s" * 5_000_000, "folded": 1}])},
            "memory[0].value[0].text: 5,000,000 characters, at most 4,000 in a summary",
        ),
        (
            {"memory": working([{"type": "action", "observations": "o" * 100_001}])},
            "memory[0].value[0].observations: 100,001 characters, at most 20,000 in a step",
        ),
        (
            {"agent_runs": [RUN], "agent_steps": [{**STEP, "model_output": "m" * 1_000_001}]},
            "agent_steps[0].model_output: 1,000,001 characters, at most 100,000",
        ),
    ],
)
def test_a_bad_entry_is_refused_with_its_path_and_nothing_changes(tmp_path: Path, tables: dict[str, Any], where: str) -> None:
    db = seeded(tmp_path / "m.db")
    before = digest(db)
    path = export_file(tmp_path, **tables)
    result = import_cli(path, db)
    assert result.exit_code == 3, result.output
    assert f"{path}: {where}" in result.output and "Traceback" not in result.output
    assert digest(db) == before


DEEP = '{"a":' * 200 + "1" + "}" * 200  # 950 were imported; parsing that deep fails under pytest's own stack
CALLS = '[{"name": "check_target", "id": "c1", "arguments": ' + DEEP + "}]"


@pytest.mark.parametrize(
    ("tables", "where"),
    [
        (
            {"memory": [{"key": "working_memory", "updated_at": 1.0, "value": '[{"type": "action", "tool_calls": ' + CALLS + "}]"}]},
            "memory[0].value[0].tool_calls[0].arguments: nested more than 32 levels deep",
        ),
        (
            {"agent_runs": [RUN], "agent_steps": [{**STEP, "tool_calls": CALLS}]},
            "agent_steps[0].tool_calls: nested more than 32 levels deep",
        ),
    ],
    ids=["working memory", "stored steps"],
)
def test_deeply_nested_tool_arguments_are_refused_naming_the_field(tmp_path: Path, tables: dict[str, Any], where: str) -> None:
    """Finding 8: 950 levels were imported, and every later run ended "crashed: maximum recursion depth"; more than
    32 is refused now, naming the field."""
    db = seeded(tmp_path / "m.db")
    before = digest(db)
    path = export_file(tmp_path, **tables)
    result = import_cli(path, db)
    assert result.exit_code == 3 and f"{path}: {where}" in result.output, result.output
    assert digest(db) == before


def test_a_smolagents_export_with_a_lone_surrogate_or_deep_arguments_names_where(tmp_path: Path) -> None:
    db = seeded(tmp_path / "m.db")
    path = tmp_path / "messages.json"
    path.write_text(
        json.dumps(
            {
                "format": "smolagents-memory",
                "version": 1,
                "form": "messages",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "New task:\ncheck web \ud800"}]}],
            }
        )
    )
    result = import_cli(path, db)
    assert result.exit_code == 3 and f"{path}: messages[0].content: a lone surrogate" in result.output, result.output
    path.write_text(
        '{"format": "smolagents-memory", "version": 1, "form": "full", "runs": [{"run": '
        '{"task": "t", "started_at": 1.0}, "steps": [{"step_number": 1, "tool_calls": [' + DEEP + "]}]}]}"
    )
    result = import_cli(path, db)
    assert result.exit_code == 3 and "runs[0].steps[0].tool_calls: nested more than 32" in result.output, result.output


def test_compaction_keeps_each_summary_line_short(tmp_path: Path) -> None:
    """Finding 8: compaction kept the last 12 summary lines whole (a 5 MB line went into every request)."""
    keep = memory.Memory(Config().memory)
    steps: list[Any] = [memory.SummaryStep("\n".join(["x" * 400_000] * 12), 3)]
    more = Config().memory.keep_steps + 2  # two fold in: ten of the summary's old lines stay
    steps += [memory.from_json({"type": "task", "task": f"target: t{n} " + "y" * 5000}, None) for n in range(more)]
    keep.compact(steps)
    summary = steps[0]
    assert isinstance(summary, memory.SummaryStep) and summary.folded == 3 + 2
    lines = summary.text.splitlines()
    assert len(lines) == memory.SUMMARY_LINES and max(map(len, lines)) <= memory.LINE_CHARS


def test_flags_written_as_true_and_false_are_imported_as_1_and_0(tmp_path: Path) -> None:
    db = seeded(tmp_path / "m.db")
    path = export_file(
        tmp_path,
        incidents=[{**INCIDENT, "silenced": True}],
        agent_runs=[RUN],
        agent_steps=[{**STEP, "tool_ok": True}, {**STEP, "id": 2, "step_number": 2, "is_final": True, "tool_ok": False}],
    )
    result = import_cli(path, db)
    assert result.exit_code == 0, result.output
    store = Store(db)
    [incident] = [i for i in store.memory.dump()["incidents"] if i["target"] == "web"]
    assert incident["silenced"] == 1
    [run] = store.runs.recent_runs(10)
    assert [(s.is_final, s.tool_ok) for s in store.runs.steps(run.id)] == [(0, 1), (1, 0)]


def test_an_unknown_working_memory_step_never_lands(tmp_path: Path) -> None:
    db = seeded(tmp_path / "m.db")
    result = import_cli(export_file(tmp_path, memory=working([{"type": "planning_v9", "plan": "obey"}])), db)
    assert result.exit_code == 3 and "unknown working-memory step type 'planning_v9'" in result.output
    assert Store(db).memory.load_memory("working_memory") == [{"type": "task", "task": "target: api"}]


def test_stored_bad_steps_are_skipped_and_logged_at_start(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    db = tmp_path / "m.db"
    store = Store(db)
    store.memory.save_memory(
        "working_memory",
        [
            {"type": "task", "task": "target: api"},
            {"type": "evil"},
            7,
            {"type": "action", "step_number": "x"},
            {"type": "summary", "text": "s"},
        ],
    )
    store.close()
    stats = CliRunner().invoke(main, ["memory", "stats", "--db", str(db), "--json"])
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.output)["working"]["steps"] == {"task": 1, "summary": 1}
    from monitor.daemon import Daemon

    config = Config.model_validate(
        {
            "database": str(db),
            "model": {"id": "builtin"},
            "metrics": {"enabled": False},
            "targets": [{"name": "api", "url": "http://127.0.0.1:9/", "timeout": "1s"}],
        }
    )
    with caplog.at_level(logging.WARNING, logger="monitor.memory.working"):
        daemon = Daemon(config, registry=CollectorRegistry())
    assert daemon.investigator is not None and daemon.investigator.restored == 2
    assert "skipped 3 saved working-memory steps" in caplog.text and "'evil'" in caplog.text
    daemon.close()


def test_a_value_that_is_not_json_is_skipped_at_start(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db")
    with store.transaction() as db:
        db.execute("INSERT INTO memory (key, value, updated_at) VALUES ('working_memory', '{oops', 1)")
    assert memory.saved_steps(store) == []
    assert memory.report(store)["working"]["steps"] == {}


def test_working_memory_merges_imported_steps_after_the_current_ones(tmp_path: Path) -> None:
    db = seeded(tmp_path / "m.db")
    imported = [{"type": "task", "task": "target: web"}, {"type": "task", "task": "target: api"}]
    path = export_file(tmp_path, memory=working(imported))
    assert import_cli(path, db).exit_code == 0
    assert import_cli(path, db).exit_code == 0  # a second import adds nothing
    saved = Store(db).memory.load_memory("working_memory")
    assert [s["task"] for s in saved] == ["target: api", "target: web"]


def test_a_merge_past_keep_steps_is_compacted_into_the_summary(tmp_path: Path) -> None:
    db = seeded(tmp_path / "m.db")
    config = tmp_path / "c.yaml"
    config.write_text("memory: {keep_steps: 3}\n")
    imported = [{"type": "task", "task": f"target: t{n}"} for n in range(6)]
    result = import_cli(export_file(tmp_path, memory=working(imported)), db, "--config", str(config))
    assert result.exit_code == 0, result.output
    saved = Store(db).memory.load_memory("working_memory")
    assert saved[0]["type"] == "summary" and saved[0]["folded"] == 4
    assert "task: target: api" in saved[0]["text"]
    assert [s.get("task") for s in saved[1:]] == ["target: t3", "target: t4", "target: t5"]


def many(tmp_path: Path, incidents: int, runs: int) -> dict[str, Any]:
    path = export_file(
        tmp_path,
        "many.json",
        incidents=[{**INCIDENT, "id": n, "opened_at": float(n)} for n in range(incidents)],
        agent_runs=[{**RUN, "id": n, "incident_id": n, "started_at": float(n)} for n in range(runs)],
        agent_steps=[{**STEP, "id": n, "run_id": n} for n in range(runs)],
    )
    return exports.check(json.loads(path.read_text()))


@pytest.mark.sqlite_only("SQLite's planner; PostgreSQL's picks among indexes by statistics an empty table lacks")
def test_the_import_lookups_use_their_indexes(tmp_path: Path) -> None:
    store = Store(tmp_path / "m.db")
    for sql, params, index in [
        (store_module.INCIDENT_SEEN, ("api", "consecutive", 1.0), "incidents_dedup"),
        (store_module.RUN_SEEN, (1.0, "task"), "agent_runs_started"),
    ]:
        plan = query_plan(store, sql, params)
        assert index in plan, plan


def test_an_import_lets_another_writer_in_between_its_batches(tmp_path: Path) -> None:
    store, other = Store(tmp_path / "m.db"), Store(tmp_path / "m.db", timeout=0)
    seen: list[dict[str, int]] = []

    def write_between(added: dict[str, int]) -> None:
        other.results.add_results([Check("api", "http://api/", True, "ok", 200, 1.0, None, "", float(len(seen)))])
        seen.append(dict(added))

    added = IncidentWrites(store).load_dump(many(tmp_path, 250, 100), batch=50, progress=write_between)
    assert added == {"incidents": 250, "agent_runs": 100, "agent_steps": 100, "memory": 0, "incident_links": 0}
    assert [s["incidents"] for s in seen[:5]] == [50, 100, 150, 200, 250]
    assert [s["agent_runs"] for s in seen[5:]] == [25, 50, 75, 100]  # a run and its step weigh two rows
    assert other.results.count_results() == 9


def test_an_import_cut_short_completes_when_run_again(tmp_path: Path) -> None:
    store, data = Store(tmp_path / "m.db"), many(tmp_path, 60, 60)

    def crash(added: dict[str, int]) -> None:
        if added["agent_runs"]:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        IncidentWrites(store).load_dump(data, batch=20, progress=crash)
    assert store.memory.counts()["agent_runs"] == 10
    IncidentWrites(store).load_dump(data, batch=20)
    counts = store.memory.counts()
    assert (counts["incidents"], counts["agent_runs"], counts["agent_steps"]) == (60, 60, 60)


# -- fuzz: whatever the file holds, an import succeeds or is refused with a ValueError, never a traceback --

LEAF = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
ANY = st.recursive(LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any] = ANY) -> st.SearchStrategy[Any]:
    """``good`` 19 times in 20, else anything: most files get deep into the import before a bad value."""
    return st.integers(0, 19).flatmap(lambda n: bad if n == 0 else good)


VALUES: dict[str, st.SearchStrategy[Any]] = {
    "text": st.text(max_size=10),
    "integer": st.integers(-1, 5),
    "number": st.floats(0, 2e9) | st.integers(0, 9),
    "flag": st.booleans() | st.sampled_from([0, 1]),
    "scalar": st.text(max_size=5) | st.integers(),
    "status": st.sampled_from(["open", "resolved"]),
    "arguments": st.dictionaries(st.text(max_size=3), LEAF, max_size=2),
    "tokens": st.lists(st.integers(0, 99), min_size=2, max_size=2),
}


def entry(fields: dict[str, str]) -> st.SearchStrategy[dict[str, Any]]:
    """An object with a table's or a step's fields: the required ones always, the others sometimes."""

    def value(kind: str) -> st.SearchStrategy[Any]:
        if kind.rstrip("!") == "list":
            return mostly(st.lists(entry(exports.TOOL_CALL), max_size=2))
        return mostly(VALUES[kind.rstrip("!")])

    return st.fixed_dictionaries(
        {n: value(k) for n, k in fields.items() if k.endswith("!")},
        optional={n: value(k) for n, k in fields.items() if not k.endswith("!")},
    )


STEP_ENTRY = st.sampled_from([*exports.STEPS, "evil"]).flatmap(
    lambda kind: entry(exports.STEPS.get(kind, {})).map(lambda rest: {"type": kind, **rest})
)
WORKING = st.fixed_dictionaries(
    {
        "key": mostly(st.just("working_memory")),
        "updated_at": VALUES["number"],
        "value": mostly(st.lists(mostly(STEP_ENTRY), max_size=5).map(json.dumps)),
    }
)
EXPORTS = mostly(
    st.fixed_dictionaries(
        {"format": mostly(st.just("monitor-memory"))},
        optional={
            "version": mostly(st.just(1)),
            "memory": mostly(st.lists(WORKING, max_size=2)),
            **{name: mostly(st.lists(entry(exports.ROWS[name]), max_size=4)) for name in ("incidents", "agent_runs", "agent_steps")},
        },
    )
)


def test_fuzzed_imports_never_raise_anything_but_a_clear_refusal(tmp_path: Path) -> None:
    store, path = Store(tmp_path / "m.db"), tmp_path / "fuzz.json"

    @settings(
        max_examples=400,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=EXPORTS)
    def one(data: Any) -> None:
        path.write_text(json.dumps(data))
        before = store.memory.counts()
        try:
            added = memory.import_(quiet_writer(store), str(path))
            event(f"imported {'rows' if any(added.values()) else 'nothing'}")
        except ValueError as exc:
            assert str(exc).startswith(f"{path}: ")
            assert store.memory.counts() == before
            event("refused")
        memory.report(store)  # what `memory stats` and a start read back
        memory.export(store, str(tmp_path / "again.json"))

    one()
    store.close()


def test_fuzzed_bytes_are_refused_clearly(tmp_path: Path) -> None:
    store, path = Store(tmp_path / "m.db"), tmp_path / "fuzz.json"

    @settings(max_examples=100, deadline=None, derandomize=True, database=None)
    @given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
    def one(raw: bytes) -> None:
        path.write_bytes(raw)
        try:
            memory.import_(quiet_writer(store), str(path))
        except ValueError as exc:
            assert str(exc).startswith(f"{path}: ")

    one()
    store.close()


def test_an_imported_incident_with_a_null_status_takes_the_default(tmp_path: Path) -> None:
    """Hypothesis found it: ``"status": null`` passed the fields' check, then broke the NOT NULL column."""
    path = tmp_path / "memory.json"
    path.write_text(
        json.dumps({"format": "monitor-memory", "memory": [], "incidents": [{"pattern": "", "opened_at": 0, "target": "", "status": None}]})
    )
    store = Store(str(tmp_path / "m.db"))
    try:
        assert memory.import_(quiet_writer(store), str(path))["incidents"] == 1
        [row] = store.incidents.incidents_page(limit=5)
        assert row.status == "open"
    finally:
        store.close()


def test_an_imported_time_given_as_true_or_false_is_refused_by_name(tmp_path: Path) -> None:
    """Hypothesis found it on PostgreSQL: ``"opened_at": false`` passed as a number (a bool is an int here)."""
    path = tmp_path / "memory.json"
    path.write_text(
        json.dumps({"format": "monitor-memory", "memory": [], "incidents": [{"pattern": "", "opened_at": False, "target": ""}]})
    )
    store = Store(str(tmp_path / "m.db"))
    try:
        with pytest.raises(Exception, match="opened_at"):
            memory.import_(quiet_writer(store), str(path))
        assert store.incidents.incidents_page(limit=5) == []
    finally:
        store.close()
