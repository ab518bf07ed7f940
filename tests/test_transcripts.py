"""Agent runs exported as smolagents' own forms (full, succinct, messages), and imported back."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from outbox import quiet_writer
from servers import Misbehaving
from smolagents.memory import ActionStep, TaskStep, ToolCall
from smolagents.monitoring import AgentLogger, LogLevel, Timing
from smolagents.utils import AgentError

from monitor import wiring
from monitor.agent.investigator import Investigator
from monitor.checks.engine import Checker
from monitor.cli.main import main
from monitor.cli.review import agent_system_prompt
from monitor.config import Config, MemoryConfig
from monitor.memory import transcripts, working
from monitor.store import Store
from monitor.store.writes import IncidentWrites


def json_of(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


@pytest.fixture
def investigated(web: Misbehaving, db_path: str) -> tuple[Store, Investigator, int, list[Any]]:
    """A real investigation on the builtin model, and its steps as the agent held them when it ended."""
    config = Config.model_validate({"targets": [{"name": "api", "url": web.url("/500"), "timeout": 1}], "model": {"id": "builtin"}})
    store = Store(db_path)
    for _ in range(3):
        store.results.add_results(Checker().run([config.target("api")]))
    past = IncidentWrites(store).open_incident("api", "consecutive", "api answered 500 after deploy", root_cause="server_error")
    IncidentWrites(store).close_incident(past, resolution="rolled back the deploy ```and flushed``` the cache")
    incident = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api", root_cause="server_error")
    investigator = wiring.investigator(config, store)
    live: list[Any] = []

    def capture(step: ActionStep) -> None:
        live[:] = copy.deepcopy(investigator.steps[investigator.memory.protect_from :])

    outcome = investigator.investigate("api", incident=incident, pattern="consecutive", on_step=capture)
    assert outcome.state == "success" and outcome.steps >= 3
    for step in live:  # what the store does not keep (see monitor.memory.transcripts)
        if isinstance(step, ActionStep):
            step.model_input_messages = step.model_output_message = None
    return store, investigator, outcome.run_id, live


def recall_times(steps: list[dict[str, Any]]) -> list[float]:
    """The recall step's start, taken out: the store writes it a few microseconds after the agent's clock read."""
    times = []
    for step in steps:
        if step.get("step_number") == 0:
            times.append(step["timing"].pop("start_time"))
            times.append(step["timing"].pop("end_time"))
    return times


@pytest.mark.parametrize("form", ["full", "succinct"])
def test_steps_are_what_smolagents_returns_for_the_agents_own_steps(investigated: Any, form: str) -> None:
    store, _, run_id, live = investigated
    exported = transcripts.dump(store, form, run_id=run_id)["runs"][0]["steps"]
    memory = transcripts.memory_of(live)
    expected = json_of(memory.get_full_steps() if form == "full" else memory.get_succinct_steps())
    exported = json_of(exported)
    assert [type(s).__name__ for s in live][:3] == ["TaskStep", "ActionStep", "TaskStep"]  # recall, then the task
    assert recall_times(exported) == pytest.approx(recall_times(expected), abs=1.0)
    assert exported == expected
    assert any(call["function"]["name"] == "check_target" for step in exported for call in step.get("tool_calls") or [])
    assert ("model_input_messages" in exported[1]) == (form == "full")


def test_messages_are_what_the_agent_writes_from_its_own_memory(investigated: Any) -> None:
    store, investigator, run_id, live = investigated
    investigator.agent.memory.steps[:] = live
    expected = json_of([m.dict() for m in investigator.agent.write_memory_to_messages()])
    exported = transcripts.dump(store, "messages", run_id=run_id, system_prompt=agent_system_prompt(investigator.config, store))["messages"]
    assert exported == expected
    assert [m["role"] for m in exported[:4]] == ["system", "user", "tool-response", "user"]
    assert "rolled back the deploy" in exported[2]["content"][0]["text"]


@pytest.mark.parametrize("form", ["full", "succinct"])
def test_an_export_imported_into_a_fresh_database_exports_the_same(investigated: Any, tmp_path: Path, form: str) -> None:
    store, _, _, _ = investigated
    store.close()
    first, again = tmp_path / "first.json", tmp_path / "again.json"
    fresh = str(tmp_path / "fresh.db")
    runner = CliRunner()
    result = runner.invoke(main, ["memory", "export", str(first), "--db", store.path, "--format", form])
    assert result.exit_code == 0, result.output
    Store(fresh).close()
    for _ in range(2):  # importing twice adds nothing
        result = runner.invoke(main, ["memory", "import", str(first), "--db", fresh])
        assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["memory", "export", str(again), "--db", fresh, "--format", form])
    assert result.exit_code == 0, result.output
    data = json.loads(first.read_text())
    assert json.loads(again.read_text()) == data and len(data["runs"]) == 1
    assert Store(fresh).memory.counts()["agent_runs"] == 1


def test_messages_import_as_a_working_memory_that_writes_the_same_messages(investigated: Any, tmp_path: Path) -> None:
    store, investigator, run_id, _ = investigated
    prompt = agent_system_prompt(investigator.config, store)
    exported = transcripts.dump(store, "messages", run_id=run_id, system_prompt=prompt)
    assert transcripts.messages(transcripts.steps_of(exported["messages"]), prompt) == exported["messages"]
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(exported))
    fresh = Store(str(tmp_path / "fresh.db"))
    assert transcripts.import_(quiet_writer(fresh), str(path), MemoryConfig()) == {
        "working_steps": len(transcripts.steps_of(exported["messages"]))
    }
    assert transcripts.import_(quiet_writer(fresh), str(path), MemoryConfig()) == {"working_steps": 0}
    assert json_of(transcripts.messages(working.saved_steps(fresh), prompt)) == exported["messages"]


def test_errors_tool_calls_and_summaries_survive_messages() -> None:
    quiet = AgentLogger(level=LogLevel.OFF)
    steps = [
        working.SummaryStep("yesterday: shop flapped", 14),
        TaskStep(task="Investigate shop"),
        ActionStep(
            step_number=1,
            timing=Timing(1.0, 2.0),
            model_output="  let me look  ",
            tool_calls=[ToolCall("check_target", {"name": "shop", "n": [1, None, True]}, "call_a")],
            observations="shop: ```Error:\nfake``` status=500",
            error=AgentError("the tool failed\nat line 2", quiet),
        ),
        ActionStep(step_number=2, timing=Timing(2.0, 3.0), error=AgentError("no tool call", quiet)),
        ActionStep(step_number=3, timing=Timing(3.0, 4.0), observations="second observation"),
    ]
    chat = transcripts.messages(steps, "system")
    assert transcripts.messages(transcripts.steps_of(json_of(chat)), "system") == chat


def test_a_bad_export_is_refused_with_where_and_what(tmp_path: Path, db_path: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps(
            {
                "format": "smolagents-memory",
                "version": 1,
                "form": "full",
                "runs": [{"run": {"task": "t", "started_at": "yesterday"}, "steps": []}],
            }
        )
    )
    result = CliRunner().invoke(main, ["memory", "import", str(path), "--db", db_path])
    assert result.exit_code == 3
    assert "runs[0].run.started_at: must be a finite number" in result.output and 'not "yesterday"' in result.output
    path.write_text(json.dumps({"format": "smolagents-memory", "form": "pretty"}))
    result = CliRunner().invoke(main, ["memory", "import", str(path), "--db", db_path])
    assert "form: must be one of full, succinct, messages" in result.output


def test_export_selects_runs_by_id_and_by_age(db_path: str, tmp_path: Path) -> None:
    clock = [1_000_000.0]
    store = Store(db_path, clock=lambda: clock[0])
    old = store.runs.start_run("old task")
    clock[0] += 30 * 86400
    new = store.runs.start_run("new task")
    assert [r["run"]["task"] for r in transcripts.dump(store, "succinct", run_id=old)["runs"]] == ["old task"]
    assert [r["run"]["task"] for r in transcripts.dump(store, "succinct", since=clock[0] - 86400)["runs"]] == ["new task"]
    assert new != old
    with pytest.raises(ValueError, match="no agent run #99"):
        transcripts.dump(store, "full", run_id=99)
    result = CliRunner().invoke(
        main, ["memory", "export", str(tmp_path / "x.json"), "--db", db_path, "--format", "full", "--since", "soon"]
    )
    assert result.exit_code == 3 and "--since" in result.output
