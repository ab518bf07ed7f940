"""Writers and the outbox in tests: what the incident writer would queue for an event, and a writer that queues nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from monitor.alerts.delivery import Alerts
from monitor.alerts.routes import Routes
from monitor.config import AlertsConfig
from monitor.core.incidents import Event
from monitor.incidents.events import Publisher
from monitor.incidents.maintenance import Maintenance
from monitor.incidents.writer import Writer
from monitor.store import Store
from monitor.store.writes import IncidentWrites

# conftest's ``stopped`` fixture: ``alerts = stopped(Alerts(...))`` stops them (closes their HTTP client) at the test's end
Stop = Callable[[Alerts], Alerts]


def queue(alerts: Alerts, event: Event) -> int:
    """Queue ``alerts``' messages for ``event`` from the incident as stored now, and wake the sender; how many."""
    queued = alerts.store.outbox.enqueue_follow_up(event.incident.id, lambda row: alerts.messages(event, row))
    alerts.notify(replace(event, queued=True))
    return queued


def quiet_writer(store: Store, *, maintenance: Maintenance | None = None) -> Writer:
    """An incident writer whose changes queue nothing, heard by nobody: for tests of incidents, not of what receivers
    hear; ``maintenance``: its windows (default: none)."""
    return Writer(
        IncidentWrites(store),
        store.read_only(),
        memory=store.memory,
        messages=lambda event, row: [],
        publisher=Publisher(),
        maintenance=maintenance or Maintenance(),
    )


def plain_alerts(config: AlertsConfig, store: Store, **options: Any) -> Alerts:
    """The alerts of ``config``'s receivers with no rules (every receiver hears of every incident at once) and no
    maintenance windows: for tests of delivery itself. ``options``: the :class:`Alerts`' own (``clock``, ...)."""
    return Alerts(config, store, routes=Routes(), maintenance=Maintenance(), **options)
