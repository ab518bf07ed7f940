"""Results have one way in: the agent's re-checks are recorded as the daemon's checks are."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry
from servers import Misbehaving

from monitor.config import Config
from monitor.daemon import Daemon
from monitor.store import Store


def test_an_agent_recheck_is_counted_kept_while_the_database_is_locked_and_seen_by_the_detectors(
    web: Misbehaving, db_path: str, write_lock: Any
) -> None:
    config = Config.model_validate(
        {
            "targets": [{"name": "api", "url": web.url("/500"), "timeout": 1}],
            "detectors": {"consecutive": 2},
            "model": {"id": "builtin"},
            "agent": {"max_runs_per_hour": 0},
            "metrics": {"enabled": False},
        }
    )
    daemon = Daemon(config, store=Store(db_path, timeout=0.05), registry=CollectorRegistry())
    assert daemon.investigator is not None  # agent.mode is on by default
    check = daemon.investigator.agent.tools["check_target"]  # what the model calls

    def checks() -> float:
        labels = {"target": "api", "kind": "http", "result": "critical"}
        return daemon.metrics.registry.get_sample_value("monitor_checks_total", labels) or 0.0

    assert not check.forward("api").startswith("ERROR")
    assert (checks(), daemon.store.results.count_results("api")) == (1.0, 1)
    with write_lock(db_path):  # another writer holds the database: the re-check waits with the daemon's
        assert not check.forward("api").startswith("ERROR")
        assert (checks(), daemon.cycle.unsaved()) == (2.0, 1)
    assert daemon.store.incidents.open_incidents("api") == []
    daemon.cycle.after_checks([])  # the next cycle stores what was kept back, and the detectors see both
    assert (daemon.store.results.count_results("api"), daemon.cycle.unsaved()) == (2, 0)
    [incident] = daemon.store.incidents.open_incidents("api")
    assert incident.pattern == "consecutive"
    daemon.close()
