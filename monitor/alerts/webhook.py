"""A generic JSON webhook: the event, the incident as stored, the patterns and the diagnosis, POSTed.

The incident's JSON columns (``evidence``, ``claim``) go as the objects they hold, not as strings to decode again.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from monitor.alerts import facts
from monitor.alerts.receivers import Context, post
from monitor.config import Webhook as Hook
from monitor.core import urls

JSON_COLUMNS = ("evidence", "claim")  # an incident's columns that hold JSON


def webhook_payload(kind: str, incident: dict[str, Any], patterns: list[str], diagnosis: dict[str, Any] | None = None) -> dict[str, Any]:
    payload = {"event": kind, "incident": with_objects(incident), "patterns": patterns, "source": "monitor"}
    return payload if diagnosis is None else {**payload, "diagnosis": diagnosis}


def with_objects(incident: dict[str, Any]) -> dict[str, Any]:
    """The incident with each JSON column as the object it holds (one that is not JSON stays as stored)."""
    return {**incident, **{name: decoded(incident[name]) for name in JSON_COLUMNS if isinstance(incident.get(name), str)}}


def decoded(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


class Webhook:
    """``webhook:<url, redacted>``; its headers (secrets, often) stay in the config, never in the outbox."""

    kinds = frozenset({"opened", "resolved", "diagnosed", "reminder", "escalated"})
    refreshes = False

    def __init__(self, hook: Hook) -> None:
        self.hook = hook
        self.name = f"webhook:{urls.redact(hook.url)}"

    def message(
        self, kind: str, incident: dict[str, Any], context: Context, patterns: list[str], diagnosis: dict[str, Any] | None
    ) -> dict[str, Any]:
        members = list(context.members)
        if diagnosis is None and len(members) == 1:
            diagnosis = members[0]["diagnosis"]  # a first message that waited for it
        payload = {
            **webhook_payload(kind, incident, patterns, diagnosis),
            "key": context.key,
            "instance": context.instance,
            "title": facts.title(kind, members) if members else None,
            "text": facts.text(members),
            "incidents": members,
        }
        return payload if context.links is None else {**payload, "links": context.links}

    def send(self, payload: dict[str, Any], client: httpx.Client, idempotency_key: str) -> str | None:
        # the same key for every retry of this message, and unique across installs: a receiver can de-duplicate
        return post(client, self.hook.url, payload, {**self.hook.headers, "Idempotency-Key": idempotency_key})
