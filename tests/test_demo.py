"""Each demo mode runs as a newcomer would run it, and prints what it promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from monitor.cli.main import main
from monitor.demo.service import DemoService


def demo(mode: str, tmp_path: Path) -> str:
    result = CliRunner().invoke(main, ["demo", "--mode", mode, "--keep", str(tmp_path)])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(autouse=True)
def no_ollama(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")  # nothing listens: the builtin model runs


def test_replay_mode_replays_tool_calls_and_observations(tmp_path: Path) -> None:
    out = demo("replay", tmp_path)
    assert "model: builtin (no Ollama at http://127.0.0.1:9" in out
    assert "incident #1 opened: 3 consecutive failures of shop" in out
    assert "Replaying agent run #1 from the database" in out
    assert "→ check_target(name='shop')" in out and "status=500" in out
    assert "[ALERT] Pattern detected:" in out


def test_inject_mode_recalls_the_past_fix_into_the_diagnosis(tmp_path: Path) -> None:
    out = demo("inject", tmp_path)
    assert "Working memory restored from SQLite: 3 steps from a past session." in out
    assert "Injected into the agent's memory before the task" in out
    assert "resolution: raised the shop database pool from 10 to 50 connections" in out
    assert "✓ the diagnosis names the past fix (CHG-1042, incident #1)" in out


def test_step_by_step_mode_prints_memory_after_each_step(tmp_path: Path) -> None:
    out = demo("step_by_step", tmp_path)
    assert "5 healthy checks: 0 agent runs, no model calls." in out
    assert out.count("  memory: ") == 5
    assert "step 1: check_target({'name': 'shop'})" in out
    assert "[ALERT] Pattern detected: flapping" in out
    assert "(the shop is now down)" in out and "ended in success after 5 steps" in out


def test_full_mode_tells_the_whole_story_and_ends_with_the_figures(tmp_path: Path) -> None:
    out = demo("full", tmp_path)
    order = ["== inject", "== replay", "== step_by_step", "== memory stats", "== memory metrics", "== review"]
    assert [out.index(h) for h in order] == sorted(out.index(h) for h in order)
    assert "✓ the diagnosis names the past fix" in out
    assert "Tools\n  calls: " in out and "succeeded: 100.0%" in out
    assert "monitor_agent_memory_bytes " in out and 'monitor_agent_memory_steps{type="action"}' in out
    assert "monitor_memory_incidents 7.0" in out  # 4 seeded (shop twice, search with shop, payments), 3 in the demo
    assert "Recurring failures:\n    shop server_error, 3 incidents" in out
    assert (tmp_path / "demo.db").exists()


def test_the_demo_runs_from_the_installed_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "demo", "--mode", "inject"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"OLLAMA_HOST": "http://127.0.0.1:9", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert "✓ the diagnosis names the past fix" in done.stdout


def test_demo_service_switches_states_and_restarts() -> None:
    import httpx

    service = DemoService().start()
    try:
        assert httpx.get(service.url()).status_code == 200
        service.set("erroring")
        assert httpx.get(service.url()).status_code == 500
        service.set("flapping")
        assert sorted(httpx.get(service.url()).status_code for _ in range(4)) == [200, 200, 500, 500]
        service.set("recovering")
        assert [httpx.get(service.url()).status_code for _ in range(3)] == [500, 500, 200]
        service.set("down")
        with pytest.raises(httpx.TransportError):
            httpx.get(service.url())
        assert httpx.post(service.url("/state?set=nope")).status_code == 400
        assert httpx.post(service.url("/restart")).json() == {"state": "healthy", "restarts": 1, "requests": 10}
    finally:
        service.stop()


def test_with_ollama_serving_llama32_the_demo_uses_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ollama import FakeOllama, call, final

    script = [
        call("check_target", name="shop"),
        call("recent_results", name="shop"),
        call("search_incidents", query="shop 500"),
        call("record_diagnosis", root_cause="server_error", related_incident="#1", confidence="high", summary="shop fails like #1"),
        final("shop fails; last time the DB pool was raised"),
    ]
    with FakeOllama(script=script) as ollama:
        monkeypatch.setenv("OLLAMA_HOST", ollama.url)
        out = demo("inject", tmp_path)
    assert f"model: ollama_chat/llama3.2 (Ollama at {ollama.url} serves llama3.2)" in out
    assert "CHG-1042" in json.dumps(ollama.chats[0])  # the recalled fix reached the model
    # The grammar offered #1 only under server_error, the root cause it was recorded with.
    assert '"#1"' in json.dumps(ollama.chats[3]["format"])
    assert "✓ the diagnosis names the past fix (CHG-1042, incident #1)" in out
