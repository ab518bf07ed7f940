"""Incidents as values: what a detector found (:class:`Pattern`), an incident (:class:`Incident`) and a
change to one (:class:`Event`), which the Tracker publishes and alerts, the agent and the eval read."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

# opened, updated (pattern or severity), resolved, diagnosed: what receivers hear of; the rest is bookkeeping
EventKind = Literal["opened", "updated", "resolved", "diagnosed", "silenced", "acknowledged", "annotated"]


@dataclass(frozen=True)
class Pattern:
    """A failure pattern a detector found in one target's recent results."""

    name: str
    target: str
    summary: str
    severity: str = "critical"


@dataclass(frozen=True)
class Incident:
    """One incident as the store keeps it (a row of ``incidents``), typed."""

    id: int
    target: str
    pattern: str
    status: str = "open"
    severity: str = "critical"
    opened_at: float = 0.0
    updated_at: float | None = None
    closed_at: float | None = None
    summary: str | None = None
    suspected_cause: str | None = None
    notes: str | None = None
    agent_state: str | None = None
    silenced: int | None = None
    root_cause: str | None = None
    related_incident: int | None = None
    confidence: str | None = None
    diagnosis: str | None = None
    resolution: str | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Incident:
        """The incident a store row describes; columns this value does not name are left out."""
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in row.items() if key in names})

    @property
    def is_open(self) -> bool:
        return self.status == "open"


@dataclass
class Event:
    """A change to an incident, published by its one writer (:class:`monitor.incidents.writer.Writer`)."""

    kind: EventKind
    incident: dict[str, Any]  # the incident's row after the change; ``record`` is the same, typed
    patterns: list[Pattern] = field(default_factory=list)
    queued: bool = False  # its notifications were queued with the change itself, in one transaction
    diagnosis: dict[str, Any] | None = None  # diagnosed: the agent's, as Diagnosis.to_dict() gives it

    @property
    def record(self) -> Incident:
        return Incident.from_row(self.incident)
