"""Every core: a real ``monitor run`` with ``workers: 2`` on loopback targets, one SQLite file.

Each target is checked at its interval by the worker that owns it (rendezvous hashing over the workers: the
test tells the workers apart by the TCP connections each holds to the targets' server), the daemon records
every result (one incident per failing target, one notification each), and its one /metrics counts every
worker's checks. SIGKILL of a worker: /healthz says degraded, the other checks its targets at once, and it is
started again and takes them back.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from servers import Receiver, free_port, wait_for
from test_replicas import Fleet, _FleetHandler

from monitor.checks.ownership import Member, Ranking, owners
from monitor.config import Config
from monitor.store import Store

INTERVAL, WORKERS = 1.0, 2
NAMES = [f"svc-{i:02d}" for i in range(16)]
FAILING = {"svc-00", "svc-01", "svc-02"}


class _Traced(_FleetHandler):
    """As the fleet's handler, and notes which client port asked for which target, when."""

    server: Traced

    def answer(self, sock: socket.socket, path: str) -> bool:
        self.server.seen.append((time.time(), path.rsplit("/", 1)[-1], sock.getpeername()[1]))
        return super().answer(sock, path)


class Traced(Fleet):
    def __init__(self) -> None:
        super(Fleet, self).__init__(_Traced)
        self.hits, self.failing = [], set()
        self.seen: list[tuple[float, str, int]] = []


def client_ports(pid: int, server_port: int) -> set[int]:
    """Local ports of the process's TCP connections to ``server_port`` (its sockets' inodes in /proc/net/tcp)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for row in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = row.split()
        local, remote, inode = fields[1], fields[2], fields[9]
        if inode in inodes and int(remote.split(":")[1], 16) == server_port:
            ports.add(int(local.split(":")[1], 16))
    return ports


def health(port: int) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())
    except urllib.error.URLError:  # not listening yet
        return 0, {}


def checks_counted(port: int) -> dict[str, float]:
    """``monitor_checks_total`` by target, summed over results, from the daemon's one /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics?name[]=monitor_checks_total", timeout=10) as reply:
        text = reply.read().decode()
    counted: dict[str, float] = {}
    for target, value in re.findall(r'^monitor_checks_total\{[^}]*target="([^"]+)"[^}]*\} (\S+)$', text, re.M):
        counted[target] = counted.get(target, 0.0) + float(value)
    return counted


def restarts(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics?name[]=monitor_worker_restarts_total", timeout=10) as reply:
        text = reply.read().decode()
    return {reason: float(value) for reason, value in re.findall(r'^monitor_worker_restarts_total\{reason="([^"]+)"\} (\S+)$', text, re.M)}


def stored(store: Store, since: float = 0.0) -> list[dict[str, Any]]:
    return store._rows("SELECT target, checked_at FROM results WHERE checked_at > ? ORDER BY checked_at", (since,))


@pytest.fixture
def fleet() -> Any:
    with Traced() as server:
        yield server


def start_daemon(
    tmp_path: Path, base: str, names: list[str], port: int, database: str, *, interval: str, more: str = ""
) -> subprocess.Popen[bytes]:
    """``monitor run`` with ``WORKERS`` workers on ``names`` (at ``base``/t/NAME), agent off, /metrics on ``port``."""
    targets = "".join(f"  - {{name: {n}, url: '{base}/t/{n}'}}\n" for n in names)
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"workers: {WORKERS}\ndatabase: {database}\nagent: {{mode: 'off'}}\nmetrics: {{host: 127.0.0.1, port: {port}}}\n{more}"
        f"defaults: {{interval: {interval}, timeout: 2s}}\ntargets:\n{targets}"
    )
    with (tmp_path / "run.log").open("ab") as log:  # the child keeps its own descriptor
        return subprocess.Popen([sys.executable, "-m", "monitor", "run", "--config", str(config)], stdout=log, stderr=log)


def test_two_workers_share_the_targets_and_a_killed_one_is_replaced(
    fleet: Traced, tmp_path: Path, store_location: Callable[..., str]
) -> None:
    fleet.failing = set(FAILING)
    members = [Member(n) for n in range(WORKERS)]
    mine = {name: owners(name, members)[0].id for name in NAMES}
    victims = {name for name in NAMES if mine[name] == 1}
    assert victims and len(victims) < len(NAMES)
    port, database = free_port(), tmp_path / "monitor.db"
    with Receiver() as hooks:
        more = f"detectors: {{consecutive: 2}}\nalerts: {{webhooks: [{{url: '{hooks.url}'}}]}}\n"
        daemon = start_daemon(tmp_path, fleet.base, NAMES, port, store_location(database), interval=f"{INTERVAL:g}s", more=more)

        def logs() -> str:
            return (tmp_path / "run.log").read_text()[-4000:]

        try:
            _settled(daemon, port, database, fleet, mine, hooks, logs)
            _killed_worker_is_replaced(port, database, fleet, mine, victims, logs)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(30)
        assert daemon.returncode == 0, logs()
        assert "not stored" not in logs()


def _settled(
    daemon: subprocess.Popen[bytes], port: int, database: Path, fleet: Traced, mine: dict[str, int], hooks: Receiver, logs: Any
) -> None:
    """Both workers live, every target checked at its interval by its owner, the failing ones paged once."""
    wait_for(lambda: health(port)[1].get("status") == "ok", timeout=60, every=0.2)
    store = Store(str(database))
    try:
        begun = time.time() + 2 * INTERVAL  # a hand-over may check a target twice for one interval
        time.sleep(2 * INTERVAL)
        time.sleep(4 * INTERVAL)
        counts = Counter(row["target"] for row in stored(store, begun))
        assert all(3 <= counts[name] <= 5 for name in NAMES), (counts, logs())  # 4 intervals: 4 checks each
        pids = [state["pid"] for state in health(port)[1]["workers"]]
        by_port = {p: n for n, pid in enumerate(pids) for p in client_ports(pid, fleet.server_address[1])}
        checkers: dict[str, set[int]] = {}
        for at, name, client in list(fleet.seen):
            if at > begun and client in by_port:
                checkers.setdefault(name, set()).add(by_port[client])
        assert checkers == {name: {mine[name]} for name in NAMES}, (checkers, by_port)

        wait_for(lambda: {e["incident"]["target"] for e in hooks.received if e["event"] == "opened"} >= FAILING, timeout=20, every=0.2)
        incidents = store._rows("SELECT target FROM incidents")
        assert Counter(i["target"] for i in incidents) == Counter(FAILING)
        assert Counter(e["incident"]["target"] for e in hooks.received) == Counter(FAILING), hooks.received
        # one address counts every worker's checks: as many as the one store holds (read around the scrape)
        before = len(stored(store))
        counted = checks_counted(port)
        after = len(stored(store))
        assert set(counted) == set(NAMES)
        assert before <= sum(counted.values()) <= after, (before, counted, after)
    finally:
        store.close()


def _killed_worker_is_replaced(port: int, database: Path, fleet: Traced, mine: dict[str, int], victims: set[str], logs: Any) -> None:
    killed_pid = health(port)[1]["workers"][1]["pid"]
    killed = time.time()
    os.kill(killed_pid, signal.SIGKILL)
    status, body = wait_for(lambda: (lambda h: h if h[1]["status"] == "degraded" else None)(health(port)), timeout=5, every=0.02)
    assert status == 200 and body["workers"][1]["live"] is False, body
    # its targets are checked again at once, by the other worker, while it is down
    wait_for(lambda: {name for at, name, _ in list(fleet.seen) if at > killed} >= victims, timeout=3 * INTERVAL)
    restarted = wait_for(
        lambda: (lambda w: w if w["live"] and w["pid"] != killed_pid else None)(health(port)[1]["workers"][1]), timeout=60, every=0.1
    )
    assert restarted["restarts"] == 1, restarted
    assert restarts(port) == {"died": 1.0}, restarts(port)
    store = Store(str(database))
    try:
        rows = stored(store, killed - 3 * INTERVAL)
        gaps = {}
        for name in NAMES:
            times = [r["checked_at"] for r in rows if r["target"] == name]
            gaps[name] = max(b - a for a, b in zip(times, times[1:], strict=False))
        print(f"\nworkers: longest gap of a target across the SIGKILL of a worker {max(gaps.values()):.2f} s (interval {INTERVAL:g} s)")
        assert max(gaps.values()) <= 2 * INTERVAL + 0.5, (gaps, logs())
        # back: it takes back exactly its share
        back = time.time() + 2 * INTERVAL
        time.sleep(4 * INTERVAL)
        pids = [state["pid"] for state in health(port)[1]["workers"]]
        by_port = {p: n for n, pid in enumerate(pids) for p in client_ports(pid, fleet.server_address[1])}
        checkers: dict[str, set[int]] = {}
        for at, name, client in list(fleet.seen):
            if at > back and client in by_port:
                checkers.setdefault(name, set()).add(by_port[client])
        assert checkers == {name: {mine[name]} for name in NAMES}, (checkers, logs())
        assert Counter(i["target"] for i in store._rows("SELECT target FROM incidents")) == Counter(FAILING)
    finally:
        store.close()


def test_workers_is_a_number_or_auto_and_a_bad_value_names_its_line() -> None:
    from monitor.config import ConfigError, parse
    from monitor.config.values import cores

    assert parse("workers: auto\n").workers == cores() == len(os.sched_getaffinity(0))
    assert parse("workers: 3\n").workers == 3
    assert parse("concurrency: 8\n").workers == cores()  # left out, it is auto
    assert parse("workers: auto\n").workers_by_demand and parse("concurrency: 8\n").workers_by_demand
    assert not parse("workers: 3\n").workers_by_demand  # a number is what it says
    for bad, said in (("many", "'many' is not a number of workers: write auto"), ("0", "greater than or equal to 1")):
        with pytest.raises(ConfigError) as error:
            parse(f"concurrency: 8\nworkers: {bad}\n", "monitor.yaml")
        assert "monitor.yaml:2: workers:" in str(error.value) and said in str(error.value), str(error.value)


def test_a_worker_checks_only_its_share_of_the_live_workers_and_nothing_before_it_is_told() -> None:
    from monitor.checks.worker import Worker

    config = Config.model_validate({"targets": [{"name": n, "url": f"http://127.0.0.1:9/{n}"} for n in NAMES]})
    ranking = Ranking(config.targets, [0, 1])
    worker = Worker(None, 1)  # type: ignore[arg-type]  # no pipe: only its bookkeeping is used
    assert worker.own() == [] and len(worker.schedule) == 0  # not yet told it is live: checks nothing
    worker.follow(("share", ranking.shares([0, 1])[1], [0, 1], 8, config.backlog, None))
    two = {t.name for t in worker.own()}
    assert two == {n for n in NAMES if owners(n, [Member(0), Member(1)])[0].id == 1} and 0 < len(two) < len(NAMES)
    worker.follow(("share", ranking.shares([1])[1], [1], 8, config.backlog, None))  # worker 0 died: 1 takes its share
    assert {t.name for t in worker.own()} == set(NAMES) and len(worker.schedule) == len(NAMES)
    worker.follow(("share", ranking.shares([0, 1])[1], [0, 1], 8, config.backlog, None))
    assert {t.name for t in worker.own()} == two and len(worker.schedule) == len(two) and worker.concurrency == 8


def test_the_daemons_ranking_gives_each_target_to_the_owner_rendezvous_hashing_names() -> None:
    """The daemon works out every worker's share from one ranking: the owners :func:`owners` names, for any live set."""
    config = Config.model_validate({"targets": [{"name": f"t{i}", "url": f"http://127.0.0.1:9/{i}"} for i in range(300)]})
    ranking = Ranking(config.targets, list(range(5)))
    for live in ([0, 1, 2, 3, 4], [1, 3], [4], [0, 2, 3]):
        shares = ranking.shares(live)
        assert sorted(t.name for share in shares.values() for t in share) == sorted(t.name for t in config.targets)
        for member, share in shares.items():
            assert share and all(owners(t.name, [Member(m) for m in live])[0].id == member for t in share)
    assert ranking.shares([]) == {}


def test_a_reload_scores_only_the_targets_it_adds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every reload hashed every target with every worker again: 1.0 s for 50,000 targets and 16 workers, 4.2 s
    with 64, on a 2-core machine."""
    from monitor.checks import ownership

    first = Config.model_validate({"targets": [{"name": f"t{i}", "url": f"http://127.0.0.1:9/{i}"} for i in range(300)]})
    then = Config.model_validate({"targets": [{"name": f"t{i}", "url": f"http://127.0.0.1:8/{i}"} for i in range(100, 350)]})
    before = Ranking(first.targets, list(range(5)))
    scored: list[str] = []
    order = ownership.order

    def scoring(name: str, keys: Any) -> Any:
        scored.append(name)
        return order(name, keys)

    monkeypatch.setattr(ownership, "order", scoring)
    after = Ranking(then.targets, list(range(5)), before)
    assert sorted(scored) == sorted(f"t{i}" for i in range(300, 350))  # the 50 new names, not the 200 kept
    fresh = Ranking(then.targets, list(range(5)))
    for live in ([0, 1, 2, 3, 4], [2, 4]):
        assert after.shares(live) == fresh.shares(live)
    scored.clear()
    Ranking(then.targets, list(range(6)), after)  # another number of workers: every target again
    assert len(scored) == 250


def test_the_first_shares_wait_for_the_workers_that_start_together() -> None:
    """A worker ready before the others used to take every target at once (and kept the memory of all their
    windows after handing them on); now nothing is shared until all are ready, each then gets only its own."""
    import threading
    from multiprocessing.connection import Connection

    from prometheus_client import CollectorRegistry

    from monitor.daemon.workers import Workers
    from monitor.metrics import Metrics

    config = Config.model_validate({"targets": [{"name": n, "url": f"http://127.0.0.1:9/{n}"} for n in NAMES]})
    workers = Workers(2, lambda batch: None, metrics=Metrics(CollectorRegistry()), concurrency=lambda: 8)
    workers.assign(config.targets)
    ends = []
    for slot in workers.slots:
        ours, theirs = socket.socketpair()
        slot.conn, end = Connection(ours.detach()), Connection(theirs.detach())
        ends.append(end)
        threading.Thread(target=workers._read, args=(slot,), daemon=True).start()
    try:
        ends[0].send(("ready", 1))
        assert not ends[0].poll(1.0)  # alone: it waits for the other
        ends[1].send(("ready", 2))
        shares = [end.recv() for end in ends]
        live = [Member(0), Member(1)]
        for number, message in enumerate(shares):
            assert message[0] == "share" and message[2] == [0, 1]
            assert {t.name for t in message[1]} == {n for n in NAMES if owners(n, live)[0].id == number}
        assert len(shares[0][1]) + len(shares[1][1]) == len(NAMES) and not ends[0].poll(0.2)
    finally:
        for end in ends:
            end.close()


def test_batches_that_wait_while_one_is_recorded_are_recorded_together_as_one() -> None:
    """One thread records for every worker: what came while it recorded goes in one transaction, each verdict
    at its place in the merged batch, the phase counts added up; each reader waits until its batch is recorded."""
    import threading

    from prometheus_client import CollectorRegistry

    from monitor.core.batches import PHASE_BUCKETS, Batch, Counts, Verdict
    from monitor.core.results import Result
    from monitor.daemon.workers import Workers
    from monitor.metrics import Metrics

    def batch(name: str, failed: bool) -> Batch:
        result = Result(name, "http://x/", not failed, "critical" if failed else "ok", 200, 1.0, None, "", 1.0)
        counts = Counts(PHASE_BUCKETS)
        counts.add(0.002)
        verdicts = {1: Verdict(result, failed=True)} if failed else {}
        return Batch([(name, 1.0), (name, 2.0)], ["http", "http"], verdicts, {("http", "connect"): counts})

    delivered: list[Batch] = []
    first, release = threading.Event(), threading.Event()

    def deliver(got: Any) -> None:
        delivered.append(got)
        first.set()
        release.wait(10)

    workers = Workers(3, deliver, metrics=Metrics(CollectorRegistry()), concurrency=lambda: 8)
    readers = [threading.Thread(target=workers._hand, args=(batch(f"t{n}", n == 2),)) for n in range(3)]
    readers[0].start()
    assert first.wait(5)  # the first is being recorded; the other two come meanwhile
    for reader in readers[1:]:
        reader.start()
    wait_for(lambda: workers._recording.qsize() == 2, timeout=5)
    assert all(reader.is_alive() for reader in readers)  # nobody goes on before its batch is recorded
    release.set()
    for reader in readers:
        reader.join(5)
    assert not any(reader.is_alive() for reader in readers) and len(delivered) == 2
    merged = delivered[1]
    assert [row[0] for row in merged.rows] == ["t1", "t1", "t2", "t2"] and merged.kinds == ["http"] * 4
    assert list(merged.verdicts) == [3] and merged.verdicts[3].result.name == "t2"
    assert sum(merged.phases[("http", "connect")].buckets) == 2


def test_workers_that_start_together_have_every_target_due_at_once() -> None:
    """The first shares go to workers nobody checked for: each target is due at once, not at its next slot
    (a target at 300 s would wait up to five minutes for its first check)."""
    from monitor.checks.worker import Worker

    config = Config.model_validate(
        {"defaults": {"interval": "300s"}, "targets": [{"name": f"t{i}", "url": f"http://127.0.0.1:9/{i}"} for i in range(40)]}
    )
    shares, due = Ranking(config.targets, [0, 1]).shares([0, 1]), 0
    for number in (0, 1):
        worker = Worker(None, number)  # type: ignore[arg-type]  # bookkeeping only: no pipe
        worker.follow(("share", shares[number], [0, 1], 8, config.backlog, None, False))
        due += len(worker.schedule.take(1000, time.time() + 1))
    assert due == 40


def test_a_daemon_with_two_workers_checks_every_target_soon_after_it_starts(tmp_path: Path) -> None:
    """A real ``monitor run`` with ``workers: 2`` and targets at 120 s: every target checked within seconds of
    /healthz saying ok, as with one process."""
    names = [f"svc-{i:02d}" for i in range(12)]
    with Fleet() as fleet:
        port = free_port()
        daemon = start_daemon(tmp_path, fleet.base, names, port, f"{tmp_path}/monitor.db", interval="120s")
        try:
            wait_for(lambda: health(port)[1].get("status") == "ok", timeout=60, every=0.2)
            wait_for(lambda: set(fleet.checked()) == set(names), timeout=10, every=0.2)
        finally:
            daemon.terminate()
            daemon.wait(30)
