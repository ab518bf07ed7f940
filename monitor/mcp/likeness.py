"""Which past incidents are like one incident: the memory's recall (:mod:`monitor.memory.recall`), and the claim
it allows (:mod:`monitor.memory.claims`), said in the words of every channel.

The evidence is what the incident kept when it opened (its status, error, detail and the target's answer), read
under its diagnosed root cause, or else under the cause its checks read as then. The candidates are gathered as an
investigation gathers them; the builtin pick among those whose fix could apply (:func:`monitor.memory.recall.choose`)
is asserted only where the evidence decides (:func:`monitor.memory.claims.claim`), and everything else is suggested.
"""

from __future__ import annotations

from typing import Any

from monitor.config import Config
from monitor.core.causes import read_cause
from monitor.core.claims import Claim
from monitor.core.incidents import Incident
from monitor.incidents.diagnosis import asserted_line, suggestion_line
from monitor.incidents.evidence import read as opening_evidence
from monitor.memory import claims, links, recall
from monitor.memory.candidates import Recalled
from monitor.store import Store

LEADING = 10  # checks up to an incident's opening that its cause is read from


def evidence(store: Store, incident: Incident) -> recall.Evidence:
    """What the incident showed when it opened, under its root cause (diagnosed, or read from its checks then)."""
    opened = opening_evidence(incident)
    reading = incident.root_cause
    if not reading:
        rows = store.results.results_page(incident.target, limit=LEADING, before=(incident.opened_at + 1e-6, 2**63 - 1))
        reading = read_cause(rows, incident.pattern or "")
    status = opened.get("status_code")
    return recall.evidence_of(
        incident.target,
        status if isinstance(status, int) else None,
        opened.get("error"),
        str(opened.get("detail") or ""),
        opened.get("excerpt"),
        reading=reading,
    )


def like(store: Store, config: Config, incident: Incident, *, k: int = 5) -> dict[str, Any]:
    """The past incidents like ``incident``: the one asserted (its fix applies) or none, the ones suggested, why
    nothing is asserted, and ``text``: each said as every channel says it."""
    found_in = evidence(store, incident)
    embedder = recall.shared_embedder(config.memory.embedder, config.model.api_base)
    found = recall.gather(store, found_in, embedder=embedder, k=k, exclude=int(incident.id))
    claim = claim_for(found, found_in, store, opened=float(incident.opened_at) if incident.opened_at else None)
    asserted = next((c for c in found.candidates if c.id == claim.asserted), None)
    lines = [asserted_line(asserted.id, asserted.fix)] if asserted is not None else []
    lines += [suggestion_line(s) for s in claim.suggested]
    return {
        "incident": int(incident.id),
        "target": incident.target,
        "root_cause": found_in.reading,
        "asserted": {"id": asserted.id, "target": asserted.target, "fix": asserted.fix} if asserted is not None else None,
        "suggested": [s.to_dict() for s in claim.suggested],
        "not_asserted_because": list(claim.reasons) if asserted is None else [],
        "confidence": claim.confidence,
        "compared": "by meaning and by words" if found.method == "hybrid" else f"by words only: {found.note}",
        "text": "\n".join(lines) or "No past incident is like this one.",
    }


def claim_for(found: Recalled, evidence: recall.Evidence, store: links.LinkReader, *, opened: float | None) -> Claim:
    """The claim recall allows: the builtin pick among the candidates whose fix could apply, asserted only where
    the evidence decides; people's word on those candidates and when the incident opened weigh in its families,
    as in an investigation (:meth:`monitor.agent.tools.incidents.RecordDiagnosis.claim`)."""
    fitting = sorted((c for c in found.candidates if recall.applicable(c, evidence)), key=lambda c: -c.score)
    picked = recall.choose(found.candidates, evidence, floor=found.floor)
    said = links.heard(store, [c.id for c in fitting], "").words
    return claims.claim(picked, fitting, shown=found.candidates, by_words=found.method != "hybrid", words=said, now=opened)
