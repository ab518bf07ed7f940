"""Notification take-over: a replica that stops renewing its lease leaves undelivered notifications in the
outbox; a live replica takes them over (:meth:`monitor.store.outbox.Outbox.take_over_notifications`) and
delivers each once, keeping its key, attempts and next attempt.

End to end: two ``monitor run`` replicas with a 3 s lease on one PostgreSQL, a webhook that answers 503, and
the owner of two failing targets killed (SIGKILL) with one notification failing (retried with backoff) and one
held (``group_window``); the webhook then accepts, and both arrive once, from the other replica.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

from monitor.checks.ownership import Member, owners
from monitor.store import Store
from tests.servers import Receiver, wait_for
from tests.test_failover import Daemons
from tests.test_replicas import Fleet

LEASE, INTERVAL, HOLD = 3.0, 1.0, 3.0
A, B = 1, 0  # A owns the failing targets and is killed; B takes over
MEMBERS = [Member(i, f"r{i}") for i in (0, 1)]


def outbox(store: Store, target: str) -> dict[str, Any] | None:
    """The opening notification of ``target``'s incident, as the outbox holds it now."""
    return store._one("""SELECT o.* FROM outbox o JOIN incidents i ON o.key = 'incident:' || i.id
                         WHERE i.target = ? ORDER BY o.id DESC LIMIT 1""", (target,))


def opened(hooks: Receiver) -> Counter[str]:
    return Counter(e["incident"]["target"] for e in list(hooks.received) if e["event"] == "opened")


def test_a_killed_replica_s_notifications_are_delivered_once_by_another(postgres_url: str, tmp_path: Path) -> None:
    names = [f"svc-{i:02d}" for i in range(12)]
    of_a = [n for n in names if owners(n, MEMBERS)[0].id == A]
    retried, held = of_a[:2]
    with Fleet() as fleet, Receiver(status=503) as hooks:
        targets = "".join(f"  - {{name: {n}, url: '{fleet.base}/t/{n}'}}\n" for n in names)
        config = tmp_path / "monitor.yaml"
        config.write_text(f"replicas: 2\nlease: {LEASE:g}s\nagent: {{mode: 'off'}}\ndetectors: {{consecutive: 2}}\n"
                          f"alerts: {{webhooks: [{{url: '{hooks.url}'}}], group_window: {HOLD:g}s, retry_max: 2s}}\n"
                          f"defaults: {{interval: {INTERVAL:g}s, timeout: 2s}}\ntargets:\n{targets}")
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
            assert {outbox(store, n)["replica"] for n in (retried, held)} == {A}  # type: ignore[index]

            killed = time.time()
            daemons.processes[A].send_signal(signal.SIGKILL)
            daemons.processes[A].wait(10)
            hooks.status = 200
            wait_for(lambda: opened(hooks).keys() >= {retried, held}, timeout=LEASE + 8, every=0.1)
            took = time.time() - killed
            print(f"\ntake-over: both notifications of the killed replica delivered {took:.2f} s after the kill "
                  f"(lease {LEASE:g} s)")
            assert took <= LEASE + 4, daemons.logs()

            time.sleep(2 * INTERVAL)  # nothing more comes: each was sent once
            assert opened(hooks) == Counter({retried: 1, held: 1}), (hooks.received, daemons.logs())
            rows = {n: outbox(store, n) for n in (retried, held)}
            assert {row["replica"] for row in rows.values() if row} == {B}, rows
            assert all(row and row["delivered_at"] for row in rows.values()), rows
            assert rows[held]["delivered_at"] >= first["next_attempt_at"], rows  # type: ignore[index]
            assert f"took over 2 undelivered notifications of replica {A}" in (tmp_path / f"replica-{B}.log").read_text()
        finally:
            daemons.stop()
            store.close()
