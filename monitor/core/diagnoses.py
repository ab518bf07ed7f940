"""What an investigation records of a failure: a :class:`Diagnosed`, written on its agent run and its incident;
and what its incident's receivers are told of it, a :class:`Told`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from monitor.core.claims import Suggestion


@dataclass(frozen=True)
class Diagnosed:
    """A diagnosis as it is recorded (``record_diagnosis``): the words, the root cause from the closed set
    (:data:`monitor.core.causes.ROOT_CAUSES`), the past incident it asserts, how sure, the suspected cause an
    incident shows, and what it says of past incidents (``claim``: :meth:`monitor.core.claims.Claim.to_json`)."""

    diagnosis: str
    root_cause: str
    related_incident: int | None
    confidence: str
    suspected_cause: str
    claim: str | None = None


@dataclass(frozen=True)
class Told:
    """A diagnosis as its incident's receivers are told it (a "diagnosed" event's): what was recorded, the fix of
    the past incident it asserts (``past_fix``), the past incidents it suggests (``suggested``), the family of
    failures it recurs in, whether it is actionable, and all of it in words (``text``)."""

    root_cause: str
    related_incident: int | None
    confidence: str | None
    summary: str | None
    past_fix: str | None
    suggested: tuple[Suggestion, ...]
    family: str | None
    actionable: bool
    text: str

    def to_json(self) -> dict[str, Any]:
        """As a webhook carries it: every field by name, each suggestion as :meth:`Suggestion.to_dict` makes it."""
        return {**asdict(self), "suggested": [s.to_dict() for s in self.suggested]}
