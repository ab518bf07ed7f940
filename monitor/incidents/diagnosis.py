"""A diagnosis: the root cause an investigation recorded, and the past incident (and its fix) it names."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from monitor.core.causes import NOT_ACTIONABLE
from monitor.store import Store


@dataclass
class Diagnosis:
    """What record_diagnosis stored on a run (and its incident)."""

    root_cause: str
    related_incident: int | None
    confidence: str | None
    summary: str | None
    past_fix: str | None = None

    @classmethod
    def of(cls, run: Mapping[str, Any], store: Store) -> Diagnosis | None:
        """The diagnosis a run (or an incident) recorded, with the resolution of the past incident it names;
        None if none."""
        if not run.get("root_cause"):
            return None
        related = run.get("related_incident")
        past = store.incident(related) if related else None
        return cls(run["root_cause"], related, run.get("confidence"), run.get("diagnosis"),
                   past.get("resolution") if past else None)

    @property
    def actionable(self) -> bool:
        return self.root_cause not in NOT_ACTIONABLE

    def to_dict(self) -> dict[str, Any]:
        """The fields, whether it is actionable, and ``text``: all of it in words, past fix included."""
        return {"root_cause": self.root_cause, "related_incident": self.related_incident,
                "confidence": self.confidence, "summary": self.summary, "past_fix": self.past_fix,
                "actionable": self.actionable, "text": str(self)}

    def __str__(self) -> str:
        text = f"{self.root_cause} ({self.confidence or '?'} confidence): {self.summary or ''}".strip()
        if self.related_incident:
            text += f"\nLike past incident #{self.related_incident}, fixed by: {self.past_fix or 'no resolution noted'}"
        return text
