"""What every message says about an incident: the facts a person needs to act, read from the store.

The target, its URL (redacted), the status code, the error kind, a short quoted excerpt of the answer,
how long it has failed, and the diagnosis and past fix once the agent found them; once resolved, what the target
answers now instead of what it answered when the incident opened. One incident's facts are a dict (the
webhook's ``incidents`` entries); :func:`text` writes them for people (Apprise, the webhook's ``text``,
Alertmanager's ``description``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from monitor.core.claims import Suggestion
from monitor.core.incidents import Incident
from monitor.incidents import evidence
from monitor.incidents.diagnosis import Diagnosis, asserted_line, suggestion_line
from monitor.store import Store


def facts(incident: Incident, store: Store, now: float) -> dict[str, Any]:
    """One incident's facts, as stored now."""
    found = evidence.read(incident)
    since = found.get("failing_since") or incident.opened_at
    until = incident.closed_at or now
    diagnosed = Diagnosis.of(incident, store) if incident.confidence else None
    answer = answer_now(incident, store) if incident.status == "resolved" else found
    return {
        "id": incident.id,
        "key": store.incidents.incident_key(incident.id),
        "target": incident.target,
        "status": incident.status,
        "severity": incident.severity or "critical",
        "summary": incident.summary or "",
        "url": found.get("url"),
        "status_code": answer.get("status_code"),
        "error": answer.get("error"),
        "excerpt": answer.get("excerpt"),
        "detail": answer.get("detail"),
        "failing_since": since,
        "failing_for": max(0.0, until - since),
        "diagnosis": diagnosed.to_dict() if diagnosed is not None else None,
        "past_fix": diagnosed.past_fix if diagnosed is not None else None,
    }


def answer_now(incident: Incident, store: Store) -> dict[str, Any]:
    """What a resolved incident's target answers now: its newest check (the recovery, or the failure still, when
    someone resolved it by hand), not the answer it gave when the incident opened."""
    latest = store.results.latest_result(incident.target)
    failing = latest if latest is not None and not latest.ok else None
    return {
        "status_code": latest.status_code if latest is not None else None,
        "error": failing.error if failing is not None else None,
        "detail": evidence.excerpt(failing.detail) if failing is not None else None,
        "excerpt": None,
    }


def span(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3 h 5 min``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds // 3600:.0f} h {seconds % 3600 / 60:.0f} min"


def lines(fact: dict[str, Any]) -> list[str]:
    """One incident, for people."""
    state = "failing for" if fact["status"] != "resolved" else "resolved after" if fact.get("error") else "recovered after"
    head = f"{fact['target']}: {state} {span(fact['failing_for'])}"
    answer = ", ".join(
        part for part in (f"HTTP {fact['status_code']}" if fact.get("status_code") else None, fact.get("error"), fact.get("detail")) if part
    )
    out = [
        head,
        *([f"  {fact['summary']}"] if fact.get("summary") else []),
        *([f"  url: {fact['url']}"] if fact.get("url") else []),
        *([f"  {'answers now' if fact['status'] == 'resolved' else 'answer'}: {answer}"] if answer else []),
        *([f'  excerpt: "{fact["excerpt"]}"'] if fact.get("excerpt") else []),
    ]
    diagnosis = fact.get("diagnosis")
    if diagnosis:
        out.append(
            f"  diagnosis: {diagnosis['root_cause']} ({diagnosis.get('confidence') or '?'} confidence): "
            f"{diagnosis.get('summary') or ''}".rstrip()
        )
        if diagnosis.get("related_incident"):
            out.append(f"  {asserted_line(diagnosis['related_incident'], fact.get('past_fix'))}")
            out += [f"  Recurring: {diagnosis['family']}"] if diagnosis.get("family") else []
        out += [f"  {suggestion_line(s)}" for s in map(Suggestion.from_dict, diagnosis.get("suggested") or []) if s is not None]
    return out


def text(members: Sequence[dict[str, Any]]) -> str:
    """Every incident of a message, for people."""
    return "\n".join(line for fact in members for line in lines(fact))


def title(kind: str, members: Sequence[dict[str, Any]]) -> str:
    """``api: opened (critical)``, or ``3 targets: opened: api, db, web``."""
    if len(members) == 1:
        fact = members[0]
        said = f"{fact['target']}: incident #{fact['id']} {kind}"
        return said if kind == "resolved" else f"{said} ({fact['severity']})"
    return f"{len(members)} targets: {kind}: {', '.join(fact['target'] for fact in members)}"
