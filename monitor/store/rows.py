"""Rows made values: the one place a stored row becomes the typed object the rest of the monitor is handed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

from monitor.core.incidents import Incident, Occurrence
from monitor.core.runs import Run, Step

INCIDENT_COLUMNS = tuple(f.name for f in fields(Incident))
OCCURRENCE_COLUMNS = tuple(f.name for f in fields(Occurrence))
RUN_COLUMNS = tuple(f.name for f in fields(Run))
STEP_COLUMNS = tuple(f.name for f in fields(Step))


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


def run(row: Mapping[str, Any]) -> Run:
    """An agent run from its row."""
    return Run(**{name: row[name] for name in RUN_COLUMNS if name in row})


def maybe_run(row: Mapping[str, Any] | None) -> Run | None:
    return None if row is None else run(row)


def runs(rows: Iterable[Mapping[str, Any]]) -> list[Run]:
    return [run(row) for row in rows]


def steps(rows: Iterable[Mapping[str, Any]]) -> list[Step]:
    """Steps of agent runs from their rows."""
    return [Step(**{name: row[name] for name in STEP_COLUMNS if name in row}) for row in rows]
