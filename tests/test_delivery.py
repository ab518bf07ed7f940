"""Delivery from the outbox to webhooks: idempotency, expiry, removed receivers, metrics."""

from __future__ import annotations

import threading
import time
from typing import Any

from outbox import plain_alerts, queue
from past import known
from prometheus_client import CollectorRegistry
from servers import Misbehaving, Receiver, wait_for

from monitor.alerts import delivery
from monitor.config import Config
from monitor.incidents.tracker import Event
from monitor.metrics import Metrics
from monitor.store import Store
from monitor.store.writes import IncidentWrites


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_a_retried_webhook_carries_the_same_idempotency_key_and_another_message_another(db_path: str) -> None:
    with Receiver(status=503) as hook:
        clock = Clock()
        store = Store(db_path, clock=clock)
        alerts = plain_alerts(Config.model_validate({"alerts": {"webhooks": [{"url": hook.url}]}}).alerts, store, clock=clock)
        incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
        queue(alerts, Event("opened", known(store.incidents.incident(incident))))
        assert alerts.deliver_due() == 0
        hook.status = 200
        clock.now += 60
        assert alerts.deliver_due() == 1
        IncidentWrites(store).close_incident(incident)
        queue(alerts, Event("resolved", known(store.incidents.incident(incident))))
        assert alerts.deliver_due() == 1
        keys = [head.get("Idempotency-Key") for head in hook.heads]
        assert keys[0] and keys[0] == keys[1] != keys[2] and keys[2]
        assert keys[0].startswith(store.incidents.install_id)


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_undelivered_notifications_expire_by_age_and_by_attempts_and_are_counted(db_path: str) -> None:
    clock = Clock()
    store = Store(db_path, clock=clock)
    metrics = Metrics(CollectorRegistry())
    config = Config.model_validate(
        {"alerts": {"webhooks": [{"url": "http://127.0.0.1:9/hook"}], "max_age": "1h", "max_attempts": 3, "retry_max": "1s"}}
    )
    alerts = plain_alerts(config.alerts, store, clock=clock, metrics=metrics)
    first = IncidentWrites(store).open_incident("api", "consecutive", "down")
    queue(alerts, Event("opened", known(store.incidents.incident(first))))
    for _ in range(3):  # the receiver is down: three attempts, then it gives up
        alerts.deliver_due()
        clock.now += 2
    assert store.outbox.pending_notifications() == 0
    webhook = "webhook:http://127.0.0.1:9/hook"
    assert (
        sample(metrics, "monitor_notifications_total", receiver=webhook, result="failed"),
        sample(metrics, "monitor_notifications_total", receiver=webhook, result="dropped"),
    ) == (3, 1)

    second = IncidentWrites(store).open_incident("web", "consecutive", "down")
    queue(alerts, Event("opened", known(store.incidents.incident(second))))
    assert sample(metrics, "monitor_notifications_pending") == 1
    clock.now += 3601  # never tried (say the daemon was stopped): too old to be worth sending now
    assert alerts.deliver_due() == 0
    assert store.outbox.pending_notifications() == 0 and sample(metrics, "monitor_notifications_pending") == 0
    assert sample(metrics, "monitor_notifications_total", receiver=webhook, result="dropped") == 2


def test_a_removed_receiver_gets_nothing_more(db_path: str) -> None:
    with Receiver() as kept, Receiver() as removed:
        store = Store(db_path)
        metrics = Metrics(CollectorRegistry())
        both = Config.model_validate({"alerts": {"webhooks": [{"url": kept.url}, {"url": removed.url}]}})
        alerts = plain_alerts(both.alerts, store, metrics=metrics)
        incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
        queue(alerts, Event("opened", known(store.incidents.incident(incident))))
        alerts.config = Config.model_validate({"alerts": {"webhooks": [{"url": kept.url}]}}).alerts  # a reload
        assert alerts.deliver_due() == 1
        assert len(kept.received) == 1 and removed.heads == []
        assert store.outbox.pending_notifications() == 0
        assert sample(metrics, "monitor_notifications_total", receiver=f"webhook:{kept.url}", result="delivered") == 1
        assert sample(metrics, "monitor_notifications_total", receiver=f"webhook:{removed.url}", result="dropped") == 1


def test_a_hanging_webhook_delays_no_other_receiver(db_path: str, web: Misbehaving) -> None:
    with Receiver() as fast:
        store = Store(db_path)
        config = Config.model_validate({"alerts": {"webhooks": [{"url": web.url("/hang")}, {"url": fast.url}]}})
        alerts = plain_alerts(config.alerts, store, poll=0.05).start()
        try:
            incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
            started = time.monotonic()
            queue(alerts, Event("opened", known(store.incidents.incident(incident))))
            wait_for(lambda: fast.received, timeout=3)
            assert time.monotonic() - started < 2  # the hanging one waits up to 5 s
        finally:
            alerts.stop()


def test_refreshes_while_alertmanager_is_down_build_no_backlog(db_path: str) -> None:
    clock = Clock()
    store = Store(db_path, clock=clock)
    alerts = plain_alerts(Config.model_validate({"alerts": {"alertmanager": "http://127.0.0.1:9"}}).alerts, store, clock=clock)
    incidents = [IncidentWrites(store).open_incident(name, "consecutive", "down") for name in ("api", "web")]
    for incident in incidents:
        queue(alerts, Event("opened", known(store.incidents.incident(incident))))
    for _ in range(10):  # ten minutes of housekeeping with Alertmanager down
        alerts.refresh(store.incidents.open_incidents())
        alerts.deliver_due()
        clock.now += 60
    assert store.outbox.pending_notifications() == 2  # one per incident: its newest state


def test_the_delivery_client_is_made_once_when_every_receivers_sender_asks_at_once(db_path: str, monkeypatch: Any) -> None:
    """Each receiver's sender thread asks for the client first at the same moment; a second client made would replace
    the first, whose open connections went to the garbage collector unclosed (a ResourceWarning in test_manual_resolve)."""
    made: list[object] = []
    ready = threading.Barrier(8)

    def slow_client() -> object:
        made.append(object())
        time.sleep(0.05)  # long enough for every asker to find no client yet
        return made[-1]

    monkeypatch.setattr(delivery, "delivery_client", slow_client)
    store = Store(db_path)
    alerts = plain_alerts(Config.model_validate({}).alerts, store)
    got: list[object] = []

    def ask() -> None:
        ready.wait()
        got.append(alerts.client)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.close()
    assert len(made) == 1 and got == made * 8
