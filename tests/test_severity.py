"""Severity that means something (issue 9, item 2): a warning is not down, incidents escalate, recovery closes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner
from past import known
from prometheus_client import CollectorRegistry
from servers import Misbehaving

from monitor.checks.engine import Checker
from monitor.cli.main import main
from monitor.config import Config, Target
from monitor.daemon import Cycle, daemon_cycle
from monitor.metrics import Metrics
from monitor.store import Store


def setup(web: Misbehaving, db_path: str, **detectors: Any) -> tuple[Config, Cycle, CollectorRegistry, Store]:
    config = Config.model_validate(
        {
            "database": db_path,
            "agent": {"mode": "off"},
            "detectors": {"consecutive": 1, **detectors},
            "targets": [{"name": "api", "url": web.url("/healthy"), "timeout": "2s"}],
        }
    )
    store, registry = Store(db_path), CollectorRegistry()
    return config, daemon_cycle(config, store, metrics=Metrics(registry)), registry, store


def behaving(web: Misbehaving, how: str) -> Target:
    """Target ``api`` answering ok, with a warning (slow past max_latency) or down (500)."""
    if how == "warning":
        return Target.model_validate({"name": "api", "url": web.url("/slowish"), "timeout": "2s", "expect": {"max_latency": "1ms"}})
    return Target.model_validate({"name": "api", "url": web.url("/500" if how == "down" else "/healthy"), "timeout": "2s"})


def check(cycle: Cycle, web: Misbehaving, *hows: str) -> list[str]:
    kinds: list[str] = []
    for how in hows:
        kinds += [e.kind for e in cycle.after_checks(Checker().run([behaving(web, how)]))]
    return kinds


def test_a_warning_is_not_down_and_opens_a_warning_incident(web: Misbehaving, db_path: str) -> None:
    _, cycle, registry, store = setup(web, db_path)
    assert check(cycle, web, "warning") == ["opened"]
    assert registry.get_sample_value("monitor_check_up", {"target": "api", "kind": "http"}) == 1.0
    assert registry.get_sample_value("monitor_check_severity", {"target": "api", "kind": "http"}) == 1.0
    assert store.incidents.open_incidents("api")[0].severity == "warning"
    check(cycle, web, "down")
    assert registry.get_sample_value("monitor_check_up", {"target": "api", "kind": "http"}) == 0.0
    assert registry.get_sample_value("monitor_check_severity", {"target": "api", "kind": "http"}) == 2.0


def test_an_incident_escalates_when_it_worsens_and_keeps_its_worst_severity(web: Misbehaving, db_path: str) -> None:
    _, cycle, _, store = setup(web, db_path, window_failures=10, window_size=10)
    assert check(cycle, web, "warning") == ["opened"]
    assert check(cycle, web, "down") == ["updated"]
    assert store.incidents.open_incidents("api")[0].severity == "critical"
    assert check(cycle, web, "ok", "warning") == []  # one pass does not recover (recover_after: 2)
    assert store.incidents.open_incidents("api")[0].severity == "critical"


def test_recovery_closes_the_incident_while_the_flapping_window_still_holds(web: Misbehaving, db_path: str) -> None:
    _, cycle, _, store = setup(web, db_path, consecutive=2, recover_after=2, flap_changes=3, flap_window="10m")
    assert check(cycle, web, "down", "ok", "down", "down") == ["opened"]
    [first] = store.incidents.open_incidents("api")
    assert check(cycle, web, "ok", "ok") == ["resolved"]
    assert store.incidents.open_incidents("api") == []


def test_a_flap_that_restarts_opens_a_new_incident_linked_to_the_last(web: Misbehaving, db_path: str) -> None:
    _, cycle, _, store = setup(
        web, db_path, consecutive=2, recover_after=2, flap_changes=3, flap_window="10m", window_failures=10, window_size=10
    )
    check(cycle, web, "down", "down", "ok", "ok")
    [first] = store.incidents.recent_incidents(status="resolved")
    assert check(cycle, web, "down", "down") == ["opened"]
    [second] = store.incidents.open_incidents("api")
    assert second.id != first.id
    assert f"flap restarted: follows #{first.id}" in (second.notes or "")
    assert known(store.incidents.incident(first.id)).status == "resolved"


def test_resolving_a_closed_incident_adds_the_note_and_keeps_closed_at(web: Misbehaving, db_path: str) -> None:
    _, cycle, _, store = setup(web, db_path, recover_after=1)
    check(cycle, web, "down", "ok")
    [incident] = store.incidents.recent_incidents(status="resolved")
    done = CliRunner().invoke(main, ["incidents", "resolve", str(incident.id), "--note", "raised the pool", "--db", db_path])
    assert done.exit_code == 0, done.output
    after = store.incidents.incident(incident.id)
    assert after is not None and after.closed_at == incident.closed_at
    assert after.resolution == "raised the pool" and "was already resolved" in done.output


def test_the_shipped_down_rule_fires_on_down_only_and_warnings_have_their_own(web: Misbehaving, db_path: str) -> None:
    import yaml

    rules_file = Path(__file__).parent.parent / "deploy" / "prometheus" / "rules.yml"
    rules = {r["alert"]: r for g in yaml.safe_load(rules_file.read_text())["groups"] for r in g["rules"]}
    down, degraded = rules["MonitorTargetDown"], rules["MonitorTargetDegraded"]
    assert down["expr"] == "monitor_check_up == 0" and "fails its health check" not in down["annotations"]["summary"]
    assert degraded["expr"] == "monitor_check_severity == 1"
    _, cycle, registry, _ = setup(web, db_path)
    check(cycle, web, "warning")
    assert registry.get_sample_value("monitor_check_up", {"target": "api", "kind": "http"}) != 0  # MonitorTargetDown stays quiet
    assert registry.get_sample_value("monitor_check_severity", {"target": "api", "kind": "http"}) == 1
