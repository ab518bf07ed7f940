"""Tools over past incidents: search them, read one, record the diagnosis of this one."""

from __future__ import annotations

from typing import Any

from monitor.agent.tools.base import (
    CONFIDENCE,
    DIAGNOSIS_CHARS,
    MonitorTool,
    ToolFailure,
    format_incident,
    one_line,
)
from monitor.core import urls
from monitor.incidents.patterns import ROOT_CAUSES


class SearchIncidents(MonitorTool):
    name = "search_incidents"
    description = ("Full-text search of past incidents, with their diagnoses and resolutions; resolved ones with a "
                   "known fix come first. Use it to find how a similar problem was fixed before.")
    inputs = {
        "query": {"type": "string", "description": "Words to look for, e.g. 'api timeout 502'."},
        "k": {"type": "integer", "description": "How many incidents at most (1 to 10).", "nullable": True},
    }

    def argument_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"query": {"type": "string", "maxLength": 80}},
                "required": ["query"], "additionalProperties": False}

    def forward(self, query: str, k: int | None = 5) -> str:
        return self.guarded(lambda: self._search(query, k or 5))

    def _search(self, query: str, k: int) -> str:
        """Text matches, with the target's own past incidents (those like the failure now first) in front."""
        box, k = self.box, max(1, min(int(k), 10))
        own = box.store.similar_incidents(box.focus, box.pattern, k, exclude=box.incident_id) if box.focus else []
        found = list({i["id"]: i for i in own + box.store.search_incidents(query, k, exclude=box.incident_id)}.values())
        if not found:
            return f"no past incident matches {one_line(query, 80)!r}"
        cause = box.current_cause()
        found = box.rank(found, cause)
        text = "\n".join(format_incident(i, match=box.matches(i, cause)) for i in found[:k])
        self.box.saw(text)
        return text


class GetIncident(MonitorTool):
    name = "get_incident"
    description = "Return one incident in full: target, pattern, summary, diagnosis, resolution and notes."
    inputs = {"id": {"type": "integer", "description": "The incident id, e.g. 12."}}

    def forward(self, id: int) -> str:  # noqa: A002 - the model sees this name
        return self.guarded(lambda: self._get(id))

    def _get(self, incident_id: int) -> str:
        incident = self.box.store.incident(int(incident_id))
        if incident is None:
            raise ToolFailure(f"no incident #{incident_id}")
        text = format_incident(incident, full=True, match=self.box.matches(incident, self.box.current_cause()))
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


class RecordDiagnosis(MonitorTool):
    name = "record_diagnosis"
    description = ("Record your diagnosis of the problem under investigation, so operators and later "
                   "investigations can read it. Call it once, before final_answer.")
    inputs = {
        "root_cause": {"type": "string", "enum": list(ROOT_CAUSES),
                       "description": "The cause that fits the evidence, one of: " + ", ".join(ROOT_CAUSES)},
        "related_incident": {"type": "string", "nullable": True,
                             "description": "The past incident marked as having the same target and root cause "
                                            "as now, like '#12' (its fix applies), or 'no'."},
        "confidence": {"type": "string", "enum": list(CONFIDENCE), "description": "low, medium or high."},
        "summary": {"type": "string",
                    "description": "What is wrong and what to do, in one or two sentences (name the past fix)."},
    }

    def argument_schema(self) -> dict[str, Any]:
        """One branch per root cause; each offers only the past incidents shown with that cause on this target.

        A small model picks the root cause first, and the grammar then lets it name only an incident that
        is related by that choice (same target, same root cause), or "no".
        """
        box = self.box
        past = box.rank([i for i in map(box.store.incident, box.seen) if i and i["target"] == box.focus], None)
        reading = box.reading()
        causes = sorted(ROOT_CAUSES, key=lambda c: c != reading)  # the literal reading is offered first
        return {"anyOf": [{
            "type": "object", "additionalProperties": False,
            "required": ["root_cause", "related_incident", "confidence", "summary"],
            "properties": {
                "root_cause": {"type": "string", "enum": [cause]},
                "related_incident": {"type": "string", "enum": [f"#{i['id']}" for i in past
                                                                 if i.get("root_cause") == cause] + ["no"]},  # best first
                "confidence": {"type": "string", "enum": list(CONFIDENCE)},
                "summary": {"type": "string", "maxLength": 240}}} for cause in causes]}

    def forward(self, root_cause: str, related_incident: str | int | None, confidence: str, summary: str) -> str:
        return self.guarded(lambda: self._record(root_cause, related_incident, confidence, summary))

    def _record(self, root_cause: str, related_incident: str | int | None, confidence: str, summary: str) -> str:
        if root_cause not in ROOT_CAUSES:
            raise ToolFailure(f"root_cause {one_line(root_cause, 40)!r} is not one of: {', '.join(ROOT_CAUSES)}")
        if confidence not in CONFIDENCE:
            raise ToolFailure(f"confidence must be one of {', '.join(CONFIDENCE)}")
        related = incident_ref(related_incident)
        if related is not None and related not in self.box.seen:
            shown = ", ".join(f"#{i}" for i in sorted(self.box.seen)) or "none"
            raise ToolFailure(f"incident #{related} was not among the incidents you were shown ({shown}); "
                              "use one of those, or null")
        box = self.box
        diagnosis = one_line(urls.redact_text(summary), DIAGNOSIS_CHARS)
        box.store.record_diagnosis(box.run_id, box.incident_id, diagnosis=diagnosis, root_cause=root_cause,
                                   related_incident=related, confidence=confidence,
                                   suspected_cause=ROOT_CAUSES[root_cause])
        where = f"incident #{box.incident_id}" if box.incident_id is not None else f"agent run #{box.run_id}"
        return f"diagnosis recorded on {where}: {root_cause}" + (f", like #{related}" if related else "")


