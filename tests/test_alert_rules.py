"""Alert rules and messages that help: real checks of a loopback server, real SQLite, real webhook receivers.

A target with its own receiver and thresholds pages only there; a reminder arrives after ``repeat_every``,
an escalation after ``escalate.after``, neither once acknowledged; an outage of three targets sharing a
component is one message; every message says what failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from servers import Misbehaving, Receiver

from monitor.alerts.delivery import Alerts
from monitor.alerts.routes import Routes
from monitor.checks.engine import Checker
from monitor.config import Config
from monitor.core.diagnoses import Diagnosed
from monitor.daemon import Cycle, daemon_cycle
from monitor.incidents.maintenance import Maintenance
from monitor.store import Store


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def hooks() -> Iterator[dict[str, Receiver]]:
    with ExitStack() as stack:
        yield {name: stack.enter_context(Receiver()) for name in ("ops", "payments", "pager")}


def setup(
    spec: dict[str, Any], hooks: dict[str, Receiver], db_path: str, *, investigated: bool = False
) -> tuple[Config, Store, Alerts, Cycle, Clock]:
    spec = {
        "agent": {"mode": "off"},
        **spec,
        "alerts": {"webhooks": [{"url": hook.url, "name": name} for name, hook in hooks.items()], **spec.get("alerts", {})},
    }
    config, clock = Config.model_validate(spec), Clock()
    store = Store(db_path, clock=clock)
    alerts = Alerts(config.alerts, store, clock=clock, routes=Routes(config, investigated=investigated), maintenance=Maintenance())
    return config, store, alerts, daemon_cycle(config, store, alerts=alerts, clock=clock), clock


def check(cycle: Cycle, config: Config, clock: Clock, times: int = 1) -> None:
    for _ in range(times):
        clock.now += 10
        cycle.after_checks([r.__class__(**{**r.to_dict(), "checked_at": clock.now}) for r in Checker().run(config.targets)])


def test_a_target_with_its_own_receiver_and_thresholds_pages_only_there(web: Misbehaving, hooks: dict[str, Receiver], db_path: str) -> None:
    config, store, alerts, cycle, clock = setup(
        {
            "alerts": {"default_receivers": ["ops"]},
            "targets": [
                {
                    "name": "pay",
                    "url": web.url("/500?token=s3cret"),
                    "timeout": 1,
                    "alerts": {"receivers": ["payments"]},
                    "detectors": {"consecutive": 1},
                },
                {"name": "api", "url": web.url("/500"), "timeout": 1},
            ],
        },
        hooks,
        db_path,
    )
    check(cycle, config, clock)
    alerts.deliver_due()
    assert [m["incident"]["target"] for m in hooks["payments"].received] == ["pay"]
    assert hooks["ops"].received == [] and hooks["pager"].received == []  # api needs 3 failures, pay 1
    [fact] = hooks["payments"].received[0]["incidents"]
    assert fact["url"] == web.url("/500?token=***") and fact["status_code"] == 500
    assert fact["error"] and '"error": "boom"' in fact["excerpt"] and fact["failing_for"] >= 0
    assert "HTTP 500" in hooks["payments"].received[0]["text"] and "s3cret" not in str(hooks["payments"].received)

    check(cycle, config, clock, times=2)
    alerts.deliver_due()
    assert [m["incident"]["target"] for m in hooks["ops"].received] == ["api"]
    assert [m["incident"]["target"] for m in hooks["payments"].received] == ["pay"]
    [api] = hooks["ops"].received[0]["incidents"]
    assert api["failing_for"] == 20  # three failed checks, 10 s apart


def test_reminders_arrive_every_n_and_escalation_after_m_until_acknowledged(
    web: Misbehaving, hooks: dict[str, Receiver], db_path: str
) -> None:
    config, store, alerts, cycle, clock = setup(
        {
            "targets": [
                {
                    "name": "api",
                    "url": web.url("/500"),
                    "timeout": 1,
                    "detectors": {"consecutive": 1},
                    "alerts": {"receivers": ["ops"], "repeat_every": "5m", "escalate": {"after": "12m", "receivers": ["pager"]}},
                }
            ]
        },
        hooks,
        db_path,
    )
    check(cycle, config, clock)
    alerts.deliver_due()
    assert [m["event"] for m in hooks["ops"].received] == ["opened"]

    clock.now += 299
    assert alerts.follow_up(store.incidents.open_incidents()) == 0  # not yet
    clock.now += 2
    assert alerts.follow_up(store.incidents.open_incidents()) == 1
    assert alerts.follow_up(store.incidents.open_incidents()) == 0  # queued once, not once per call
    alerts.deliver_due()
    assert [m["event"] for m in hooks["ops"].received] == ["opened", "reminder"]
    assert "api: failing for" in hooks["ops"].received[-1]["text"]

    clock.now += 7 * 60
    alerts.follow_up(store.incidents.open_incidents())
    alerts.deliver_due()
    assert [m["event"] for m in hooks["pager"].received] == ["escalated"]
    assert [m["event"] for m in hooks["ops"].received] == ["opened", "reminder", "reminder"]

    [incident] = store.incidents.open_incidents()
    cycle.incidents.acknowledge(incident.id, "on it")
    clock.now += 3600
    assert alerts.follow_up(store.incidents.open_incidents()) == 0
    cycle.incidents.resolve(incident.id, "restarted")
    alerts.deliver_due()
    assert hooks["pager"].received[-1]["event"] == "resolved"  # who was paged hears it is over
    assert hooks["ops"].received[-1]["event"] == "resolved" and hooks["payments"].received == []


def test_an_outage_of_three_targets_sharing_a_component_is_one_message(web: Misbehaving, hooks: dict[str, Receiver], db_path: str) -> None:
    config, store, alerts, cycle, clock = setup(
        {
            "alerts": {"default_receivers": ["ops"], "wait_for_diagnosis": "30s"},
            "detectors": {"consecutive": 2},
            "targets": [
                {
                    "name": name,
                    "url": web.url("/500"),
                    "timeout": 1,
                    "depends_on": ["pg-main"],
                    **({"detectors": {"consecutive": 1}} if name == "orders" else {}),
                }
                for name in ("orders", "billing", "search")
            ],
        },
        hooks,
        db_path,
        investigated=True,
    )
    check(cycle, config, clock, times=2)  # orders opens on the first failure, the others on the second
    assert len(store.incidents.open_incidents()) == 3
    assert alerts.deliver_due() == 0  # held for the diagnosis, gathering the outage
    clock.now += 30
    assert alerts.deliver_due() == 1
    [message] = hooks["ops"].received
    assert message["event"] == "opened" and sorted(m["target"] for m in message["incidents"]) == ["billing", "orders", "search"]
    assert message["title"].startswith("3 targets: opened:")

    for incident in store.incidents.open_incidents():
        cycle.incidents.resolve(incident.id)
    alerts.deliver_due()
    assert [m["event"] for m in hooks["ops"].received] == ["opened", "resolved"]  # the last recovery sends it at once
    assert len(hooks["ops"].received[-1]["incidents"]) == 3


def test_a_diagnosis_recorded_twice_is_one_update(web: Misbehaving, hooks: dict[str, Receiver], db_path: str) -> None:
    config, store, alerts, cycle, clock = setup(
        {"targets": [{"name": "api", "url": web.url("/500"), "timeout": 1, "detectors": {"consecutive": 1}}]}, hooks, db_path
    )
    check(cycle, config, clock)
    alerts.deliver_due()
    [incident] = store.incidents.open_incidents()
    for _ in range(2):
        cycle.incidents.diagnose(
            None,
            incident.id,
            Diagnosed(
                diagnosis="pool exhausted", root_cause="server_error", related_incident=None, confidence="high", suspected_cause="5xx"
            ),
        )
        alerts.deliver_due()
    assert [m["event"] for m in hooks["ops"].received] == ["opened", "diagnosed"]
    assert "diagnosis: server_error (high confidence): pool exhausted" in hooks["ops"].received[-1]["text"]


def test_unknown_receivers_in_rules_are_config_errors_with_their_line() -> None:
    from monitor.config import ConfigError, parse

    with pytest.raises(ConfigError) as caught:
        parse(
            "alerts: {webhooks: [{url: 'http://127.0.0.1:9/', name: ops}]}\n"
            "alert_rules:\n  - match: {groups: [pay]}\n    receivers: [paymnts]\n"
            "targets: [{name: api, url: 'http://127.0.0.1:9/', alerts: {escalate: {after: 1m, receivers: [pgr]}}}]\n",
            "c.yaml",
        )
    assert "c.yaml:4: alert_rules[0].receivers[0]: no receiver named 'paymnts' (configured: ops)" in str(caught.value)
    assert "c.yaml:5: targets[0].alerts.escalate.receivers[0]: no receiver named 'pgr'" in str(caught.value)


def test_an_outage_is_reminded_and_recovers_in_one_message_listing_its_targets(
    web: Misbehaving, hooks: dict[str, Receiver], db_path: str
) -> None:
    """A reminder names every incident of the outage that is still open (each member had none before: the first
    message went under the first incident's key), and recoveries within the hold of each other are one message."""
    config, store, alerts, cycle, clock = setup(
        {
            "alerts": {"group_window": "30s"},
            "alert_rules": [{"receivers": ["ops"], "repeat_every": "5m"}],
            "targets": [
                {"name": name, "url": web.url("/500"), "timeout": 1, "depends_on": ["pg-main"], "detectors": {"consecutive": 1}}
                for name in ("orders", "billing", "search")
            ],
        },
        hooks,
        db_path,
    )
    check(cycle, config, clock)
    clock.now += 30
    alerts.deliver_due()
    [opened] = hooks["ops"].received
    assert len(opened["incidents"]) == 3

    clock.now += 300
    assert alerts.follow_up(store.incidents.open_incidents()) == 1
    alerts.deliver_due()
    reminder = hooks["ops"].received[-1]
    assert reminder["event"] == "reminder"
    assert sorted(fact["target"] for fact in reminder["incidents"]) == ["billing", "orders", "search"]
    assert reminder["title"].startswith("3 targets: reminder:")

    orders, billing, search = sorted(store.incidents.open_incidents(), key=lambda i: i.id)
    cycle.incidents.resolve(orders.id)
    cycle.incidents.resolve(billing.id)
    assert alerts.deliver_due() == 0  # held: the rest of the outage may recover with them
    clock.now += 30
    alerts.deliver_due()
    recovered = hooks["ops"].received[-1]
    assert recovered["event"] == "resolved" and recovered["title"].startswith("2 targets: resolved:")
    assert sorted(fact["target"] for fact in recovered["incidents"]) == ["billing", "orders"]

    clock.now += 300
    assert alerts.follow_up(store.incidents.open_incidents()) == 1
    alerts.deliver_due()
    assert [f["target"] for f in hooks["ops"].received[-1]["incidents"]] == ["search"]
    cycle.incidents.resolve(search.id)  # the last of the outage: sent at once
    alerts.deliver_due()
    assert [(m["event"], len(m["incidents"])) for m in hooks["ops"].received] == [
        ("opened", 3),
        ("reminder", 3),
        ("resolved", 2),
        ("reminder", 1),
        ("resolved", 1),
    ]
