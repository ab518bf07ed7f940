"""What an investigation records of a failure: a :class:`Diagnosed`, written on its agent run and its incident."""

from __future__ import annotations

from dataclasses import dataclass


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
