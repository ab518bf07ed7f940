"""A toy receiver kind, as a new one is added: one module with its settings, its receiver, and one call that
registers both.

``alerts.toylog: {path: /var/log/monitor-alerts.jsonl}`` appends each message to the file as a JSON line; a file
it cannot write is a failed delivery (its error text), which the outbox retries as any. Rules call it ``toylog``.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import httpx
from pydantic import Field

from monitor.alerts import registry
from monitor.alerts.receivers import Context
from monitor.config import Strict
from monitor.core.incidents import Incident

Event = Literal["opened", "resolved", "diagnosed", "reminder", "escalated"]


class ToyLogSettings(Strict):
    """An ``alerts.toylog:`` section: the file messages are appended to, and the events written."""

    path: str = Field(pattern=r"^/", description="An absolute path.")
    events: list[Event] = Field(default=["opened", "resolved"], min_length=1)


class ToyLog:
    """``toylog:<path>``: one JSON line per message."""

    refreshes = False

    def __init__(self, settings: ToyLogSettings) -> None:
        self.path = settings.path
        self.kinds: frozenset[str] = frozenset(settings.events)
        self.name = f"toylog:{settings.path}"

    def message(
        self, kind: str, incident: Incident, context: Context, patterns: list[str], diagnosis: dict[str, Any] | None
    ) -> dict[str, Any]:
        return {"event": kind, "key": context.key, "target": incident.target, "status": incident.status, "summary": incident.summary}

    def send(self, payload: dict[str, Any], client: httpx.Client, idempotency_key: str) -> str | None:
        try:
            with open(self.path, "a") as log:
                log.write(json.dumps({**payload, "idempotency_key": idempotency_key}) + "\n")
        except OSError as exc:
            return f"cannot write {self.path}: {exc.strerror}"
        return None


registry.register("toylog", ToyLogSettings, ToyLog)
