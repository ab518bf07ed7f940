"""Issue #33, item 5: a replica frozen (SIGSTOP) past its lease, then continued, checks none of the targets it no
longer owns before it has renewed its lease and waited one renewal, as a returning replica does."""

from __future__ import annotations

import signal
import time
import types
from pathlib import Path

import pytest
from servers import wait_for
from test_failover import Daemons, checkers, checks
from test_replicas import Fleet

from monitor.checks.ownership import Member, owners
from monitor.config import Config
from monitor.daemon import members
from monitor.store import Store

LEASE, INTERVAL = 3.0, 1.0
PERIOD = LEASE / 3  # a renewal
MEMBERS = [Member(i, f"r{i}") for i in (0, 1)]


def test_a_replica_frozen_past_its_lease_waits_a_renewal_before_it_checks_again(postgres_url: str, tmp_path: Path) -> None:
    names = [f"svc-{i:02d}" for i in range(12)]
    mine = {n: owners(n, MEMBERS)[0].location for n in names}
    frozen = sorted(n for n in names if mine[n] == "r0")
    with Fleet() as fleet:
        config = tmp_path / "monitor.yaml"
        config.write_text(
            f"replicas: 2\nworkers: 1\nlease: {LEASE:g}s\nagent: {{mode: 'off'}}\n"
            f"defaults: {{interval: {INTERVAL:g}s, timeout: 2s}}\ntargets:\n"
            + "".join(f"  - {{name: {n}, url: '{fleet.base}/t/{n}'}}\n" for n in names)
        )
        store = Store(postgres_url)
        daemons = Daemons(config, postgres_url, tmp_path)
        try:
            for index in (0, 1):
                daemons.start(index)
            wait_for(lambda: checkers(checks(store, time.time() - 2 * INTERVAL)) == {n: {mine[n]} for n in names}, timeout=40, every=0.5)
            stopped = time.time()
            daemons.processes[0].send_signal(signal.SIGSTOP)
            # replica 1 takes the frozen one's share once its lease has run out
            wait_for(
                lambda: all("r1" in checkers(checks(store, stopped + LEASE)).get(n, set()) for n in frozen),
                timeout=LEASE + 6 * INTERVAL,
                every=0.2,
            )
            continued = time.time()
            daemons.processes[0].send_signal(signal.SIGCONT)
            # it takes its share back, after a renewal and a wait of one more
            wait_for(lambda: {r["target"] for r in checks(store, continued) if r["location"] == "r0"} == set(frozen), timeout=20, every=0.2)
            time.sleep(3 * INTERVAL)
            rows = [r for r in checks(store, continued) if r["location"] == "r0"]
            first = min(r["checked_at"] for r in rows) - continued
            print(
                f"\nfrozen {continued - stopped:.1f} s: the first check after SIGCONT came {first:.2f} s after it "
                f"(a renewal is {PERIOD:g} s)"
            )
            assert first >= PERIOD / 2, (first, daemons.logs())
            later = checks(store, time.time() - 2 * INTERVAL)
            assert checkers(later) == {n: {mine[n]} for n in names}, daemons.logs()  # one owner each again
        finally:
            daemons.processes[0].send_signal(signal.SIGCONT)
            daemons.stop()
            store.close()


def test_a_replica_frozen_just_past_its_lease_checks_nothing_on_waking(postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The window the test above meets under load, made exact: frozen for its lease and a hundredth of a second,
    wherever the freeze falls between two looks, a replica checks nothing on waking (it used to go on checking
    until a renewal more had passed), and checks again once a look has renewed its lease and waited one renewal."""
    offset = [0.0]
    monkeypatch.setattr(members, "time", types.SimpleNamespace(monotonic=lambda: time.monotonic() + offset[0]))
    config = Config.model_validate({"replicas": 2, "replica_index": 0, "lease": f"{LEASE:g}s", "targets": []})
    store = Store(postgres_url)
    ownership = members.Ownership(lambda: config, store)
    ownership.start()
    try:
        assert wait_for(ownership.may_check, timeout=10)
        offset[0] = LEASE + 0.01  # no look ran for a whole lease: the process was frozen
        assert not ownership.may_check()
        assert wait_for(ownership.may_check, timeout=10)
    finally:
        ownership.stop()
        store.close()
