"""Every core, in memory: the workers are forked from one fork server that imported what they run, so they share
those pages instead of each importing its own; and a daemon killed outright leaves none of them behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from servers import free_port, wait_for
from test_workers import Traced, health, start_daemon

from monitor.config import Target

NAMES = [f"svc-{i:02d}" for i in range(8)]


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _rollup(pid: int) -> dict[str, int]:
    """A process's memory, in kB, by kind (Rss, Pss, Shared_Dirty, Private_Dirty, ...)."""
    fields = (line.split() for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])
    return {f[0].rstrip(":"): int(f[1]) for f in fields if len(f) >= 2 and f[1].isdigit()}


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and _parent(int(entry.name)) == pid:
                found.append(int(entry.name))
        except (FileNotFoundError, ProcessLookupError):
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_workers_share_the_fork_servers_pages_and_go_with_a_killed_daemon(tmp_path: Path, store_location: Callable[..., str]) -> None:
    port = free_port()
    with Traced() as fleet:
        daemon = start_daemon(tmp_path, fleet.base, NAMES, port, store_location(tmp_path / "monitor.db"), interval="1s")
        try:
            wait_for(lambda: health(port)[1].get("status") == "ok", timeout=60, every=0.1)
            wait_for(lambda: len({name for _, name, _ in list(fleet.seen)}) == len(NAMES), timeout=30)  # both checking
            pids = [w["pid"] for w in health(port)[1]["workers"]]
            servers = {_parent(pid) for pid in pids}
            assert len(servers) == 1 and daemon.pid not in servers, (daemon.pid, servers)  # one fork server, not the daemon
            server = servers.pop()
            assert _parent(server) == daemon.pid
            # pages written before the fork (the imported modules) are shared with the server and each other
            shared = {pid: _rollup(pid)["Shared_Dirty"] for pid in pids}
            assert all(kb >= 8 * 1024 for kb in shared.values()), shared
            assert all(_rollup(pid)["Pss"] < _rollup(pid)["Rss"] * 0.8 for pid in pids)
            children = _children(daemon.pid)  # the fork server, and multiprocessing's resource tracker
            assert server in children
            os.kill(daemon.pid, signal.SIGKILL)  # no stop, no goodbye: the pipes close
            daemon.wait(10)
            wait_for(lambda: not any(_alive(pid) for pid in [*pids, *children]), timeout=15, every=0.1)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                daemon.wait(10)


EXITS = """
import socket, sys
from multiprocessing.connection import Connection
from monitor.daemon.forks import Fork
if __name__ == "__main__":
    ours, theirs = socket.socketpair()
    end = Connection(theirs.detach())
    Fork(end, 0, "WARNING")
    end.close()
    print(Connection(ours.detach()).recv()[1], flush=True)  # ready; then this process ends, its pipe held open
"""


def test_a_process_that_ends_without_stopping_its_workers_still_exits(tmp_path: Path) -> None:
    """multiprocessing joins the children it started at exit: a worker left running would wait for the pipe the
    exiting process holds, and the exit would wait for it."""
    script = tmp_path / "exits.py"
    script.write_text(EXITS)
    ended = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30, cwd=Path(__file__).parents[1])
    assert ended.returncode == 0, ended.stderr
    pid = int(ended.stdout.split()[0])
    wait_for(lambda: not _alive(pid), timeout=10, every=0.05)


def test_auto_starts_the_workers_the_fleet_needs_and_more_when_a_reload_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``workers: auto`` on a machine of many cores with a small fleet starts two workers, not one per core; a
    reload that adds checks a second starts more (each takes its share); one that takes them away stops none."""
    from prometheus_client import CollectorRegistry

    from monitor.config import Config
    from monitor.daemon import workers as module
    from monitor.metrics import Metrics

    monkeypatch.setattr(module, "PER_WORKER", 10)  # checks a second a worker is given: 10 here, for a small fleet

    def fleet(size: int) -> list[Target]:  # at 10 s: a tenth of a check a second each, refused at once
        return Config.model_validate(
            {"targets": [{"name": f"t{i}", "url": f"http://127.0.0.1:9/{i}", "interval": "10s"} for i in range(size)]}
        ).targets

    workers = module.Workers(6, lambda batch: None, metrics=Metrics(CollectorRegistry()), concurrency=lambda: 8, by_demand=True).start()
    try:
        workers.assign(fleet(40))  # 4 checks a second: at least two workers
        wait_for(lambda: [s["live"] for s in workers.states()] == [True, True], timeout=30, every=0.05)
        workers.assign(fleet(350))  # 35 checks a second: four
        wait_for(lambda: [s["live"] for s in workers.states()] == [True] * 4, timeout=30, every=0.05)
        shares = workers._ranking.shares([0, 1, 2, 3])
        assert all(len(shares[n]) > 40 for n in range(4)), {n: len(t) for n, t in shares.items()}
        workers.assign(fleet(40))
        assert len(workers.states()) == 4
    finally:
        workers.stop(1.0)
    assert all(not _alive(s["pid"]) for s in workers.states())
    assert module.needed(fleet(40), 1) == 1 and module.needed(fleet(40), 6) == 2 and module.needed(fleet(5_000), 6) == 6


def test_auto_keeps_as_many_checks_in_flight_as_a_worker_per_core_would() -> None:
    """Fewer workers (for the CPU the fleet needs) must not mean fewer checks waiting on slow targets: by demand,
    ``concurrency`` counts for each core, spread over the workers started (up to four times ``concurrency``: a process
    has its own limit of descriptors); a number of workers keeps it per worker."""
    from prometheus_client import CollectorRegistry

    from monitor.config import Config
    from monitor.daemon import workers as module
    from monitor.metrics import Metrics

    targets = Config.model_validate({"targets": [{"name": f"t{i}", "url": f"http://127.0.0.1:9/{i}"} for i in range(30)]}).targets
    for by_demand, each in ((True, 8 * 4), (False, 8)):  # 8 x 16 cores over 2 workers is 64: capped at 4 x 8
        workers = module.Workers(16, lambda batch: None, metrics=Metrics(CollectorRegistry()), concurrency=lambda: 8, by_demand=by_demand)
        workers.assign(targets)  # not started: nothing is forked, the shares wait for workers that say ready
        assert workers.each_concurrency() == each and len(workers.states()) == (2 if by_demand else 16)


def test_a_reload_between_auto_and_a_number_of_workers_says_it_takes_a_restart() -> None:
    """``auto`` is the core count at most, so ``workers: 16`` on 16 cores has the same number: it still changes how
    many start, and a reload says so (and a config copied with its number updated, as a reload does, is still auto)."""
    from monitor.config import Config
    from monitor.daemon.restarts import restart_needed

    targets = {"targets": [{"name": "a", "url": "http://127.0.0.1:9/"}]}
    auto = Config.model_validate(targets)
    number = Config.model_validate({**targets, "workers": auto.workers})
    assert auto.model_copy(update={"workers": auto.workers}).workers_by_demand
    for old, new in ((auto, number), (number, auto)):
        said = restart_needed(old, new, database="monitor.db")
        assert any("workers change at the next restart" in line for line in said), said
    assert restart_needed(auto, Config.model_validate({**targets, "workers": "auto"}), database="monitor.db") == []


# A process that imports the forks module and then uses multiprocessing's fork server for something of its own.
SERVER_OF_ITS_OWN = """
import sys, multiprocessing

def imported():
    sys.exit(3 if "monitor.wiring" in sys.modules else 0)

if __name__ == "__main__":
    import monitor.daemon.forks
    process = multiprocessing.get_context("forkserver").Process(target=imported)
    process.start()
    process.join(60)
    print(process.exitcode, flush=True)
"""


def test_importing_the_forks_leaves_the_fork_server_as_it_was(tmp_path: Path) -> None:
    """What the fork server preloads is set when a daemon starts its first worker (forks.prepare), not when the
    module is imported: a process that imports it and forks for itself gets a server that imported nothing of ours."""
    script = tmp_path / "own.py"
    script.write_text(SERVER_OF_ITS_OWN)
    ended = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[1])
    assert ended.returncode == 0, ended.stderr
    assert ended.stdout.split() == ["0"], ended.stdout
