"""Incidents as values: what a detector found (:class:`Pattern`), a change to one incident (:class:`Event`), which
its one writer publishes and alerts, the metrics and the log hear of, and a change to many at once (:class:`Bulk`:
an import, forgetting). An incident itself travels as its store row (``dict``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# opened, updated (pattern or severity), resolved, diagnosed: what receivers hear of; the rest is bookkeeping
EventKind = Literal["opened", "updated", "resolved", "diagnosed", "silenced", "acknowledged", "annotated"]
BulkKind = Literal["imported", "forgotten"]
Severity = Literal["warning", "critical"]  # an incident's; a result's may be "ok" too


@dataclass(frozen=True)
class Pattern:
    """A failure pattern a detector found in one target's recent results."""

    name: str
    target: str
    summary: str
    severity: Severity = "critical"


@dataclass
class Event:
    """A change to an incident, published by its one writer (:class:`monitor.incidents.writer.Writer`)."""

    kind: EventKind
    incident: dict[str, Any]  # the incident's row after the change
    patterns: list[Pattern] = field(default_factory=list)
    queued: bool = False  # its notifications were queued with the change itself, in one transaction
    diagnosis: dict[str, Any] | None = None  # diagnosed: the agent's, as Diagnosis.to_dict() gives it


@dataclass(frozen=True)
class Bulk:
    """A change to many incidents at once, named: an export imported, or incidents forgotten. It pages nobody:
    imported incidents are history, and forgotten ones were resolved long ago."""

    kind: BulkKind
    count: int  # incidents added or deleted
    ids: tuple[int, ...] = ()  # forgotten: which
