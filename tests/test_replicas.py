"""Scale-out on one machine: three ``monitor run`` replicas, one PostgreSQL, 3,000 targets.

Each target is checked by exactly one replica; a fix noted on an incident of replica A's is recalled
by replica B's investigation; killing a replica (SIGKILL) loses no committed incident, and it comes
back where it stopped.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from past import known
from servers import Misbehaving, _Handler, free_port, response, stop_processes, wait_for

from monitor.checks.heartbeat import new_token
from monitor.checks.schedule import replica_of
from monitor.store import Store

TARGETS = 3000
REPLICAS = 3
INTERVAL = 10.0  # seconds: 300 checks/s for the three replicas together


class _FleetHandler(_Handler):
    server: Fleet

    def answer(self, sock: socket.socket, path: str) -> bool:
        name = path.rsplit("/", 1)[-1]
        if name in self.server.failing:
            sock.sendall(response(503, b'{"error": "upstream connection pool exhausted"}'))
        else:
            sock.sendall(response(200, b'{"status": "ok"}'))
        return True


class Fleet(Misbehaving):
    """Every target at ``/t/<name>``: 200, or 503 while its name is in ``failing``."""

    def __init__(self) -> None:
        super().__init__(_FleetHandler)
        self.failing: set[str] = set()

    def checked(self) -> Counter[str]:
        return Counter(path.rsplit("/", 1)[-1] for path in list(self.hits))


def owned_by(replica: int, prefix: str) -> str:
    """A target name that replica ``replica`` of REPLICAS owns."""
    return next(f"{prefix}{i}" for i in range(1000) if replica_of(f"{prefix}{i}", REPLICAS) == replica)


def scrape(port: int, *names: str) -> str:
    url = f"http://127.0.0.1:{port}/metrics?" + "&".join(f"name[]={name}" for name in names)
    with urllib.request.urlopen(url, timeout=10) as reply:
        return str(reply.read().decode())


def metric_targets(port: int) -> set[str]:
    """The targets whose checks replica at ``port`` counted (its own /metrics)."""
    text = scrape(port, "monitor_checks_total")
    return set(re.findall(r'^monitor_checks_total\{[^}]*target="([^"]+)"', text, re.M))


class Replicas:
    def __init__(self, config: Path, url: str, log_dir: Path) -> None:
        self.config, self.url, self.log_dir = config, url, log_dir
        self.ports = [free_port() for _ in range(REPLICAS)]
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, index: int) -> None:
        env = {
            **os.environ,
            "MONITOR_REPLICA_INDEX": str(index),
            "MONITOR_DATABASE": self.url,
            "MONITOR_METRICS_LISTEN": f"127.0.0.1:{self.ports[index]}",
        }
        with (self.log_dir / f"replica-{index}.log").open("ab") as log:  # the child keeps its own descriptor
            self.processes[index] = subprocess.Popen(
                [sys.executable, "-m", "monitor", "run", "--config", str(self.config)], stdout=log, stderr=log, env=env
            )

    def logs(self) -> str:
        return "\n".join(
            f"--- replica {i}\n" + (self.log_dir / f"replica-{i}.log").read_text()[-3000:]
            for i in range(REPLICAS)
            if (self.log_dir / f"replica-{i}.log").exists()
        )

    def stop(self) -> None:
        stop_processes(self.processes.values())


@pytest.fixture
def fleet() -> Any:
    with Fleet() as server:
        yield server


def test_three_replicas_share_one_postgres(postgres_url: str, fleet: Fleet, tmp_path: Path) -> None:
    broken_a, broken_b, backup = owned_by(0, "payments-a"), owned_by(1, "payments-b"), owned_by(2, "backup-")
    names = [f"t{i:04d}" for i in range(TARGETS - 3)] + [broken_a, broken_b]
    fast = {broken_a, broken_b}
    token = new_token()
    lines = "".join(f"  - {{name: {n}, url: '{fleet.base}/t/{n}'{', interval: 500ms' if n in fast else ''}}}\n" for n in names)
    lines += f"  - {{name: {backup}, kind: heartbeat, interval: 500ms, heartbeat: {{token: {token}, period: 1h, grace: 10m}}}}\n"
    names.append(backup)
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"replicas: {REPLICAS}\nworkers: 1\nlease: off\nmodel: {{id: builtin}}\ndetectors: {{consecutive: 2}}\n"
        f"defaults: {{interval: {INTERVAL:g}s, timeout: 5s}}\ntargets:\n{lines}"
    )
    fleet.failing = {broken_a}
    store = Store(postgres_url)
    replicas = Replicas(config, postgres_url, tmp_path)
    try:
        for index in range(REPLICAS):
            replicas.start(index)

        # 1. every target is checked, each by exactly one replica
        wait_for(lambda: store._scalar("SELECT count(DISTINCT target) FROM results") == TARGETS, timeout=90, every=0.5)
        # another round, every target checked once more: a target checked twice per round shows now
        since = time.time()
        again = "SELECT count(DISTINCT target) FROM results WHERE checked_at > ?"
        wait_for(lambda: store._scalar(again, (since,)) == TARGETS, timeout=3 * INTERVAL, every=0.5)
        seen = [metric_targets(port) for port in replicas.ports]
        assert set().union(*seen) == set(names), replicas.logs()
        assert sum(len(s) for s in seen) == TARGETS, "a target was counted by two replicas"
        for index, mine in enumerate(seen):
            assert {replica_of(n, REPLICAS) for n in mine} == {index}

        shards = [scrape(port, "monitor_replicas", "monitor_targets") for port in replicas.ports]
        assert [re.findall(r'^monitor_replicas\{replica="(\d)"\} (\S+)', text, re.M) for text in shards] == [
            [(str(i), "3.0")] for i in range(REPLICAS)
        ]
        owned = [float(re.findall(r"^monitor_targets (\S+)", text, re.M)[0]) for text in shards]
        assert sum(owned) == TARGETS and all(len(s) == n for s, n in zip(seen, owned, strict=True))

        # a heartbeat's ping may reach any replica (a Service balances them): the owner, 2, sees it
        with urllib.request.urlopen(f"http://127.0.0.1:{replicas.ports[0]}/ping/{token}/fail", timeout=10) as reply:
            assert reply.status == 200
        failed = wait_for(lambda: store._one("SELECT * FROM results WHERE target = ? AND ok = 0", (backup,)), timeout=30)
        assert failed["error"] == "heartbeat_failed"
        hits = fleet.checked()
        slow = [n for n in names if n not in fast]
        rounds = max(hits[n] for n in slow)
        assert rounds <= 4, f"a {INTERVAL:g} s target was checked {rounds} times in about 2.5 intervals"

        # 2. replica 0's incident, resolved with a note, is recalled by replica 1's investigation
        incident_a = wait_for(
            lambda: store._one("SELECT * FROM incidents WHERE target = ? AND agent_state IS NOT NULL", (broken_a,)), timeout=60
        )
        wait_for(
            lambda: store._one("SELECT * FROM agent_runs WHERE incident_id = ? AND state != 'running'", (incident_a["id"],)), timeout=60
        )
        fleet.failing = set()
        wait_for(lambda: known(store.incidents.incident(incident_a["id"])).status == "resolved", timeout=30)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "monitor",
                "incidents",
                "resolve",
                str(incident_a["id"]),
                "--note",
                "raised the payments connection pool from 20 to 80",
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "MONITOR_DATABASE": postgres_url},
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        fleet.failing, failing_since = {broken_b}, time.time()
        # (a loaded machine may have opened a latency-drift incident of payments-b during the start-up burst)
        run_b = wait_for(
            lambda: store._one(
                """SELECT agent_runs.* FROM agent_runs JOIN incidents ON incidents.id = agent_runs.incident_id
               WHERE incidents.target = ? AND incidents.opened_at > ? AND agent_runs.state != 'running'""",
                (broken_b, failing_since),
            ),
            timeout=60,
        )
        assert run_b["replica"] == 1
        recall = store._one("SELECT * FROM agent_steps WHERE run_id = ? AND kind = 'recall'", (run_b["id"],))
        assert recall is not None and "connection pool from 20 to 80" in recall["observations"], replicas.logs()

        # 3. SIGKILL replica 2: nothing it committed is lost; the others go on; it comes back
        before = store._rows("SELECT id, target, status, opened_at FROM incidents ORDER BY id")
        results_before = store.results.count_results()
        replicas.processes[2].kill()
        replicas.processes[2].wait(10)
        assert store._rows("SELECT id, target, status, opened_at FROM incidents ORDER BY id")[: len(before)] == before
        assert store.results.count_results() >= results_before
        own_2 = [n for n in slow if replica_of(n, REPLICAS) == 2]
        last = store._scalar("SELECT max(checked_at) FROM results WHERE target = ?", (own_2[0],))
        replicas.start(2)
        wait_for(lambda: store._scalar("SELECT max(checked_at) FROM results WHERE target = ?", (own_2[0],)) > last, timeout=60, every=0.5)
        assert all(p.poll() is None for p in replicas.processes.values()), replicas.logs()
    finally:
        replicas.stop()
    try:
        assert store._scalar("SELECT count(*) FROM agent_runs WHERE state = 'running'") == 0
    finally:
        store.close()
