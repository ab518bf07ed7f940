"""What recall may tell people: a past fix *asserted*, or past incidents *suggested* as possibly related.

A past fix that the memory asserts ("same failure as #12, fixed by ...") is acted on without checking it, so
it is asserted only when the evidence decides; otherwise past incidents are *suggested*, each with why it is
related, and nothing is claimed:

    Claim              what an investigation says: the asserted incident (or None), the suggested ones, why
                       (the value, :mod:`monitor.core.claims`: how it is stored and read back)
    claim(picked, fitting, shown=...)
                       the claim for a pick (the model's related incident, or None) among the candidates
                       whose fix could apply (:func:`monitor.memory.recall.applicable`), best first

The evidence decides for the pick (:func:`decided`) when all of these hold:
- it is the only past incident about this place (:func:`grounded`) whose fix could apply, or its family
  (:mod:`monitor.memory.families`: past incidents that are one failure) is, or that family outweighs the others
  (:func:`outweighed`): with two unrelated ones, recall's ranking between them is a guess (their cosines lie within 0.01-0.05 of each other,
  and on scenarios nobody tuned on the best-ranked one was the wrong one more often than the right one); a
  family speaks through its newest fix that held;
- it (or a member of its family) agrees with the evidence on something specific (:func:`agrees`): a component
  both name, a message it quoted that the target says now, the same kind of failure (an errno, an rcode, a
  certificate condition), or at least :data:`ASSERT_WORDS` of the evidence's weighted words; a label in common
  is not enough; and the evidence states no other failure it does not tell of (an aside), and it is about this
  place (:func:`grounded`);
- it has a fix noted.
People's word for this failing signal (``confirmed``) decides over likeness and ranking.
Everything else is suggested: the pick and the applicable candidates first, then (when nothing is asserted) the
most similar of the others shown that have a fix, up to :data:`SUGGEST`. The line (:data:`ASSERT_WORDS`, and
the rule's form) was set on scored scenarios and judged on others: README, "How memory works";
``bench/calibration.py`` replays it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

from monitor.core.claims import SUGGEST, Suggestion, suggestions
from monitor.core.claims import Claim as Claim  # re-exported: the memory makes claims, monitor.core.claims holds them
from monitor.memory import families
from monitor.memory.attribution import SENTENCE
from monitor.memory.candidates import Candidate, flat
from monitor.memory.families import Family, Word

# The least weighted share of the evidence's words (recall.overlap) that counts as agreeing on something
# specific. First set at 0.15 on the 38 original and 278 `blind` scenarios (the lowest share at which wrong assertions
# there stayed within 1%); then, over all 534 scored scenarios (builtin model, e5 embedder), a pick that agreed by words
# alone was right 3 times in 7 between 0.15 and 0.17 and in all 17 from 0.17 up: below that it is a guess.
ASSERT_WORDS = 0.17
# Set only to measure where the line should be (bench/calibration.py): every best applicable pick asserted.
ASSERT_ALL = bool(os.environ.get("MONITOR_ASSERT_ALL"))


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


def described(c: Candidate, *, applicable: bool = True) -> Suggestion:
    said = why(c) if applicable or not c.differs else f"{why(c)}; though {flat(c.differs)}"
    return Suggestion(c.id, c.target, said, c.fix, c.score)


def margin_of(fitting: Sequence[Candidate]) -> float | None:
    return round(fitting[0].score - fitting[1].score, 4) if len(fitting) > 1 else None


def agrees(c: Candidate, *, by_words: bool = False) -> bool:
    """Whether a candidate and the evidence agree on something specific (module docstring); ``by_words``: recall
    ran without vectors, so the candidate's similarity is its share of the evidence's words."""
    share = c.similarity if by_words else c.words
    return specific(c) or share >= ASSERT_WORDS


def grounded(c: Candidate) -> bool:
    """Whether a candidate is about this failure's place: this target, a component the evidence names, or a message
    of the answer it quoted. Another target's incident that holds this whole answer word for word (the same error
    page, any service built alike answers it) is no ground, nor is one about another instance of the component the
    evidence names (:func:`monitor.memory.failures.sibling`: the same error of another MinIO, whose fix was made
    there)."""
    if c.same_target:
        return True
    return not c.sibling and (bool(c.shared) or "component" in c.sources or (c.echo > 0 and not c.verbatim))


def outweighed(other: Candidate, family: Sequence[Candidate]) -> bool:
    """Whether a family of two or more outweighs another applicable candidate: the family's best-ranked member
    agrees with the failing signal on something specific and the other agrees on nothing specific and ranks
    below it; or every member agrees on something specific and the other ranks below them all. More members make
    a claim stronger, never weaker; a look-alike ranked among them still stands."""
    if len(family) < 2:
        return False
    best = max(family, key=lambda c: c.score)
    if specific(best) and not specific(other) and other.score < best.score:
        return True
    return all(specific(c) for c in family) and all(other.score < c.score for c in family)


def decided(picked: Candidate, fitting: Sequence[Candidate], *, by_words: bool = False, kin: Family | None = None) -> list[str]:
    """Why the evidence does not decide for ``picked`` (empty: it does); ``kin``: the pick's family among the
    applicable candidates (:mod:`monitor.memory.families`), which speaks as one."""
    members = kin.ids if kin is not None else frozenset({picked.id})
    group = [c for c in fitting if c.id in members] or [picked]
    told = any(c.confirmed for c in group)  # a person said so, for this failing signal: it decides over likeness
    reasons = []
    if not told and (not fitting or fitting[0].id not in members):
        reasons.append("not the applicable incident most like the evidence")
    if not has_fix(picked):
        reasons.append("no fix noted" if kin is None or len(members) < 2 else "no fix that held is noted")
    if ASSERT_ALL:
        return reasons
    others = [c for c in fitting if c.id not in members and grounded(c) and not outweighed(c, group)]
    if others and not told:
        reasons.append(f"the fix of {', '.join(f'#{c.id}' for c in others)} could apply too")
    if told:
        return reasons
    if not any(agrees(c, by_words=by_words) for c in group):
        reasons.append("it shares no component, quoted message, kind of failure or enough words with the evidence")
    if not any(grounded(c) for c in group):
        reasons.append("it is another target's, and names no component the evidence names")
    if all(c.unexplained for c in group):
        reasons.append(f"the evidence also states {group[0].unexplained}, which it does not")
    return reasons


def measures(c: Candidate) -> dict[str, Any]:
    """What recall measured of a candidate: the figures the line between asserting and suggesting reads."""
    return {
        "id": c.id,
        "score": round(c.score, 4),
        "similarity": c.similarity,
        "words": c.words,
        "distinct": c.distinct,
        "specific": specific(c),
        "same_target": c.same_target,
    }


def speaker(
    picked: Candidate | None, fitting: Sequence[Candidate], judged: Candidate | None, found: Sequence[Family]
) -> tuple[Candidate | None, Family | None]:
    """Who speaks for the claim, and its family: a judge's vouched pick, else people's word for this failing
    signal, else the pick; a family of two or more speaks through its newest fix that held."""
    confirmed = next((c for c in fitting if c.confirmed), None)
    chosen = judged or confirmed or picked
    kin = next((f for f in found if chosen is not None and chosen.id in f.ids), None)
    if chosen is not None and kin is not None and len(kin.members) > 1 and judged is None:
        chosen = kin.fixed or chosen
    return chosen, kin


def suggest(
    picked: Candidate | None, fitting: Sequence[Candidate], others: Sequence[Candidate], asserted: int | None, told: frozenset[int]
) -> tuple[Suggestion, ...]:
    """Up to :data:`SUGGEST` incidents shown beside (or instead of) an assertion, without those the family tells of."""
    applicable = {c.id for c in fitting}
    suggested: list[Suggestion] = []
    for c in [*([picked] if picked is not None else []), *fitting, *others]:
        if c.id == asserted or c.id in told or c.id in {s.id for s in suggested} or len(suggested) + (asserted is not None) >= SUGGEST:
            continue
        suggested.append(described(c, applicable=c.id in applicable))
    return tuple(suggested)


def claim(
    picked: Candidate | None,
    fitting: Sequence[Candidate],
    *,
    shown: Sequence[Candidate] = (),
    by_words: bool = False,
    vouched: int | None = None,
    words: Sequence[Word] = (),
    now: float | None = None,
) -> Claim:
    """The claim for ``picked`` among ``fitting`` (the applicable candidates, best first; ``shown``: every
    candidate the model was shown, applicable or not). ``vouched``: an applicable candidate with a fix that a
    judge allowed to assert (:mod:`monitor.memory.judge`) named as the same failure, its words checked: it is
    asserted even where recall alone would only suggest. ``words``: what people said of past incidents (links),
    ``now``: when this failure began; both weigh in the families (:func:`monitor.memory.families.families`)."""
    judged = next((c for c in fitting if c.id == vouched and has_fix(c)), None)
    picked, kin = speaker(picked, fitting, judged, families.families(fitting, words, now=now, shown=shown))
    reasons = decided(picked, fitting, by_words=by_words, kin=kin) if picked is not None else ["none picked"]
    asserted = picked.id if picked is not None and (judged is not None or not reasons) else None
    applicable = {c.id for c in fitting}
    others = [] if asserted is not None else sorted((c for c in shown if c.id not in applicable and has_fix(c)), key=lambda c: -c.score)
    told = kin.ids if asserted is not None and kin is not None else frozenset()  # the family's story tells of them
    return Claim(
        asserted,
        suggest(picked, fitting, others, asserted, told),
        margin_of(fitting),
        picked is not None and specific(picked),
        () if judged is not None else tuple(reasons),
        described(picked) if picked is not None else None,
        tuple(measures(c) for c in fitting[:5]) + tuple({**measures(c), "applicable": False} for c in others[:5]),
        kin.story() if kin is not None else "",
        tuple(sorted(kin.ids)) if kin is not None and len(kin.members) > 1 else (),
        kin.why if kin is not None else (),
    )


def answer_said(answer: str | None, stored: Claim | None, *, own: int | None = None) -> str | None:
    """A model's final answer as it may be kept: its sentences that name a past incident other than the one
    asserted (``stored``: the claim its diagnosis recorded) dropped, and what is suggested said as such."""
    if answer is None:
        return None
    keep = {stored.asserted if stored else None, own} - {None}
    kept = [s for s in SENTENCE.split(answer.strip()) if s and all(int(n) in keep for n in re.findall(r"#(\d+)", s))]
    ids = [s.id for s in stored.suggested] if stored else []
    said = " ".join(kept) or answer.split(":", 1)[0]
    return said + (f" Possibly related, not asserted: {', '.join(f'#{i}' for i in ids)}." if ids else "")


def suggested_ids(stored: str | None) -> list[int]:
    """The ids a stored ``claim`` column suggests, in order."""
    return [s.id for s in suggestions(stored)]
