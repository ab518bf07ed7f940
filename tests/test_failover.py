"""Failover: three ``monitor run`` replicas with a 3 s lease on one PostgreSQL; one is killed (SIGKILL).

Its targets are checked again by the others within the lease plus two intervals; when it returns it takes
back exactly its share, and no target is checked by two replicas for longer than one interval; no incident
and no notification is duplicated. Each replica has its own ``location`` (r0, r1, r2), so every stored
result says which replica checked it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from servers import Receiver, free_port, stop_processes, wait_for
from test_replicas import Fleet

from monitor.checks.ownership import Member, owners
from monitor.store import Store

LEASE, INTERVAL, REPLICAS = 3.0, 1.0, 3
MEMBERS = [Member(i, f"r{i}") for i in range(REPLICAS)]


class Daemons:
    """``monitor run`` processes, one per replica number, each at location ``r<i>``."""

    def __init__(self, config: Path, url: str, log_dir: Path) -> None:
        self.config, self.url, self.log_dir = config, url, log_dir
        self.processes: dict[int, subprocess.Popen[bytes]] = {}

    def start(self, index: int) -> None:
        env = {
            **os.environ,
            "MONITOR_REPLICA_INDEX": str(index),
            "MONITOR_DATABASE": self.url,
            "MONITOR_LOCATION": f"r{index}",
            "MONITOR_METRICS_LISTEN": f"127.0.0.1:{free_port()}",
        }
        with (self.log_dir / f"replica-{index}.log").open("ab") as log:  # the child keeps its own descriptor
            self.processes[index] = subprocess.Popen(
                [sys.executable, "-m", "monitor", "run", "--config", str(self.config)], stdout=log, stderr=log, env=env
            )

    def logs(self) -> str:
        return "\n".join(f"--- replica {path.name}\n{path.read_text()[-2500:]}" for path in sorted(self.log_dir.glob("replica-*.log")))

    def stop(self) -> None:
        stop_processes(self.processes.values())


def checks(store: Store, since: float) -> list[dict[str, Any]]:
    return store._rows("SELECT target, location, checked_at FROM results WHERE checked_at > ? ORDER BY checked_at", (since,))


def checkers(rows: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Who checked each target in ``rows``."""
    found: dict[str, set[str]] = {}
    for row in rows:
        found.setdefault(row["target"], set()).add(row["location"])
    return found


@pytest.fixture
def fleet() -> Any:
    with Fleet() as server:
        yield server


def test_a_killed_replica_s_share_is_taken_over_and_given_back(postgres_url: str, fleet: Fleet, tmp_path: Path) -> None:
    names = [f"svc-{i:02d}" for i in range(30)]
    mine = {n: owners(n, MEMBERS)[0].location for n in names}
    victims = sorted(n for n in names if mine[n] == "r2")
    failing = set(victims[:2]) | {n for n in names if mine[n] != "r2"}.intersection(names[:4])
    fleet.failing = failing
    with Receiver() as hooks:
        targets = "".join(f"  - {{name: {n}, url: '{fleet.base}/t/{n}'}}\n" for n in names)
        config = tmp_path / "monitor.yaml"
        config.write_text(
            f"replicas: {REPLICAS}\nworkers: 1\nlease: {LEASE:g}s\nagent: {{mode: 'off'}}\n"
            f"detectors: {{consecutive: 2}}\nalerts: {{webhooks: [{{url: '{hooks.url}'}}]}}\n"
            f"defaults: {{interval: {INTERVAL:g}s, timeout: 2s}}\ntargets:\n{targets}"
        )
        store = Store(postgres_url)
        daemons = Daemons(config, postgres_url, tmp_path)
        try:
            for index in range(REPLICAS):
                daemons.start(index)
            # settled: for two intervals, every target checked, each from the one replica that owns it
            wait_for(lambda: checkers(checks(store, time.time() - 2 * INTERVAL)) == {n: {mine[n]} for n in names}, timeout=40, every=0.5)
            wait_for(lambda: {e["incident"]["target"] for e in hooks.received if e["event"] == "opened"} >= failing, timeout=20, every=0.2)

            # 1. SIGKILL replica 2: its targets are checked again by the others within the lease plus two intervals
            killed = time.time()
            daemons.processes[2].send_signal(signal.SIGKILL)
            daemons.processes[2].wait(10)
            wait_for(
                lambda: all(checkers(checks(store, killed)).get(n, set()) - {"r2"} for n in victims),
                timeout=LEASE + 6 * INTERVAL,
                every=0.2,
            )
            rows = checks(store, killed - 3 * INTERVAL)
            gaps = {}
            for name in victims:
                last = max(r["checked_at"] for r in rows if r["target"] == name and r["location"] == "r2")
                again = min(r["checked_at"] for r in rows if r["target"] == name and r["location"] != "r2")
                gaps[name] = again - last
            longest = max(gaps.values())
            print(
                f"\nfailover: longest gap of a killed replica's target {longest:.2f} s "
                f"(lease {LEASE:g} s + 2 intervals = {LEASE + 2 * INTERVAL:g} s)"
            )
            assert longest <= LEASE + 2 * INTERVAL, (gaps, daemons.logs())

            # 2. it returns: it takes back exactly its share, checked twice for at most one interval
            back = time.time()
            daemons.start(2)
            wait_for(lambda: {r["target"] for r in checks(store, back) if r["location"] == "r2"} == set(victims), timeout=30, every=0.2)
            time.sleep(3 * INTERVAL)
            rows = checks(store, back)
            overlap = {}
            for name in victims:
                first = min(r["checked_at"] for r in rows if r["target"] == name and r["location"] == "r2")
                others = [r["checked_at"] for r in rows if r["target"] == name and r["location"] != "r2"]
                overlap[name] = max(0.0, max(others, default=first) - first)
            print(
                f"failover: longest time a target was checked by two replicas after the return "
                f"{max(overlap.values()):.2f} s (interval {INTERVAL:g} s)"
            )
            assert max(overlap.values()) <= INTERVAL, (overlap, daemons.logs())
            assert {n for n, who in checkers(checks(store, time.time() - 2 * INTERVAL)).items() if "r2" in who} == set(victims)

            # 3. exactly once: one incident per failing target, one notification per incident and event
            incidents = store._rows("SELECT id, target FROM incidents WHERE target = ANY(?)", (sorted(failing),))
            assert Counter(i["target"] for i in incidents) == Counter(failing), incidents
            wait_for(lambda: len(hooks.received) >= len(failing), timeout=10)
            sent = Counter((e["event"], e["key"]) for e in hooks.received)
            assert max(sent.values()) == 1, sent
            assert all(p.poll() is None for p in daemons.processes.values()), daemons.logs()
        finally:
            daemons.stop()
            store.close()


def test_a_lease_over_a_sqlite_file_is_refused_at_start(tmp_path: Path) -> None:
    """Replicas with a lease on SQLite each saw only themselves live and checked every target; now it says why."""
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"database: {tmp_path / 'm.db'}\nreplicas: 3\nreplica_index: 1\nlease: 15s\nmetrics: {{port: 0}}\n"
        "targets: [{name: a, url: 'http://127.0.0.1:9/'}]\n"
    )
    done = subprocess.run([sys.executable, "-m", "monitor", "run", "--config", str(config)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3 and "lease: replicas hand targets over through one shared PostgreSQL" in done.stderr
