"""Rows made values: the one place a stored row becomes the typed object the rest of the monitor is handed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from monitor.core.incidents import Incident, Occurrence

INCIDENT_COLUMNS = tuple(f.name for f in fields(Incident))
OCCURRENCE_COLUMNS = tuple(f.name for f in fields(Occurrence))


def incident(row: Mapping[str, Any]) -> Incident:
    """An incident from its row (a query's extra columns, such as a search's rank, are left behind)."""
    return Incident(**{name: row[name] for name in INCIDENT_COLUMNS if name in row})


def maybe_incident(row: Mapping[str, Any] | None) -> Incident | None:
    return None if row is None else incident(row)


def incidents(rows: Iterable[Mapping[str, Any]]) -> list[Incident]:
    return [incident(row) for row in rows]


def occurrences(rows: Iterable[Mapping[str, Any]]) -> list[Occurrence]:
    """Incidents as the history reads them, from rows of their :data:`OCCURRENCE_COLUMNS`."""
    return [Occurrence(**{name: row[name] for name in OCCURRENCE_COLUMNS}) for row in rows]
