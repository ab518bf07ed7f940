"""A package from outside monitor that adds to each extension point (tests/plugin_pkg/: a check kind, an agent tool,
an alert receiver and a web page), installed by pip and run by monitor as a user runs it.

pip builds and installs it (offline: its build backend, setuptools, comes with the test extra) into a venv of its own
that extends the test venv (a ``.pth`` adds the test venv's site-packages), and the monitor processes run on that venv's
interpreter: the plugin is installed as a user installs one, and the rest of the suite runs without it. monitor finds
each part by the package's entry points alone: no PYTHONPATH names it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import site
import subprocess
import sys
import sysconfig
import urllib.request
import venv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ollama import FakeOllama, call, final
from servers import free_port, wait_for
from test_workers import health

from monitor.store import Store

ROOT = Path(__file__).parent.parent
pytestmark = pytest.mark.xdist_group("plugin_package")  # one worker builds it once


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The interpreter of a venv that extends the test venv, with the plugin installed into it by pip (built from a
    copy: the source tree stays clean)."""
    work = tmp_path_factory.mktemp("plugin")
    shutil.copytree(ROOT / "tests" / "plugin_pkg", work / "src")
    venv.create(work / "venv", with_pip=False)
    interpreter = str(work / "venv" / "bin" / "python")
    purelib = subprocess.run(
        [interpreter, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True, check=True
    )
    outer = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    Path(purelib.stdout.strip(), "test-venv.pth").write_text("".join(f"import site; site.addsitedir({path!r})\n" for path in outer))
    pip = [sys.executable, "-m", "pip", "--python", interpreter, "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    subprocess.run([*pip, str(work / "src")], check=True, capture_output=True, timeout=120)
    return interpreter


@pytest.fixture
def env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def monitor(python: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([python, "-m", "monitor", *args], capture_output=True, text=True, env=env, timeout=60)


def write(tmp_path: Path, extra: str = "") -> Path:
    """A config of two flag targets (one up, one down) and a jsonfile receiver."""
    (tmp_path / "up").touch()
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"database: {tmp_path / 'monitor.db'}\n"
        f"targets:\n  - {{name: up, url: 'flag:{tmp_path / 'up'}'}}\n  - {{name: down, kind: flag, url: 'flag:{tmp_path / 'no'}'}}\n"
        f"alerts: {{jsonfile: {{path: '{tmp_path / 'alerts.jsonl'}'}}}}\n{extra}"
    )
    return config


def test_validate_accepts_the_plugins_kind_and_receiver_and_checks_the_receivers_settings(
    python: str, env: dict[str, str], tmp_path: Path
) -> None:
    config = write(tmp_path)
    done = monitor(python, env, "validate", str(config))
    assert done.returncode == 0, done.stderr
    assert "OK, 2 targets" in done.stdout
    config.write_text(config.read_text().replace(f"path: '{tmp_path}", "path: 'relative").replace("}}\n", ", size: 1}}\n", 1))
    done = monitor(python, env, "validate", str(config))
    assert done.returncode == 3
    assert "alerts.jsonfile.path: String should match pattern '^/'" in done.stderr
    assert "alerts.jsonfile.size: unknown field (allowed here: path)" in done.stderr


def test_without_the_plugin_its_kind_and_receiver_are_unknown(tmp_path: Path) -> None:
    done = monitor(sys.executable, {**os.environ, "PYTHONPATH": str(ROOT)}, "validate", str(write(tmp_path)))
    assert done.returncode == 3
    assert "alerts.jsonfile: unknown field" in done.stderr


def guided(body: dict[str, Any]) -> dict[str, Any]:
    """The model: the one tool a guided investigation offers, called with what it needs (the target is 'down')."""
    [offered] = [tool["function"]["name"] for tool in body.get("tools", [])] or ["final_answer"]
    diagnosis = {"root_cause": "unknown", "related_incident": "none", "confidence": "low", "summary": "the flag file is gone"}
    args = {"search_incidents": {"query": "down"}, "record_diagnosis": diagnosis}.get(offered, {"name": "down"})
    return final("the flag file is gone") if offered == "final_answer" else call(offered, **args)


@pytest.fixture
def daemon(python: str, env: dict[str, str], tmp_path: Path) -> Iterator[tuple[int, int, FakeOllama]]:
    """``monitor run`` with the plugin: two workers, the web UI, and a guided agent on a scripted Ollama server."""
    metrics, web = free_port(), free_port()
    with FakeOllama(default=guided) as ollama:
        model = f"{{id: auto, api_base: '{ollama.url}', timeout: 5, retries: 0, constrain: 'off'}}"
        extra = (
            f"workers: 2\ndefaults: {{interval: 1s, timeout: 2s}}\nmodel: {model}\n"
            f"metrics: {{host: 127.0.0.1, port: {metrics}}}\nweb: {{enabled: true, listen: '127.0.0.1:{web}'}}\n"
        )
        config = write(tmp_path, extra)
        with (tmp_path / "run.log").open("ab") as log:
            process = subprocess.Popen([python, "-m", "monitor", "run", "--config", str(config)], stdout=log, stderr=log, env=env)
        try:
            wait_for(lambda: health(metrics)[1].get("status") == "ok", timeout=60, every=0.1)
            yield metrics, web, ollama
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=30)


@pytest.mark.slow
@pytest.mark.sqlite_only("the daemon runs in a child on the SQLite file its config names, which the test reads back")
def test_monitor_run_with_workers_runs_each_part_of_the_plugin(daemon: tuple[int, int, FakeOllama], tmp_path: Path) -> None:
    metrics, web, ollama = daemon
    assert len(health(metrics)[1]["workers"]) == 2
    store = Store(str(tmp_path / "monitor.db"))
    try:  # its kind: checked in the workers, the results recorded
        seen = wait_for(lambda: (lambda got: got if len(got) == 2 else None)(store.results.latest_of(["up", "down"])), timeout=30)
        assert {name: (row.ok, row.error) for name, row in seen.items()} == {"up": (1, None), "down": (0, "flag_down")}
    finally:
        store.close()
    # its receiver: the incident of 'down' delivered through the outbox
    alerts = tmp_path / "alerts.jsonl"
    sent = wait_for(lambda: [json.loads(line) for line in alerts.read_text().splitlines()] if alerts.exists() else None, timeout=60)
    assert sent[0]["event"] == "opened" and sent[0]["target"] == "down"
    # its tool: offered to the guided model after the built-in evidence, called, and its answer read by the model
    wait_for(lambda: any("final_answer" in offered(chat) for chat in ollama.chats), timeout=60)
    steps = [offered(chat) for chat in ollama.chats]
    assert steps[:6] == [["check_target"], ["recent_results"], ["search_incidents"], ["flag_file"], ["record_diagnosis"], ["final_answer"]]
    assert "down: the flag file is missing" in json.dumps(ollama.chats[4]["messages"])
    # its page: served by the web UI, its link in every page's navigation
    with urllib.request.urlopen(f"http://127.0.0.1:{web}/flags", timeout=5) as reply:
        page = reply.read().decode()
    assert "<h1>Flags</h1>" in page and "<li>down</li>" in page and 'href="/flags"' in page
    with urllib.request.urlopen(f"http://127.0.0.1:{web}/", timeout=5) as reply:
        assert 'href="/flags"' in reply.read().decode()


def offered(chat: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in chat.get("tools", [])]
