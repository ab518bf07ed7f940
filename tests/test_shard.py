"""Replicas split the targets by a stable hash of their names (issue 12, part 2)."""

from __future__ import annotations

import socket

import pytest
from prometheus_client import CollectorRegistry

from monitor.checks.schedule import replica_of
from monitor.config import Config, ConfigError, parse
from monitor.daemon import Daemon

NAMES = [f"svc-{i}.example" for i in range(3000)]


def test_each_target_has_one_replica_and_the_shares_are_even() -> None:
    owners = [replica_of(name, 3) for name in NAMES]
    assert set(owners) == {0, 1, 2}
    assert all(900 <= owners.count(r) <= 1100 for r in range(3))
    assert owners == [replica_of(name, 3) for name in NAMES]  # stable


def test_going_from_three_replicas_to_four_moves_a_quarter_of_the_targets_all_to_the_new_one() -> None:
    moved = [(replica_of(n, 3), replica_of(n, 4)) for n in NAMES if replica_of(n, 3) != replica_of(n, 4)]
    assert 0.2 <= len(moved) / len(NAMES) <= 0.3
    assert {after for _, after in moved} == {3}


def fleet(**extra: object) -> Config:
    return Config.model_validate(
        {
            "agent": {"mode": "off"},
            "database": ":memory:",
            **extra,
            "targets": [{"name": n, "url": "http://127.0.0.1:9/"} for n in NAMES[:300]],
        }
    )


def test_three_daemons_check_every_target_exactly_once() -> None:
    shares = []
    for index in range(3):
        daemon = Daemon(fleet(replicas=3, replica_index=index, lease="off"), registry=CollectorRegistry())
        shares.append({t.name for t in daemon.own_targets()})
        daemon.close()
    assert sorted(n for share in shares for n in share) == sorted(NAMES[:300])


def test_the_replica_index_comes_from_the_environment_or_the_statefulset_host_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "monitor-2")
    assert fleet(replicas=3).replica_index == 2
    monkeypatch.setenv("MONITOR_REPLICA_INDEX", "1")
    assert fleet(replicas=3).replica_index == 1
    assert fleet(replicas=3, replica_index=0).replica_index == 0
    assert fleet().replica_index == 0


def test_a_replica_that_cannot_tell_its_index_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "build-host")
    monkeypatch.delenv("MONITOR_REPLICA_INDEX", raising=False)
    with pytest.raises(ConfigError, match="MONITOR_REPLICA_INDEX"):
        parse("replicas: 3\ntargets: [{name: a, url: 'http://127.0.0.1:9/'}]\n")
    with pytest.raises(ConfigError, match="must be below replicas"):
        parse("replicas: 3\nreplica_index: 3\ntargets: [{name: a, url: 'http://127.0.0.1:9/'}]\n")
