"""What the memory says of past incidents: a :class:`Claim`, one past incident *asserted* or some *suggested*.

The memory makes a claim when a diagnosis is recorded (:func:`monitor.memory.claims.claim`, which decides what
may be asserted); it is stored as JSON with the diagnosis (the run's and the incident's ``claim`` column,
:meth:`Claim.to_json`) and read back here, in one place (:meth:`Claim.from_json`). Alerts, the web UI, the API,
MCP and the eval pass the value around; each makes JSON at its own edge (:meth:`Claim.to_dict`)::

    Suggestion   a past incident possibly related to this one: its id, target, why, its fix, how alike
    Claim        the asserted incident (or None), the suggested ones, and the figures behind the decision
    suggestions(stored)   the suggested ones of a stored claim, in order
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

SUGGEST = 3  # incidents shown as possibly related, the asserted one included
CONFIDENCE_ASSERTED, CONFIDENCE_SUGGESTED = "high", "medium"


@dataclass(frozen=True)
class Suggestion:
    """A past incident possibly related to this one, why, and what fixed it."""

    id: int
    target: str
    why: str
    fix: str | None = None
    score: float = 0.0  # how like the evidence it is (:attr:`monitor.memory.candidates.Candidate.score`)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "target": self.target, "why": self.why, "fix": self.fix, "score": round(self.score, 4)}

    @classmethod
    def from_dict(cls, data: object) -> Suggestion | None:
        """The suggestion a stored object holds; None for one without an incident id."""
        if not isinstance(data, Mapping) or not isinstance(data.get("id"), int):
            return None
        fix, score = data.get("fix"), data.get("score")
        score = float(score) if isinstance(score, int | float) else 0.0
        return cls(data["id"], str(data.get("target") or ""), str(data.get("why") or ""), fix if isinstance(fix, str) else None, score)


@dataclass(frozen=True)
class Claim:
    """What an investigation says of past incidents: one asserted (its fix applies), or some suggested."""

    asserted: int | None = None
    suggested: tuple[Suggestion, ...] = ()
    margin: float | None = None  # how far the best applicable candidate leads the next (None: only one, or none)
    specific: bool = False  # the pick and the evidence agree on a component, a message or a kind (memory.claims.specific)
    reasons: tuple[str, ...] = ()  # why the evidence does not decide for the pick (memory.claims.decided)
    picked: Suggestion | None = None  # the incident the model named, asserted or not
    weighed: tuple[dict[str, Any], ...] = ()  # what each applicable candidate measured, best first (memory.claims.measures)
    family: str = ""  # the pick's family of recurring failures in a sentence (memory.families.Family.story)
    members: tuple[int, ...] = ()  # its members, when it has two or more
    kin: tuple[str, ...] = ()  # why its members are one failure (memory.families.kin)
    judged: dict[str, Any] | None = None  # a judge's verdict on it (:meth:`monitor.memory.judge.Verdict.to_dict`)

    @property
    def confidence(self) -> str:
        """The confidence word the calibration allows: high only for an assertion."""
        return CONFIDENCE_ASSERTED if self.asserted is not None else CONFIDENCE_SUGGESTED

    def ids(self) -> list[int]:
        """The asserted id, then the suggested ones, at most :data:`SUGGEST`."""
        head = [self.asserted] if self.asserted is not None else []
        return (head + [s.id for s in self.suggested if s.id != self.asserted])[:SUGGEST]

    def to_dict(self) -> dict[str, Any]:
        """The claim as a JSON object: what is stored, and what the API, MCP and the eval show."""
        data = {
            "asserted": self.asserted,
            "suggested": [s.to_dict() for s in self.suggested],
            "margin": self.margin,
            "specific": self.specific,
            "not_asserted_because": list(self.reasons),
            "picked": self.picked.to_dict() if self.picked else None,
            "weighed": list(self.weighed),
            "family": self.family,
            "kin": list(self.kin),
            "members": list(self.members),
        }
        return data if self.judged is None else {**data, "judged": self.judged}

    def to_json(self) -> str:
        """What is stored with a diagnosis (its ``claim`` column)."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Claim:
        """The claim a JSON object holds (:meth:`to_dict`); what an older row lacks, or holds malformed, is left out."""
        asserted, margin, judged = data.get("asserted"), data.get("margin"), data.get("judged")
        return cls(
            asserted if isinstance(asserted, int) else None,
            tuple(s for s in map(Suggestion.from_dict, _listed(data, "suggested")) if s is not None),
            float(margin) if isinstance(margin, int | float) else None,
            data.get("specific") is True,
            tuple(str(r) for r in _listed(data, "not_asserted_because")),
            Suggestion.from_dict(data.get("picked")),
            tuple(dict(w) for w in _listed(data, "weighed") if isinstance(w, Mapping)),
            str(data.get("family") or ""),
            tuple(m for m in _listed(data, "members") if isinstance(m, int)),
            tuple(str(k) for k in _listed(data, "kin")),
            dict(judged) if isinstance(judged, Mapping) else None,
        )

    @classmethod
    def from_json(cls, text: str | None) -> Claim | None:
        """The claim a ``claim`` column holds; None when none is stored, or what is stored is no JSON object."""
        try:
            found = json.loads(text) if text else None
        except ValueError:
            return None
        return cls.from_dict(found) if isinstance(found, dict) else None


def suggestions(stored: str | None) -> tuple[Suggestion, ...]:
    """The past incidents a stored ``claim`` column suggests, in order; none when it holds no claim."""
    said = Claim.from_json(stored)
    return said.suggested if said else ()


def _listed(data: Mapping[str, Any], key: str) -> list[Any]:
    found = data.get(key)
    return found if isinstance(found, list) else []
