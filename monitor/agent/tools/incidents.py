"""Tools over past incidents: search them, read one, record the diagnosis of this one."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from monitor.agent.tools.base import CONFIDENCE, DIAGNOSIS_CHARS, MonitorTool, Narrowing, ToolFailure, branch, format_incident, one_line
from monitor.core import urls
from monitor.core.causes import NOT_ACTIONABLE, ROOT_CAUSES
from monitor.core.claims import Claim
from monitor.core.diagnoses import Diagnosed
from monitor.memory import attribution, candidates, claims, findings, links, recall

log = logging.getLogger(__name__)


class SearchIncidents(MonitorTool):
    name = "search_incidents"
    description = (
        "Find past incidents like this one: compared with what the target answered in this investigation "
        "(status, error, its words, the hosts it names), by meaning and by words, on any target. "
        "Each comes with its symptom and its fix; read them to judge which one, if any, applies."
    )
    inputs = {
        "query": {"type": "string", "description": "Further words to look for, e.g. 'pgbouncer pool'."},
        "k": {"type": "integer", "description": "How many incidents at most (1 to 10).", "nullable": True},
    }

    def narrowed(self) -> Narrowing:
        return {"query": {"maxLength": 80}, "k": None}  # the grammar leaves k to its default

    def forward(self, query: str, k: int | None = 5) -> str:
        return self.guarded(lambda: self._search(query, k or 5))

    def _search(self, query: str, k: int) -> str:
        """Candidates from every source, ranked by this investigation's evidence (never by this tool's words)."""
        box = self.box
        found = box.search(max(1, min(int(k), 10)), query)
        if found.note:
            log.info("search_incidents: %s", found.note)
        if not found.candidates:
            return f"no past incident is like this one{f' ({found.note})' if found.note else ''}"
        box.shown.update({c.id: c for c in found.candidates})
        text = candidates.listing(found, budget=box.config.memory.max_observation)
        box.saw(text)
        return text


class GetIncident(MonitorTool):
    name = "get_incident"
    description = "Return one incident in full: target, pattern, summary, diagnosis, resolution and notes."
    inputs = {"id": {"type": "integer", "description": "The incident id, e.g. 12."}}

    def forward(self, id: int) -> str:  # noqa: A002 - the model sees this name
        return self.guarded(lambda: self._get(id))

    def _get(self, incident_id: int) -> str:
        incident = self.box.store.incidents.incident(int(incident_id))
        if incident is None:
            raise ToolFailure(f"no incident #{incident_id}")
        text = format_incident(incident, full=True)
        self.box.saw(text)
        return text


def incident_ref(value: str | int | None) -> int | None:
    """'#12', '12' or 12 as 12; 'none', null or 0 as None."""
    text = str(value if value is not None else "").strip().lstrip("#")
    if text.lower() in ("", "0", "no", "none", "null"):
        return None
    if not text.isdigit():
        raise ToolFailure(f"related_incident {one_line(str(value), 40)!r} is not an incident like '#12' or 'none'")
    return int(text)


def allowed_causes(reading: str | None) -> list[str]:
    """The root causes the evidence allows, the literal reading first: one that is not actionable (recovered)
    stands until this investigation shows a failure (a failing re-check changes the reading itself), and an
    actionable reading cannot be waved away as recovered."""
    if reading is None:
        return list(ROOT_CAUSES)
    quiet = reading in NOT_ACTIONABLE
    allowed = [c for c in ROOT_CAUSES if (c in NOT_ACTIONABLE) == quiet]
    return sorted(allowed, key=lambda c: c != reading)


class RecordDiagnosis(MonitorTool):
    name = "record_diagnosis"
    description = (
        "Record your diagnosis of the problem under investigation, so operators and later "
        "investigations can read it. Call it once, before final_answer."
    )
    inputs = {
        "root_cause": {
            "type": "string",
            "enum": list(ROOT_CAUSES),
            "description": "The cause that fits the evidence, one of: " + ", ".join(ROOT_CAUSES),
        },
        "related_incident": {
            "type": "string",
            "nullable": True,
            "description": "The past incident you were shown, on any target, whose symptom is this "
            "one's and whose fix applies now, like '#12'; or 'no' if none does.",
        },
        "confidence": {"type": "string", "enum": list(CONFIDENCE), "description": "low, medium or high."},
        "summary": {"type": "string", "description": "What is wrong now and what to do, in one or two sentences, in your own words."},
    }

    def fitting(self, cause: str) -> list[candidates.Candidate]:
        """The past incidents shown in this investigation whose fix could apply under ``cause``, best first."""
        box = self.box
        evidence = replace(box.current_evidence(), reading=cause)
        named_only = [row for row in map(box.store.incidents.incident, sorted(box.seen - set(box.shown))) if row]  # get_incident
        shown = [*box.shown.values(), *(recall.candidate(row, evidence, 0.0, 0.0, ()) for row in named_only)]
        fitting = [c for c in shown if c.id in box.seen and recall.applicable(c, evidence)]
        return sorted(fitting, key=lambda c: -c.score)

    def offered(self, cause: str) -> list[str]:
        """The past incidents shown in this investigation whose fix could apply under ``cause`` (the same root
        cause, on this target or on a component the evidence names: :func:`recall.applicable`), most similar
        to the evidence first. The branch of every cause the evidence allows has its own, so the choice does not
        hang on the label a model writes first, and a small model is not offered fixes that cannot apply."""
        return [f"#{c.id}" for c in self.fitting(cause)]

    def argument_schema(self) -> dict[str, Any]:
        """The root causes the evidence allows (:func:`allowed_causes`), the literal reading first; under an
        actionable one, the incidents shown that could apply under it (:meth:`offered`) or no; under recovered,
        none: nothing needs fixing. A model that is not constrained may still name any incident it was shown."""
        causes = allowed_causes(self.box.reading())
        branches = [(c, self.offered(c) + ["no"]) for c in causes if c not in NOT_ACTIONABLE]
        branches += [(c, ["no"]) for c in causes if c in NOT_ACTIONABLE]
        branches.sort(key=lambda b: b[0] != causes[0])  # the literal reading first
        summary = {"maxLength": 240}
        return {
            "anyOf": [
                branch(self.arguments({"root_cause": {"enum": [cause]}, "related_incident": {"enum": related}, "summary": summary}))
                for cause, related in branches
            ]
        }

    def forward(self, root_cause: str, related_incident: str | int | None, confidence: str, summary: str) -> str:
        return self.guarded(lambda: self._record(root_cause, related_incident, confidence, summary))

    def _record(self, root_cause: str, related_incident: str | int | None, confidence: str, summary: str) -> str:
        picked = self._check(root_cause, related_incident, confidence)
        box = self.box
        said = self.claim(root_cause, picked)
        diagnosis = self._attributed(root_cause, said.asserted, urls.redact_text(summary))
        box.incidents.diagnose(
            box.run_id,
            box.incident_id,
            Diagnosed(
                diagnosis=diagnosis,
                root_cause=root_cause,
                related_incident=said.asserted,
                confidence=self.confidence(root_cause, confidence, said),
                suspected_cause=ROOT_CAUSES[root_cause],
                claim=box.recorded(said).to_json(),
            ),
        )
        where = f"incident #{box.incident_id}" if box.incident_id is not None else f"agent run #{box.run_id}"
        if said.asserted is not None:
            return f"diagnosis recorded on {where}: {root_cause}, same failure as #{said.asserted}"
        return f"diagnosis recorded on {where}: {root_cause}" + (
            f"; possibly related, not asserted: {', '.join(f'#{s.id}' for s in said.suggested)}" if said.suggested else ""
        )

    @staticmethod
    def confidence(root_cause: str, said: str, claim: Claim) -> str:
        """The model's confidence, capped by the claim's: "high" only where the evidence decides for a past fix."""
        return min(said, claim.confidence, key=CONFIDENCE.index)

    def claim(self, root_cause: str, picked: int | None) -> Claim:
        """What the diagnosis may claim of past incidents (:func:`monitor.memory.claims.claim`): the pick is
        asserted only when the evidence decides for it, else the applicable ones are suggested."""
        if root_cause in NOT_ACTIONABLE:
            return Claim()
        fitting = self.fitting(root_cause)
        chosen = next((c for c in fitting if c.id == picked), None)
        if chosen is None and picked is not None:  # named, though its fix cannot apply: suggested, never asserted
            row = self.box.store.incidents.incident(picked)
            chosen = recall.candidate(row, self.box.current_evidence(), 0.0, 0.0, ()) if row else None
        box = self.box
        current = box.store.incidents.incident(box.incident_id) if box.incident_id is not None else None
        return claims.claim(
            chosen,
            fitting,
            shown=list(box.shown.values()),
            by_words=box.recall_embedder() is None,
            words=links.heard(box.store, [c.id for c in fitting], "").words,
            now=float(current.opened_at) if current else None,
            vouched=box.vouched(fitting),
        )

    def _check(self, root_cause: str, related_incident: str | int | None, confidence: str) -> int | None:
        """The related incident's id, once the arguments are known to be ones the evidence allows."""
        if root_cause not in ROOT_CAUSES:
            raise ToolFailure(f"root_cause {one_line(root_cause, 40)!r} is not one of: {', '.join(ROOT_CAUSES)}")
        if confidence not in CONFIDENCE:
            raise ToolFailure(f"confidence must be one of {', '.join(CONFIDENCE)}")
        reading = self.box.reading()
        if root_cause not in allowed_causes(reading):
            raise ToolFailure(
                f"root_cause {root_cause} contradicts the check history, which reads as {reading}, and "
                "nothing in this investigation shows otherwise; re-check the target, or use one of: " + ", ".join(allowed_causes(reading))
            )
        related = incident_ref(related_incident)
        if related is not None and related not in self.box.seen:
            shown = ", ".join(f"#{i}" for i in sorted(self.box.seen)) or "none"
            raise ToolFailure(f"incident #{related} was not among the incidents you were shown ({shown}); use one of those, or null")
        if related is not None and root_cause in NOT_ACTIONABLE:
            raise ToolFailure(f"with root_cause {root_cause} no past fix applies: use related_incident 'no'")
        return related

    def _attributed(self, root_cause: str, related: int | None, summary: str) -> str:
        """The summary without other incidents' text, and the chosen incident's fix, quoted and attributed."""
        box = self.box
        evidence = box.current_evidence()
        facts = findings.sentence(evidence, root_cause, box.focus)
        found = f"{box.focus or 'the target'}: {ROOT_CAUSES[root_cause]}. {evidence.text()}"
        rows = [r for r in map(box.store.incidents.incident, sorted(box.seen)) if r is not None]
        chosen = next((r for r in rows if r.id == related), None)
        return attribution.attributed(summary, facts=facts, found=found, chosen=chosen, others=rows, limit=DIAGNOSIS_CHARS)
