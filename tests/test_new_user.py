"""Issue #33, item 7: what trips a new user. Commands that only read the database need no secret exported; a
daemon whose port is taken says so at once and leaves no files; ``monitor investigate`` exits with its last line."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from monitor.core.results import Result
from monitor.store import Store
from monitor.store.writes import IncidentWrites

SECRETS = ("MONITOR_TEST_WEB_TOKEN", "MONITOR_TEST_PING_TOKEN", "MONITOR_TEST_DB")


def monitor(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in SECRETS}
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True, text=True, timeout=60, env=env, cwd=cwd)


def test_commands_that_only_read_need_no_secret_exported(tmp_path: Path, store_location: Any) -> None:
    store = Store(tmp_path / "m.db")
    store.results.add_results(
        [
            Result(
                name="api",
                url="http://127.0.0.1:9/",
                ok=True,
                severity="ok",
                status_code=200,
                latency_ms=3.0,
                error=None,
                detail="status 200",
                checked_at=time.time(),
            )
        ]
    )
    IncidentWrites(store).open_incident("api", "consecutive", "down for a while")
    store.close()
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"database: '{store_location(tmp_path / 'm.db')}'\n"
        "web: {token: '${MONITOR_TEST_WEB_TOKEN}'}\ntargets:\n"
        "  - {name: api, url: 'http://127.0.0.1:9/'}\n"
        "  - {name: backup, kind: heartbeat, heartbeat: {token: '${MONITOR_TEST_PING_TOKEN}', period: 1h}}\n"
    )
    status = monitor("status", "--config", str(config))
    assert status.returncode == 0 and "api" in status.stdout and "open incidents: 1" in status.stdout, status.stderr
    assert "${MONITOR_TEST_PING_TOKEN}, ${MONITOR_TEST_WEB_TOKEN} not set: read as a placeholder" in status.stderr
    listed = monitor("incidents", "list", "--config", str(config))
    assert listed.returncode == 0 and "down for a while" in listed.stdout, listed.stderr
    resolved = monitor("incidents", "resolve", "1", "--note", "fixed", "--config", str(config))  # it sends alerts
    assert resolved.returncode == 3 and "${MONITOR_TEST_WEB_TOKEN} is not set" in resolved.stderr
    config.write_text(config.read_text().replace(store_location(tmp_path / "m.db"), "${MONITOR_TEST_DB}"))
    status = monitor("status", "--config", str(config))  # the database itself: nothing to read without it
    assert status.returncode == 3 and "environment variable ${MONITOR_TEST_DB} is not set" in status.stderr


def test_a_daemon_whose_port_is_taken_says_so_at_once_and_leaves_no_files(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        (tmp_path / "monitor.yaml").write_text(
            f"database: port.db\nmetrics: {{host: 127.0.0.1, port: {port}}}\ntargets: [{{name: a, url: 'http://127.0.0.1:9/'}}]\n"
        )
        started = time.monotonic()
        done = monitor("run", "--config", "monitor.yaml", cwd=tmp_path)
        seconds = time.monotonic() - started
    assert done.returncode == 3, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["monitor.yaml"]  # no port.db, -wal, -shm nor .lock
    assert f"cannot start: the metrics listener cannot listen on 127.0.0.1:{port}: Address already in use" in done.stderr
    print(f"a taken port refused {seconds:.1f} s after start")
    assert seconds < 4, seconds


def test_investigate_exits_with_its_last_line_when_the_model_is_unreachable(tmp_path: Path) -> None:
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"database: {tmp_path / 'i.db'}\n"
        "model: {id: ollama_chat/llama3.2, api_base: 'http://127.0.0.1:9', retries: 0}\n"
        "targets: [{name: a, url: 'http://127.0.0.1:9/'}]\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "monitor", "investigate", "a", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines, last = [], time.monotonic()
    assert process.stdout is not None  # stdout=PIPE
    for line in process.stdout:
        lines.append(line)
        last = time.monotonic()
    process.wait(timeout=60)
    process.stdout.close()
    after = time.monotonic() - last
    assert process.returncode == 2 and "the detection stands" in "".join(lines), "".join(lines)
    print(f"monitor investigate exited {after:.2f} s after its last line")
    assert after < 0.5, after  # litellm's teardown took 1.3 s here, 4 s on a slower machine
