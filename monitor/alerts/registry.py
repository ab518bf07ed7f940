"""Every configured receiver by its outbox name: the one place receiver names are made, and read back.

A stored name that :func:`receivers` no longer makes belongs to a receiver that is no longer configured.
Adding a receiver kind is a module with a class like :class:`~monitor.alerts.webhook.Webhook` (see
:class:`~monitor.alerts.receivers.Receiver`), a config field, and a line here.
"""

from __future__ import annotations

from monitor.alerts.alertmanager import members
from monitor.alerts.apprise import Apprise
from monitor.alerts.receivers import Receiver
from monitor.alerts.webhook import Webhook
from monitor.config import AlertsConfig


def receivers(config: AlertsConfig) -> dict[str, Receiver]:
    """Every configured receiver, by its name in the outbox."""
    found: dict[str, Receiver] = {}
    every: list[Receiver] = [*map(Webhook, config.webhooks), *map(Apprise, config.notify), *members(config.alertmanager)]
    for receiver in every:
        found.setdefault(receiver.name, receiver)  # two URLs alike but for their secrets: the first
    return found
