"""Delivery from the outbox to webhooks: idempotency, expiry, removed receivers, metrics."""

from __future__ import annotations

import time

from servers import Receiver

from monitor.alerts import Alerts
from monitor.config import Config
from monitor.incidents import Event
from monitor.store import Store


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def test_a_retried_webhook_carries_the_same_idempotency_key_and_another_message_another(db_path: str) -> None:
    with Receiver(status=503) as hook:
        clock = Clock()
        store = Store(db_path, clock=clock)
        alerts = Alerts(Config.model_validate({"alerts": {"webhooks": [{"url": hook.url}]}}).alerts, store, clock=clock)
        incident = store.open_incident("api", "consecutive", "down")
        alerts.notify(Event("opened", store.incident(incident) or {}))
        assert alerts.deliver_due() == 0
        hook.status = 200
        clock.now += 60
        assert alerts.deliver_due() == 1
        store.close_incident(incident)
        alerts.notify(Event("resolved", store.incident(incident) or {}))
        assert alerts.deliver_due() == 1
        keys = [head.get("Idempotency-Key") for head in hook.heads]
        assert keys[0] and keys[0] == keys[1] != keys[2] and keys[2]
        assert keys[0].startswith(store.install_id)
