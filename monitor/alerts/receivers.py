"""Receivers: where notifications go, each kind in its own module behind one interface.

    webhook.py       a generic JSON webhook (``alerts.webhooks``)
    apprise.py       Apprise channels: Slack, Teams, Telegram, e-mail, ntfy, ... (``alerts.notify``)
    alertmanager.py  Prometheus Alertmanager's v2 API, one or the members of a cluster (``alerts.alertmanager``)

A receiver has a ``name``, the string the outbox stores (it keeps no secret: a redacted URL or a digest),
the event ``kinds`` it is told of, whether it wants firing alerts re-sent (``refreshes``), and builds and
sends a message (an HTTP one with :func:`monitor.alerts.client.post`: a deadline for the whole delivery, the
answer read no further than 64 KiB). :func:`monitor.alerts.registry.receivers` makes every configured receiver,
by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from monitor.alerts.client import post as post  # a receiver's POST: a deadline, the answer capped
from monitor.core.incidents import Incident


@dataclass(frozen=True)
class Context:
    """What a message says besides the incident: its key outside this database, this install, the past fix,
    the facts of each incident it is about (:mod:`monitor.alerts.facts`; several when an outage spans
    targets), and its links to the web UI (:func:`monitor.alerts.links.page_links`; None without
    ``web.external_url``)."""

    key: str
    instance: str
    past_fix: str | None = None
    members: tuple[dict[str, Any], ...] = ()
    links: dict[str, Any] | None = None


class Receiver(Protocol):
    name: str
    kinds: frozenset[str]
    refreshes: bool

    def message(
        self, kind: str, incident: Incident, context: Context, patterns: list[str], diagnosis: dict[str, Any] | None
    ) -> dict[str, Any]: ...

    def send(self, payload: dict[str, Any], client: httpx.Client, idempotency_key: str) -> str | None:
        """Deliver ``payload``; the error, if it could not."""
        ...
