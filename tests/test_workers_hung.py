"""Every core, a worker that hangs: a real ``monitor run`` with ``workers: 2``, one worker stopped with SIGSTOP.

It does not die, so its pipe stays open; only its silence tells. Within the silence bound plus two intervals
the other worker checks every one of its targets, the stopped one is killed (and reaped) and a new one takes
back its share, /healthz says degraded meanwhile, the restart is counted as ``reason="hung"``, and no target
has two results for one slot of its schedule.
"""

from __future__ import annotations

import math
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest
from servers import free_port, wait_for
from test_workers import Traced, health, restarts, start_daemon, stored

from monitor.checks.ownership import Member, Ranking, owners
from monitor.checks.schedule import next_slot, phase
from monitor.daemon.workers import SILENCE
from monitor.store import Store

INTERVAL, WORKERS = 0.5, 2
NAMES = [f"svc-{i:02d}" for i in range(16)]


@pytest.fixture
def fleet() -> Any:
    with Traced() as server:
        yield server


def test_a_hung_worker_is_noticed_by_its_silence_killed_and_replaced(
    fleet: Traced, tmp_path: Path, store_location: Callable[..., str]
) -> None:
    members = [Member(n) for n in range(WORKERS)]
    victims = {name for name in NAMES if owners(name, members)[0].id == 1}
    assert victims and len(victims) < len(NAMES)
    port, database = free_port(), tmp_path / "monitor.db"
    daemon = start_daemon(tmp_path, fleet.base, NAMES, port, store_location(database), interval=f"{INTERVAL:g}s")

    def logs() -> str:
        return (tmp_path / "run.log").read_text()[-4000:]

    stopped_pid = 0
    try:
        wait_for(lambda: health(port)[1].get("status") == "ok", timeout=60, every=0.1)  # both workers live
        settled = time.time()
        time.sleep(2 * INTERVAL)
        stopped_pid = health(port)[1]["workers"][1]["pid"]
        os.kill(stopped_pid, signal.SIGSTOP)
        stopped = time.time()
        _taken_over(port, fleet, victims, stopped, stopped_pid, logs)
        _replaced(port, stopped_pid, logs)
        time.sleep(2 * INTERVAL)  # it takes back its share: none checked twice in one slot around that either
        _gaps_and_slots(database, settled, stopped, victims, logs)
    finally:
        if stopped_pid:
            try:
                os.kill(stopped_pid, signal.SIGCONT)  # on the old code it still hangs: let it see the stop
            except ProcessLookupError:
                pass
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(30)
    assert daemon.returncode == 0, logs()


def _taken_over(port: int, fleet: Traced, victims: set[str], stopped: float, stopped_pid: int, logs: Any) -> None:
    """Every target of the stopped worker checked again, by the other, within the bound plus two intervals;
    /healthz degraded once the stopped one is left out."""
    bound = SILENCE + 2 * INTERVAL
    try:
        wait_for(
            lambda: {name for at, name, _ in list(fleet.seen) if at > stopped + 2 * INTERVAL} >= victims, timeout=bound + 1.0, every=0.05
        )
    except AssertionError:
        raise AssertionError(f"the stopped worker's targets were not checked within {bound:g} s\n{logs()}") from None
    status, body = wait_for(lambda: (lambda h: h if h[1].get("status") == "degraded" else None)(health(port)), timeout=2, every=0.02)
    assert status == 200 and body["workers"][1]["live"] is False, body
    assert re.search(rf"worker 1 \(pid {stopped_pid}\) silent for \d+\.\d s", logs()), logs()


def _replaced(port: int, stopped_pid: int, logs: Any) -> None:
    """The stopped worker killed and reaped (its pid is gone), a new one live in its place, counted as hung."""
    wait_for(lambda: not Path(f"/proc/{stopped_pid}").exists(), timeout=5, every=0.05)
    fresh = wait_for(
        lambda: (lambda w: w if w["live"] and w["pid"] != stopped_pid else None)(health(port)[1]["workers"][1]), timeout=30, every=0.05
    )
    assert fresh["restarts"] == 1, fresh
    assert restarts(port) == {"hung": 1.0}, (restarts(port), logs())
    assert health(port)[1]["status"] == "ok", logs()


def _gaps_and_slots(database: Path, settled: float, stopped: float, victims: set[str], logs: Any) -> None:
    store = Store(str(database))
    try:
        rows = stored(store, settled)
    finally:
        store.close()
    times: dict[str, list[float]] = {}
    for row in rows:
        times.setdefault(row["target"], []).append(row["checked_at"])
    gaps = {name: max(b - a for a, b in zip(at, at[1:], strict=False)) for name, at in times.items()}
    longest = max(gaps[name] for name in victims)
    print(
        f"\nworkers: longest gap of a target across the SIGSTOP of a worker {longest:.2f} s "
        f"(silence bound {SILENCE:g} s, interval {INTERVAL:g} s)"
    )
    assert longest <= SILENCE + 2 * INTERVAL, (gaps, logs())
    assert max(gaps[name] for name in set(times) - victims) <= 2 * INTERVAL, (gaps, logs())
    slots = Counter((name, math.floor((at - phase(name, INTERVAL)) / INTERVAL)) for name, ats in times.items() for at in ats)
    twice = {slot: n for slot, n in slots.items() if n > 1}
    doubled = sorted(
        round(at - stopped, 2)
        for (name, slot), n in twice.items()
        for at in times[name]
        if math.floor((at - phase(name, INTERVAL)) / INTERVAL) == slot
    )
    assert not twice, f"{len(twice)} slots checked twice, at {doubled} s after the stop\n{logs()}"


def test_a_busy_worker_beats_on_and_a_stuck_loop_falls_silent(web: Any) -> None:
    """A check that takes long awaits on the loop, so the heartbeat goes on; a loop held by CPU stops it."""
    from monitor.checks.worker import Worker
    from monitor.config import Config

    ours, theirs = socket.socketpair()
    daemon_end, worker_end = Connection(ours.detach()), Connection(theirs.detach())
    config = Config.model_validate({"targets": [{"name": "slow", "url": web.url("/hang"), "interval": "10s", "timeout": "5s"}]})
    worker = Worker(worker_end, 0, heartbeat=0.3)  # an idle loop turns every 0.25 s (IDLE)
    worker.loop.start()
    threading.Thread(target=worker.beat, daemon=True).start()
    try:
        worker.follow(("share", config.targets, [0], 4, config.backlog, None))
        wait_for(lambda: worker.loop.in_flight() == 1, timeout=5)
        assert _heard(daemon_end, 1.2) >= 2 and worker.loop.in_flight() == 1  # four beats' time, a check waiting
        assert worker.loop._loop is not None
        worker.loop._loop.call_soon_threadsafe(time.sleep, 2.0)  # the loop held, as by a C call
        time.sleep(0.4)  # the beat of a turn before the hold may still be on its way
        _heard(daemon_end, 0.0)
        assert _heard(daemon_end, 1.2) == 0
        time.sleep(0.4)
        assert _heard(daemon_end, 1.0) >= 1  # the loop turns again: so does the heartbeat
    finally:
        worker._stopped.set()
        worker.loop.stop(0.0)
        daemon_end.close()
        worker_end.close()


def _heard(conn: Connection, seconds: float) -> int:
    """How many "alive" messages came over ``conn`` in ``seconds`` (at least those already waiting)."""
    deadline, beats = time.monotonic() + seconds, 0
    while conn.poll(max(0.0, deadline - time.monotonic())):
        beats += conn.recv()[0] == "alive"
    return beats


def test_a_share_taken_back_from_live_workers_keeps_its_beat_one_taken_from_a_dead_one_is_due_at_once() -> None:
    from monitor.checks.worker import Worker
    from monitor.config import Config

    config = Config.model_validate({"targets": [{"name": n, "url": f"http://127.0.0.1:9/{n}", "interval": "60s"} for n in NAMES]})
    now = time.time()
    ranking = Ranking(config.targets, [0, 1])
    first, late = Worker(None, 0), Worker(None, 1)  # type: ignore[arg-type]  # bookkeeping only: no pipe
    for worker, live in ((first, [0]), (late, [0, 1])):  # the late one joins while the first checks: handed over
        worker.follow(("share", ranking.shares(live)[worker.number], live, 8, config.backlog, None, worker is late))
    assert all(due <= time.time() for due in first.schedule.due_times().values())  # nobody checked them: at once
    taken_back = late.schedule.due_times()
    assert taken_back and all(due == next_slot(now, phase(name, 60.0), 60.0) for name, due in taken_back.items())
    first.follow(("share", ranking.shares([0, 1])[0], [0, 1], 8, config.backlog, None))
    first.follow(("share", ranking.shares([0])[0], [0], 8, config.backlog, None))  # worker 1 died: its targets are due at once
    assert all(first.schedule.due_times()[name] <= time.time() for name in taken_back)


def test_a_worker_hung_when_the_first_shares_go_out_is_still_killed() -> None:
    """The first shares (20,000 targets: more than a socket's buffer) go out when the gathering ends; a worker
    ready and then hung must not hold the watch, which kills it, nor the lock the others need."""
    from prometheus_client import CollectorRegistry

    from monitor.config import Config
    from monitor.daemon import workers as module
    from monitor.daemon.workers import Workers
    from monitor.metrics import Metrics

    config = Config.model_validate({"targets": [{"name": f"t{i}", "url": f"http://127.0.0.1:9/{i}"} for i in range(20_000)]})
    workers = Workers(2, lambda batch: None, metrics=Metrics(CollectorRegistry()), concurrency=lambda: 8)
    workers.assign(config.targets)
    slot = workers.slots[0]  # worker 0: ready, then hung (reads nothing more); worker 1 never says ready
    ours, theirs = socket.socketpair()
    slot.conn, end = Connection(ours.detach()), Connection(theirs.detach())
    slot.process = subprocess.Popen(["sleep", "120"])  # stands for the hung worker's process
    threading.Thread(target=workers._read, args=(slot,), daemon=True).start()
    threading.Thread(target=workers._watch, daemon=True).start()
    try:
        end.send(("ready", slot.process.pid))  # then it hangs: never reads its share
        wait_for(lambda: slot.hung, timeout=module.GATHER + module.SILENCE + 5)
        wait_for(lambda: not workers._lock.locked(), timeout=5)  # its pipe shut: the send under the lock failed
    finally:
        workers._stopping.set()
        slot.process.kill()
        slot.process.wait()
        end.close()
