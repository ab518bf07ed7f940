"""Every core, when the fork server goes: the workers are watched, killed and reaped through their own pidfds, so a
fork server that died (the OOM killer, a stray signal) hides neither a hung worker nor a dead one's exit code; and
systemd's stop, SIGTERM to every process of the unit, leaves no worker behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from servers import free_port, wait_for
from test_workers import Traced, health
from test_workers_forked import _alive, _parent

NAMES = [f"svc-{i:02d}" for i in range(8)]
# the daemon as a container's entry point (PID 1) is: the orphans of a dead fork server become its children
SUBREAPER = "import ctypes, os, sys; ctypes.CDLL(None).prctl(36, 1, 0, 0, 0); os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"


def _start(tmp_path: Path, base: str, port: int, *, subreaper: bool = False) -> subprocess.Popen[bytes]:
    targets = "".join(f"  - {{name: {n}, url: '{base}/t/{n}'}}\n" for n in NAMES)
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"workers: 2\ndatabase: {tmp_path / 'monitor.db'}\nagent: {{mode: 'off'}}\nmetrics: {{host: 127.0.0.1, port: {port}}}\n"
        f"defaults: {{interval: 1s, timeout: 2s}}\ntargets:\n{targets}"
    )
    run = [sys.executable, "-m", "monitor", "run", "--config", str(config)]
    with (tmp_path / "run.log").open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-c", SUBREAPER, *run[1:]] if subreaper else run, stdout=log, stderr=log, start_new_session=True
        )


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


def test_after_the_fork_server_died_a_hung_worker_is_still_killed_reaped_and_replaced(tmp_path: Path) -> None:
    port = free_port()
    with Traced() as fleet:
        daemon = _start(tmp_path, fleet.base, port, subreaper=True)
        hung = 0
        try:
            wait_for(lambda: health(port)[1].get("status") == "ok", timeout=60, every=0.1)
            pids = [w["pid"] for w in health(port)[1]["workers"]]
            os.kill(_parent(pids[0]), signal.SIGKILL)  # the fork server goes; its workers check on
            wait_for(lambda: _parent(pids[1]) == daemon.pid, timeout=5, every=0.05)  # orphans, now the daemon's
            hung = pids[1]
            os.kill(hung, signal.SIGSTOP)
            fresh = wait_for(
                lambda: (lambda w: w if w["live"] and w["pid"] != hung else None)(health(port)[1]["workers"][1]), timeout=30, every=0.1
            )
            assert fresh["restarts"] == 1
            wait_for(lambda: _state(hung) is None, timeout=5, every=0.05)  # killed and reaped: no zombie left
            log = (tmp_path / "run.log").read_text()
            assert re.search(rf"worker 1 \(pid {hung}\) silent for", log) and "worker 1 ended (exit code -9)" in log, log[-2000:]
        finally:
            if hung and _alive(hung):
                os.kill(hung, signal.SIGKILL)
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(30)


def test_systemds_stop_of_every_process_leaves_no_stuck_worker_behind(tmp_path: Path) -> None:
    port = free_port()
    with Traced() as fleet:
        daemon = _start(tmp_path, fleet.base, port)
        stuck = 0
        try:
            wait_for(lambda: health(port)[1].get("status") == "ok", timeout=60, every=0.1)
            stuck = health(port)[1]["workers"][1]["pid"]
            os.kill(stuck, signal.SIGSTOP)  # it will not stop when told
            os.killpg(daemon.pid, signal.SIGTERM)  # KillMode=control-group: the daemon, the fork server, the workers
            assert daemon.wait(40) == 0, (tmp_path / "run.log").read_text()[-3000:]
            wait_for(lambda: not _alive(stuck), timeout=5, every=0.05)
            assert "did not stop in time: killed" in (tmp_path / "run.log").read_text()
        finally:
            if stuck and _alive(stuck):
                os.kill(stuck, signal.SIGKILL)
            if daemon.poll() is None:
                daemon.kill()
