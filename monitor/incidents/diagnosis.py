"""A diagnosis: the root cause an investigation recorded, and the past incident (and its fix) it names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from monitor.core.causes import NOT_ACTIONABLE
from monitor.core.claims import Claim, Suggestion
from monitor.core.diagnoses import Told
from monitor.core.incidents import Incident
from monitor.core.runs import Run
from monitor.store import StoreView


@dataclass
class Diagnosis:
    """What record_diagnosis stored on a run (and its incident)."""

    root_cause: str
    related_incident: int | None
    confidence: str | None
    summary: str | None
    past_fix: str | None = None
    claim: str | None = None  # what it says of past incidents, as stored (monitor.core.claims.Claim.to_json)

    @classmethod
    def of(cls, said: Run | Incident | None, store: StoreView) -> Diagnosis | None:
        """The diagnosis a run (or an incident) recorded, with the resolution of the past incident it names;
        None if none (no run, or no diagnosis)."""
        if said is None or not said.root_cause:
            return None
        past = store.incidents.incident(said.related_incident) if said.related_incident else None
        return cls(said.root_cause, said.related_incident, said.confidence, said.diagnosis, past.resolution if past else None, said.claim)

    @property
    def actionable(self) -> bool:
        return self.root_cause not in NOT_ACTIONABLE

    def told(self) -> Told:
        """As its incident's receivers are told it: the fields, whether it is actionable, the incidents it suggests
        (``suggested``: id, target, why, fix) and ``text``: all of it in words, past fix included."""
        return Told(
            self.root_cause,
            self.related_incident,
            self.confidence,
            self.summary,
            self.past_fix,
            self.suggested,
            self.family,
            self.actionable,
            str(self),
        )

    def to_dict(self) -> dict[str, Any]:
        """:meth:`told`, as a JSON object."""
        return self.told().to_json()

    @property
    def said(self) -> Claim | None:
        """What it says of past incidents (:meth:`monitor.core.claims.Claim.from_json`); None if it said nothing."""
        return Claim.from_json(self.claim)

    @property
    def suggested(self) -> tuple[Suggestion, ...]:
        said = self.said
        return said.suggested if said else ()

    @property
    def family(self) -> str | None:
        """The asserted incident's family of recurring failures, in a sentence; None when none is asserted."""
        said = self.said
        return (said.family or None) if said and self.related_incident else None

    def __str__(self) -> str:
        text = f"{self.root_cause} ({self.confidence or '?'} confidence): {self.summary or ''}".strip()
        if self.related_incident:
            text += f"\n{asserted_line(self.related_incident, self.past_fix)}"
        if family := self.family:
            text += f"\nRecurring: {family}"
        text += "".join(f"\n{suggestion_line(s)}" for s in self.suggested)
        return text


def asserted_line(incident: int, fix: str | None) -> str:
    """What an asserted past incident says, in every channel."""
    if not fix:  # pruned since, or an old row asserted without a fix: not the fix of anything now
        return f"Like past incident #{incident} (no fix of it is on record)"
    return f"Same failure as past incident #{incident}, fixed by: {fix}"


def suggestion_line(s: Suggestion) -> str:
    """What a suggested past incident says, in every channel: not asserted, why related, its fix."""
    return f"Possibly related (not asserted): #{s.id} on {s.target} ({s.why}), fixed by: {s.fix or 'none noted'}"
