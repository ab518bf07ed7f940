"""Past incidents as a test writes them: the fields it names, the rest as the store would give them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monitor.core.incidents import Incident
from monitor.store.rows import incident

DEFAULTS: dict[str, Any] = {"id": 1, "target": "api", "pattern": "consecutive", "status": "resolved", "opened_at": 0.0}


def as_incident(row: Mapping[str, Any]) -> Incident:
    """An incident of ``row``'s fields; those it leaves out as an incident resolved, opened at 0."""
    return incident({**DEFAULTS, **row})


def known(incident: Incident | None) -> Incident:
    """The incident a test reads back; the test fails when the store has none."""
    assert incident is not None, "the store has no such incident"
    return incident
