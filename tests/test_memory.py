"""Working memory: callbacks, compaction bounds, persistence, stats, export and import."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from click.testing import CliRunner
from smolagents.memory import ActionStep, MemoryStep, TaskStep, ToolCall
from smolagents.monitoring import Timing

from monitor.cli.main import main
from monitor.config import MemoryConfig
from monitor.core.runs import NewStep
from monitor.memory import working as memory
from monitor.memory.working import Memory, SummaryStep
from monitor.store import Store
from monitor.store.writes import IncidentWrites


def action(number: int, observation: str = "ok") -> ActionStep:
    return ActionStep(
        step_number=number,
        timing=Timing(start_time=1.0, end_time=2.0),
        observations=observation,
        tool_calls=[ToolCall("check_target", {"name": "api"}, f"call_{number}")],
    )


def test_observations_are_stamped_capped_and_images_dropped() -> None:
    mem = Memory(MemoryConfig(max_observation=100))
    step = action(1, "x" * 500)
    step.observations_images = ["an image"]
    mem.stamp(step)
    mem.trim(step)
    assert step.observations is not None
    assert step.observations.startswith("[1970-01-01T00:00:02Z] xxx")
    assert step.observations.endswith("[... 423 characters truncated]") and step.observations_images is None


def test_compaction_folds_old_steps_into_one_capped_summary() -> None:
    mem = Memory(MemoryConfig(keep_steps=4))
    steps: list[MemoryStep] = []
    for run in range(50):
        steps.append(TaskStep(task=f"Investigate a health problem.\ntarget: t{run}"))
        steps.extend(action(n, f"observation {run}.{n}") for n in range(1, 4))
        mem.compact(steps)
    assert isinstance(steps[0], SummaryStep) and len(steps) == 5
    assert steps[0].folded == 50 * 4 - 4
    assert len(steps[0].text.splitlines()) == memory.SUMMARY_LINES
    assert "observation 48" in steps[0].text  # recent history survives as summary lines
    assert all(getattr(s, "model_input_messages", None) is None for s in steps)


def test_the_running_investigation_is_never_folded() -> None:
    mem = Memory(MemoryConfig(keep_steps=2))
    steps: list[MemoryStep] = [action(n) for n in range(6)]
    mem.protect_from = 4
    steps.extend(action(n) for n in range(10, 20))
    mem.compact(steps)
    assert [s.step_number for s in steps[1:] if isinstance(s, ActionStep)] == [2, 3, 4, 5, *range(10, 20)]
    assert mem.protect_from == 3


def test_json_round_trip_keeps_what_the_model_sees() -> None:
    last = action(1, "api: OK")
    last.error = None
    steps = [SummaryStep("earlier: api flapped", 7), TaskStep(task="target: api"), last]
    restored = [memory.from_json(json.loads(json.dumps(memory.to_json(s))), None) for s in steps]
    assert [m.content for s in restored for m in s.to_messages()] == [m.content for s in steps for m in s.to_messages()]


def test_stats_can_be_read_while_steps_are_added() -> None:
    mem = Memory(MemoryConfig(keep_steps=3))

    class Agent:
        class memory:  # noqa: N801 - shaped like smolagents' agent.memory
            steps: list[MemoryStep] = []

    errors: list[BaseException] = []

    def writer() -> None:
        for n in range(2000):
            with mem.lock:
                Agent.memory.steps.append(action(n, "o" * 50))
                mem.compact(Agent.memory.steps)

    thread = threading.Thread(target=writer)
    thread.start()
    while thread.is_alive():
        try:
            stats = mem.stats(Agent.memory.steps)
            assert sum(stats.steps.values()) <= 4
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)
            break
    thread.join()
    assert errors == []


def test_export_import_round_trip_through_the_cli(tmp_path: Path) -> None:
    source, target = tmp_path / "a.db", tmp_path / "b.db"
    store = Store(source)
    incident = IncidentWrites(store).open_incident("api", "consecutive", "api down")
    IncidentWrites(store).close_incident(incident, resolution="restarted the pool")
    run = store.runs.start_run("target: api", target="api", incident_id=incident, model="builtin")
    store.runs.add_step(run, NewStep(1, "action", observations="api: CRITICAL", tool_ok=1, tool_seconds=0.01, tool_calls="[]"))
    store.runs.finish_run(run, "success", "api is down")
    store.memory.save_memory("working_memory", [{"type": "task", "task": "target: api"}])
    store.close()
    runner = CliRunner()
    exported = runner.invoke(main, ["memory", "export", str(tmp_path / "m.json"), "--db", str(source)])
    assert exported.exit_code == 0 and "1 incidents, 1 agent_runs, 1 agent_steps, 1 memory" in exported.output
    imported = runner.invoke(main, ["memory", "import", str(tmp_path / "m.json"), "--db", str(target)])
    assert imported.exit_code == 0, imported.output
    copy = Store(target)
    [row] = copy.incidents.search_incidents("pool")
    assert row.resolution == "restarted the pool"
    assert copy.runs.steps(copy.runs.last_run_id() or 0)[0].observations == "api: CRITICAL"
    again = runner.invoke(main, ["memory", "import", str(tmp_path / "m.json"), "--db", str(target)])
    assert "imported 0 incidents, 0 agent_runs, 0 agent_steps, 0 memory" in again.output
    assert copy.incidents.count_incidents() == 1
    stats = runner.invoke(main, ["memory", "stats", "--db", str(target), "--json"])
    figures = json.loads(stats.output)
    assert figures["working"]["steps"] == {"task": 1} and figures["tools"]["success_rate"] == 1.0
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    refused = runner.invoke(main, ["memory", "import", str(bad), "--db", str(target)])
    assert refused.exit_code == 3 and "not a monitor memory export" in refused.output


def test_incidents_commands_and_replay_after_a_restart(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    store = Store(db)
    incident = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")
    run = store.runs.start_run("Investigate.\ntarget: api", target="api", incident_id=incident, model="builtin")
    store.runs.add_step(
        run,
        NewStep(
            1,
            "action",
            tool_calls=json.dumps([{"name": "check_target", "arguments": {"name": "api"}}]),
            observations="api: CRITICAL status=500",
        ),
    )
    store.runs.finish_run(run, "success", "api is down")
    store.close()
    runner = CliRunner()
    listed = runner.invoke(main, ["incidents", "list", "--status", "open", "--db", db])
    assert "#1" in listed.output and "3 consecutive failures of api" in listed.output
    resolved = runner.invoke(main, ["incidents", "resolve", "1", "--note", "rolled back", "--db", db])
    assert resolved.exit_code == 0
    shown = runner.invoke(main, ["incidents", "show", "1", "--db", db])
    assert "resolution: rolled back" in shown.output and "agent run #1: success" in shown.output
    replayed = runner.invoke(main, ["replay", "--db", db])
    assert "→ check_target(name='api')" in replayed.output and "api: CRITICAL status=500" in replayed.output
    assert "Outcome:\n  api is down" in replayed.output
    missing = runner.invoke(main, ["replay", "9", "--db", db])
    assert missing.exit_code == 3 and "no agent run #9" in missing.output
    assert runner.invoke(main, ["incidents", "show", "9", "--db", db]).exit_code == 3
