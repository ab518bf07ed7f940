"""Alerts: receivers (one module per kind) and the outbox they are delivered from.

receivers.py     the interface every receiver kind implements
registry.py      the configured receivers by name: the one place names are made and read back
webhook.py       a generic JSON webhook
apprise.py       Apprise channels
alertmanager.py  Prometheus Alertmanager (one, or a cluster)
delivery.py      Alerts: what to queue for each incident event, and the senders that deliver it
writers.py       where the incident writer, the tracker and the recorder are made, each with the alerts' messages
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from monitor.config import Config
    from monitor.incidents.events import Publisher
    from monitor.incidents.writer import Writer
    from monitor.store import Store


def incident_writer(config: Config, store: Store, *, publisher: Publisher | None = None) -> Writer:
    """The incident writer of a process that does not deliver (``monitor incidents``, ``monitor web``): its
    changes queue their notifications in the outbox, for the daemon to deliver."""
    from monitor.alerts import writers

    return writers.writer(config, store, publisher=publisher)
