"""Notification take-over: a replica that stops renewing its lease leaves undelivered notifications in the
outbox; a live replica takes them over (:meth:`monitor.store.outbox.Outbox.take_over_notifications`) and
delivers each once, keeping its key, attempts and next attempt.

End to end: two ``monitor run`` replicas with a 3 s lease on one PostgreSQL, a webhook that answers 503, and
the owner of two failing targets killed (SIGKILL) with one notification failing (retried with backoff) and one
held (``group_window``); the webhook then accepts, and both arrive once, from the other replica.
"""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from outbox import plain_alerts
from past import known
from servers import Receiver, wait_for
from test_failover import Daemons
from test_replicas import Fleet

from monitor.alerts.registry import receivers
from monitor.checks.ownership import Member, owners
from monitor.config import Config
from monitor.store import Store

LEASE, INTERVAL, HOLD = 3.0, 1.0, 3.0
A, B = 1, 0  # A owns the failing targets and is killed; B takes over
MEMBERS = [Member(i, f"r{i}") for i in (0, 1)]


def outbox(store: Store, target: str) -> dict[str, Any] | None:
    """The opening notification of ``target``'s incident, as the outbox holds it now."""
    return store._one(
        """SELECT o.* FROM outbox o JOIN incidents i ON o.key = 'incident:' || i.id
                         WHERE i.target = ? ORDER BY o.id DESC LIMIT 1""",
        (target,),
    )


def opened(hooks: Receiver) -> Counter[str]:
    return Counter(e["incident"]["target"] for e in list(hooks.received) if e["event"] == "opened")


def test_a_killed_replica_s_notifications_are_delivered_once_by_another(postgres_url: str, tmp_path: Path) -> None:
    names = [f"svc-{i:02d}" for i in range(12)]
    of_a = [n for n in names if owners(n, MEMBERS)[0].id == A]
    retried, held = of_a[:2]
    with Fleet() as fleet, Receiver(status=503) as hooks:
        targets = "".join(f"  - {{name: {n}, url: '{fleet.base}/t/{n}'}}\n" for n in names)
        config = tmp_path / "monitor.yaml"
        config.write_text(
            f"replicas: 2\nworkers: 1\nlease: {LEASE:g}s\nagent: {{mode: 'off'}}\ndetectors: {{consecutive: 2}}\n"
            f"alerts: {{webhooks: [{{url: '{hooks.url}'}}], group_window: {HOLD:g}s, retry_max: 2s}}\n"
            f"defaults: {{interval: {INTERVAL:g}s, timeout: 2s}}\ntargets:\n{targets}"
        )
        store = Store(postgres_url)
        daemons = Daemons(config, postgres_url, tmp_path)
        try:
            for index in (0, 1):
                daemons.start(index)
            fleet.failing = {retried}
            # A queued the first and tried it: the webhook answered 503, so it waits for its next attempt
            wait_for(lambda: (row := outbox(store, retried)) and row["attempts"] >= 1, timeout=30, every=0.2)
            fleet.failing = {retried, held}
            # the second is held (group_window): queued by A, never tried, due later
            first = wait_for(lambda: outbox(store, held), timeout=15, every=0.1)
            assert first["attempts"] == 0 and first["next_attempt_at"] > time.time(), first
            assert {known(outbox(store, n))["replica"] for n in (retried, held)} == {A}

            killed = time.time()
            daemons.processes[A].send_signal(signal.SIGKILL)
            daemons.processes[A].wait(10)
            hooks.status = 200
            wait_for(lambda: opened(hooks).keys() >= {retried, held}, timeout=LEASE + 8, every=0.1)
            took = time.time() - killed
            print(f"\ntake-over: both notifications of the killed replica delivered {took:.2f} s after the kill (lease {LEASE:g} s)")
            assert took <= LEASE + 4, daemons.logs()

            time.sleep(2 * INTERVAL)  # nothing more comes: each was sent once
            assert opened(hooks) == Counter({retried: 1, held: 1}), (hooks.received, daemons.logs())
            rows = {n: outbox(store, n) for n in (retried, held)}
            assert {row["replica"] for row in rows.values() if row} == {B}, rows
            assert all(row and row["delivered_at"] for row in rows.values()), rows
            assert known(rows[held])["delivered_at"] >= first["next_attempt_at"], rows
            assert f"took over 2 undelivered notifications of replica {A}" in (tmp_path / f"replica-{B}.log").read_text()
        finally:
            daemons.stop()
            store.close()


STATE = ("id", "receiver", "payload", "key", "attempts", "next_attempt_at", "created_at", "last_error")


def test_the_take_over_moves_only_a_dead_replica_s_pending_notifications_keeping_their_state(postgres_url: str) -> None:
    dead, other, me = (Store(postgres_url, replica=r) for r in (1, 2, 0))
    try:
        dead.members.renew_member(1.0)  # short, but longer than the eight writes before the first look take on a loaded machine
        other.members.renew_member(30)
        retried, fresh, sent, dropped = (dead.outbox.enqueue("hook", {"n": n}, key=f"incident:{n}") for n in range(4))
        dead.outbox.mark_failed(retried, "503", time.time() + 60)
        dead.outbox.mark_failed(retried, "503", time.time() + 120)
        dead.outbox.mark_delivered(sent)
        dead.outbox.drop_notification(dropped, "gave up")
        theirs = other.outbox.enqueue("hook", {"n": 9}, key="incident:9")
        before = {row["id"]: row for row in me._rows("SELECT * FROM outbox")}

        assert me.outbox.take_over_notifications() == {}  # its lease still runs: nothing moves
        wait_for(lambda: len(me.members.renew_member(30)) == 2, timeout=5)  # the dead one's lease ended
        assert me.outbox.take_over_notifications() == {1: 2}
        after = {row["id"]: row for row in me._rows("SELECT * FROM outbox")}
        assert {i: row["replica"] for i, row in after.items()} == {retried: 0, fresh: 0, sent: 1, dropped: 1, theirs: 2}
        assert all({k: after[i][k] for k in STATE} == {k: before[i][k] for k in STATE} for i in after)
        assert after[retried]["attempts"] == 2 and after[retried]["next_attempt_at"] > time.time() + 100
        assert me.outbox.take_over_notifications() == {}

        dead.members.renew_member(30)  # it returns: what it had is no longer its to deliver
        assert dead.outbox.due_notifications(time.time() + 1000) == [] and dead.outbox.pending_notifications() == 0
        assert [n.id for n in me.outbox.due_notifications(time.time() + 1000)] == [retried, fresh]
    finally:
        for store in (dead, other, me):
            store.close()


def test_two_replicas_taking_over_at_once_move_each_notification_once(postgres_url: str) -> None:
    dead, left, right = (Store(postgres_url, replica=r) for r in (1, 0, 2))
    try:
        for n in range(300):
            dead.outbox.enqueue("hook", {"n": n}, key=f"incident:{n}")
        left.members.renew_member(30)
        right.members.renew_member(30)  # the dead one never held a lease: its rows are anyone's
        start = threading.Barrier(2)
        taken: dict[int, dict[int, int]] = {}

        def take(store: Store) -> None:
            start.wait()
            taken[store.replica] = store.outbox.take_over_notifications()

        threads = [threading.Thread(target=take, args=(store,)) for store in (left, right)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        owners_now = Counter(row["replica"] for row in dead._rows("SELECT replica FROM outbox"))
        assert sum(t.get(1, 0) for t in taken.values()) == 300, taken
        assert owners_now == Counter({r: t[1] for r, t in taken.items() if t}), (owners_now, taken)
    finally:
        for store in (dead, left, right):
            store.close()


def test_a_replica_stops_its_batch_at_a_notification_taken_from_it(db_path: str) -> None:
    """Frozen past its lease with a batch in hand, a replica sends the one in flight, then leaves the rest."""
    with Receiver() as hook:
        config = Config.model_validate({"alerts": {"webhooks": [{"url": hook.url}]}}).alerts
        mine, heir = Store(db_path, replica=0), Store(db_path, replica=1)
        name = next(iter(receivers(config)))
        ids = [mine.outbox.enqueue(name, {"n": n}) for n in range(3)]
        heir.members.renew_member(30)  # replica 0 holds no lease: the first request finds its rows taken over
        client = httpx.Client(trust_env=False, event_hooks={"request": [lambda _: heir.outbox.take_over_notifications()]})
        try:
            assert plain_alerts(config, mine, client=client).deliver_due() == 1
            assert [n.id for n in heir.outbox.due_notifications(time.time())] == ids[1:]
            assert plain_alerts(config, heir).deliver_due() == 2
            assert sorted(body["n"] for body in hook.received) == [0, 1, 2]
        finally:
            client.close()
            mine.close()
            heir.close()
