"""Past incidents as a test writes them: the fields it names, the rest as the store would give them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from monitor.core.incidents import Incident
from monitor.store.rows import one

T = TypeVar("T")
DEFAULTS: dict[str, Any] = {"id": 1, "target": "api", "pattern": "consecutive", "status": "resolved", "opened_at": 0.0}


def as_incident(row: Mapping[str, Any]) -> Incident:
    """An incident of ``row``'s fields; those it leaves out as an incident resolved, opened at 0."""
    return one(Incident, {**DEFAULTS, **row})


def known(found: T | None) -> T:
    """What a test reads back from the store (an incident, a run, a result); the test fails when the store has none."""
    assert found is not None, "the store has none"
    return found
