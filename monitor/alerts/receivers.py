"""Receivers: where notifications go, each kind in its own module behind one interface.

    webhook.py       a generic JSON webhook (``alerts.webhooks``)
    apprise.py       Apprise channels: Slack, Teams, Telegram, e-mail, ntfy, ... (``alerts.notify``)
    alertmanager.py  Prometheus Alertmanager's v2 API, one or the members of a cluster (``alerts.alertmanager``)

A receiver has a ``name``, the string the outbox stores (it keeps no secret: a redacted URL or a digest),
the event ``kinds`` it is told of, whether it wants firing alerts re-sent (``refreshes``), and builds and
sends a message. :func:`monitor.alerts.registry.receivers` makes every configured receiver, by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from monitor.core import urls


@dataclass(frozen=True)
class Context:
    """What a message says besides the incident: its key outside this database, this install, the past fix,
    and the facts of each incident it is about (:mod:`monitor.alerts.facts`; several when an outage spans
    targets)."""

    key: str
    instance: str
    past_fix: str | None = None
    members: tuple[dict[str, Any], ...] = ()


class Receiver(Protocol):
    name: str
    kinds: frozenset[str]
    refreshes: bool

    def message(self, kind: str, incident: dict[str, Any], context: Context,
                patterns: list[str], diagnosis: dict[str, Any] | None) -> dict[str, Any]: ...

    def send(self, payload: dict[str, Any], client: httpx.Client, idempotency_key: str) -> str | None:
        """Deliver ``payload``; the error, if it could not."""
        ...


def post(client: httpx.Client, url: str, body: Any, headers: dict[str, str] | None = None) -> str | None:
    """POST JSON; the error (with no secret of the URL in it), if it failed."""
    try:
        response = client.post(url, json=body, headers=headers or {})
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {urls.redact_text(str(exc))}"
    return None if response.is_success else f"HTTP {response.status_code}"
