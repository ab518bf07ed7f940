"""A notification in the outbox as a value: a :class:`Queued` each, read from its store row in one place
(:mod:`monitor.store.rows`); the alerts deliver it and the web UI shows what became of it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from monitor.core.rows import Row


@dataclass(frozen=True)
class Queued(Row):
    """One notification as stored. Fields are the ``outbox`` columns, in their order: to whom, the message (as
    sent: JSON, redacted), how many attempts so far and when the next, and what became of it."""

    id: int
    receiver: str
    payload: str  # the message as JSON (what :attr:`message` reads)
    attempts: int
    next_attempt_at: float
    created_at: float
    delivered_at: float | None = None
    last_error: str | None = None
    key: str | None = None  # what a newer state of the same thing replaces it under ("incident:<id>", "outage:<id>")
    dropped_at: float | None = None
    replica: int = 0  # the daemon replica that delivers it

    @cached_property
    def message(self) -> dict[str, Any]:
        """The payload read back."""
        found = json.loads(self.payload)
        return found if isinstance(found, dict) else {}
