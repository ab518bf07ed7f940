"""Rows made values: the one place a stored row becomes the typed object the rest of the monitor is handed.

Each kind is a frozen dataclass whose fields are its table's columns (:class:`~monitor.core.incidents.Incident`,
:class:`~monitor.core.runs.Run`, :class:`~monitor.core.results.StoredResult`, ...), and is made the same way::

    one(Incident, row)       an incident from its row
    maybe(Run, row)          a run, or None for no row
    many(StoredResult, rows) results from their rows, in their order
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

from monitor.core.incidents import Incident, ToEmbed

T = TypeVar("T")


def columns(kind: type[Any]) -> tuple[str, ...]:
    """The columns a row of ``kind`` is read from: its fields, in their order."""
    return tuple(f.name for f in fields(kind))


def one(kind: type[T], row: Mapping[str, Any]) -> T:
    """``kind`` from a row of its columns (a query's extra columns, such as a search's rank, are left behind)."""
    return _made(kind, columns(kind), row)


def maybe(kind: type[T], row: Mapping[str, Any] | None) -> T | None:
    return None if row is None else one(kind, row)


def many(kind: type[T], rows: Iterable[Mapping[str, Any]]) -> list[T]:
    names = columns(kind)
    return [_made(kind, names, row) for row in rows]


def _made(kind: type[T], names: tuple[str, ...], row: Mapping[str, Any]) -> T:
    return kind(**{name: row[name] for name in names if name in row})


def to_embed(rows: Iterable[Mapping[str, Any]]) -> list[ToEmbed]:
    """Incidents waiting for their vector, from rows of an incident's columns and the embed queue's two."""
    return [ToEmbed(one(Incident, row), row["embed_version"], row["embedded_hash"]) for row in rows]
