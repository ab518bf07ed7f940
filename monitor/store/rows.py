"""Rows made values: the one place a stored row becomes the typed object the rest of the monitor is handed."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

from monitor.core.incidents import Incident, Occurrence
from monitor.core.runs import Run, Step

INCIDENT_COLUMNS = tuple(f.name for f in fields(Incident))
OCCURRENCE_COLUMNS = tuple(f.name for f in fields(Occurrence))
RUN_COLUMNS = tuple(f.name for f in fields(Run))
STEP_COLUMNS = tuple(f.name for f in fields(Step))
T = TypeVar("T")


def _of(kind: type[T], columns: tuple[str, ...], row: Mapping[str, Any]) -> T:
    """``kind`` from a row of its ``columns`` (a query's extra columns, such as a search's rank, are left behind)."""
    return kind(**{name: row[name] for name in columns if name in row})


def incident(row: Mapping[str, Any]) -> Incident:
    """An incident from its row."""
    return _of(Incident, INCIDENT_COLUMNS, row)


def maybe_incident(row: Mapping[str, Any] | None) -> Incident | None:
    return None if row is None else incident(row)


def incidents(rows: Iterable[Mapping[str, Any]]) -> list[Incident]:
    return [incident(row) for row in rows]


def occurrences(rows: Iterable[Mapping[str, Any]]) -> list[Occurrence]:
    """Incidents as the history reads them, from rows of their :data:`OCCURRENCE_COLUMNS`."""
    return [_of(Occurrence, OCCURRENCE_COLUMNS, row) for row in rows]


def run(row: Mapping[str, Any]) -> Run:
    """An agent run from its row."""
    return _of(Run, RUN_COLUMNS, row)


def maybe_run(row: Mapping[str, Any] | None) -> Run | None:
    return None if row is None else run(row)


def runs(rows: Iterable[Mapping[str, Any]]) -> list[Run]:
    return [run(row) for row in rows]


def steps(rows: Iterable[Mapping[str, Any]]) -> list[Step]:
    """Steps of agent runs from their rows."""
    return [_of(Step, STEP_COLUMNS, row) for row in rows]
