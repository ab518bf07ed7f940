"""What recall may tell people: a past fix *asserted*, or past incidents *suggested* as possibly related.

A past fix that the memory asserts ("same failure as #12, fixed by ...") is acted on without checking it, so
it is asserted only when the evidence decides between the candidates; otherwise the candidates whose fix could
apply are *suggested*, each with why it is related, and nothing is claimed:

    Claim              what an investigation may say: the asserted incident (or None), the suggested ones
    claim(picked, fitting)
                       the claim for a pick (the model's related incident, or None) among the candidates
                       whose fix could apply (:func:`monitor.memory.recall.applicable`), best first

The evidence decides when the pick is the best applicable candidate, it has a fix, and it stands apart from
the next one by at least :data:`ASSERT_MARGIN` of score (:attr:`Candidate.score`), or it is the only one and
the evidence and it agree on something specific (a component, a quoted message, a kind of failure). The
margin is calibrated on scored scenarios (:data:`ASSERT_MARGIN` says which) and judged on others.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from monitor.memory.candidates import Candidate, flat

SUGGEST = 3  # incidents shown as possibly related, the asserted one included
# The score by which the pick must lead the next applicable candidate to be asserted. Set on the 38 original
# and 278 `blind` scenarios (builtin model, e5 embedder), judged on the 140 `unseen` and the blind batches
# written after it (README, "How memory works"): see ``bench/calibration.py``.
ASSERT_MARGIN = -1.0
LONE_NEEDS_SPECIFIC = False  # a lone applicable candidate is asserted only if it has something specific in common
if os.environ.get("MONITOR_ASSERT_ALL"):  # to measure where the line should be (bench/calibration.py) only
    ASSERT_MARGIN, LONE_NEEDS_SPECIFIC = -1.0, False
CONFIDENCE_ASSERTED, CONFIDENCE_SUGGESTED = "high", "medium"


@dataclass(frozen=True)
class Suggestion:
    """A past incident possibly related to this one, why, and what fixed it."""

    id: int
    target: str
    why: str
    fix: str | None = None
    score: float = 0.0  # how like the evidence it is (:attr:`Candidate.score`)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "target": self.target, "why": self.why, "fix": self.fix, "score": round(self.score, 4)}


@dataclass(frozen=True)
class Claim:
    """What an investigation says of past incidents: one asserted (its fix applies), or some suggested."""

    asserted: int | None = None
    suggested: tuple[Suggestion, ...] = ()
    margin: float | None = None  # how far the best applicable candidate leads the next (None: only one, or none)
    specific: bool = False  # the pick and the evidence agree on a component, a message or a kind (:func:`specific`)
    reasons: tuple[str, ...] = ()  # why the evidence does not decide for the pick (:func:`decided`)
    picked: Suggestion | None = None  # the incident the model named, asserted or not

    @property
    def confidence(self) -> str:
        """The confidence word the calibration allows: high only for an assertion."""
        return CONFIDENCE_ASSERTED if self.asserted is not None else CONFIDENCE_SUGGESTED

    def ids(self) -> list[int]:
        """The asserted id, then the suggested ones, at most :data:`SUGGEST`."""
        head = [self.asserted] if self.asserted is not None else []
        return (head + [s.id for s in self.suggested if s.id != self.asserted])[:SUGGEST]

    def to_json(self) -> str:
        """What is stored with a diagnosis (its ``claim`` column) and shown by the API."""
        return json.dumps({"asserted": self.asserted, "suggested": [s.to_dict() for s in self.suggested],
                           "margin": self.margin, "specific": self.specific, "not_asserted_because": list(self.reasons),
                           "picked": self.picked.to_dict() if self.picked else None})

    def text(self) -> str:
        """The suggestions in words: "possibly related: #4 on api (same target, same root cause; fix: ...)"."""
        if not self.suggested:
            return ""
        parts = [f"#{s.id} on {s.target} ({s.why}; fix: {flat(s.fix or 'none noted')})" for s in self.suggested]
        return "Possibly related: " + "; ".join(parts)


def has_fix(candidate: Candidate) -> bool:
    fix = (candidate.fix or "").strip().lower()
    return bool(fix) and fix not in ("none noted", "no resolution noted")


def specific(candidate: Candidate) -> bool:
    """Whether a candidate and the evidence agree on something beyond the label: a component, a message, a kind."""
    return bool(candidate.shared or candidate.echo or candidate.agrees)


def why(candidate: Candidate) -> str:
    """Why a candidate is related, in a few words, from what recall measured."""
    parts = ["same target" if candidate.same_target else f"on {candidate.target}"]
    if candidate.root_cause:
        parts.append(f"root cause {candidate.root_cause}")
    if candidate.shared:
        parts.append("names " + ", ".join(candidate.shared[:3]))
    if candidate.echo:
        parts.append("quotes what the target says now")
    if candidate.agrees:
        parts.append(f"same {flat(candidate.agrees)}")
    return ", ".join(parts)


def described(c: Candidate) -> Suggestion:
    return Suggestion(c.id, c.target, why(c), c.fix, c.score)


def margin_of(fitting: Sequence[Candidate]) -> float | None:
    return round(fitting[0].score - fitting[1].score, 4) if len(fitting) > 1 else None


def decided(picked: Candidate, fitting: Sequence[Candidate], *, margin: float = ASSERT_MARGIN) -> list[str]:
    """Why the evidence does not decide for ``picked`` (empty: it does)."""
    reasons = []
    if not fitting or picked.id != fitting[0].id:
        reasons.append("not the applicable incident most like the evidence")
    if not has_fix(picked):
        reasons.append("no fix noted")
    lead = margin_of(fitting)
    if lead is not None and lead < margin:
        reasons.append(f"leads the next by {lead:.3f}, under {margin:.3f}")
    if lead is None and LONE_NEEDS_SPECIFIC and not specific(picked):
        reasons.append("the only candidate, with nothing specific in common")
    return reasons


def claim(picked: Candidate | None, fitting: Sequence[Candidate], *, margin: float = ASSERT_MARGIN) -> Claim:
    """The claim for ``picked`` among ``fitting`` (the applicable candidates, best first)."""
    reasons = decided(picked, fitting, margin=margin) if picked is not None else ["none picked"]
    asserted = picked.id if picked is not None and not reasons else None
    order = [*([picked] if picked is not None else []), *fitting]
    seen: set[int] = set()
    suggested: list[Suggestion] = []
    for c in order:
        if c.id in seen or c.id == asserted or len(suggested) + (asserted is not None) >= SUGGEST:
            continue
        seen.add(c.id)
        suggested.append(described(c))
    return Claim(asserted, tuple(suggested), margin_of(fitting), picked is not None and specific(picked),
                 tuple(reasons), described(picked) if picked is not None else None)


def stored(value: Any) -> dict[str, Any]:
    """A stored ``claim`` column (:meth:`Claim.to_json`) as a dict; {} for none or a bad value."""
    try:
        found = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def suggested_ids(value: Any) -> list[int]:
    """The ids a stored ``claim`` suggests, in order."""
    items = stored(value).get("suggested")
    return [int(s["id"]) for s in items if isinstance(s, dict) and isinstance(s.get("id"), int)] \
        if isinstance(items, list) else []
