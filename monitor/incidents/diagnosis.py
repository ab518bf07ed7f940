"""A diagnosis: the root cause an investigation recorded, and the past incident (and its fix) it names."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from monitor.core.causes import NOT_ACTIONABLE
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
    claim: str | None = None  # what it says of past incidents (monitor.memory.claims.Claim.to_json)

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

    def to_dict(self) -> dict[str, Any]:
        """The fields, whether it is actionable, the incidents it suggests (``suggested``: id, target, why, fix)
        and ``text``: all of it in words, past fix included."""
        return {
            "root_cause": self.root_cause,
            "related_incident": self.related_incident,
            "confidence": self.confidence,
            "summary": self.summary,
            "past_fix": self.past_fix,
            "suggested": self.suggested,
            "family": (claim_of(self.claim).get("family") or None) if self.related_incident else None,
            "actionable": self.actionable,
            "text": str(self),
        }

    @property
    def suggested(self) -> list[dict[str, Any]]:
        return suggestions(self.claim)

    def __str__(self) -> str:
        text = f"{self.root_cause} ({self.confidence or '?'} confidence): {self.summary or ''}".strip()
        if self.related_incident:
            text += f"\n{asserted_line(self.related_incident, self.past_fix)}"
        if self.related_incident and (family := claim_of(self.claim).get("family")):
            text += f"\nRecurring: {family}"
        text += "".join(f"\n{suggestion_line(s)}" for s in self.suggested)
        return text


def asserted_line(incident: int, fix: str | None) -> str:
    """What an asserted past incident says, in every channel."""
    if not fix:  # pruned since, or an old row asserted without a fix: not the fix of anything now
        return f"Like past incident #{incident} (no fix of it is on record)"
    return f"Same failure as past incident #{incident}, fixed by: {fix}"


def suggestion_line(s: dict[str, Any]) -> str:
    """What a suggested past incident says, in every channel: not asserted, why related, its fix."""
    return (
        f"Possibly related (not asserted): #{s.get('id')} on {s.get('target')} ({s.get('why')}), fixed by: {s.get('fix') or 'none noted'}"
    )


def claim_of(value: Any) -> dict[str, Any]:
    """A stored ``claim`` (monitor.memory.claims.Claim.to_json) as a dict; {} for none or a bad value."""
    try:
        found = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def suggestions(claim: Any) -> list[dict[str, Any]]:
    """The past incidents a stored claim suggests as possibly related (id, target, why, fix, score), in order."""
    items = claim_of(claim).get("suggested")
    return [s for s in items if isinstance(s, dict)] if isinstance(items, list) else []
