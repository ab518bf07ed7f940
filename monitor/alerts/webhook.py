"""A generic JSON webhook: the event, the incident as stored, the patterns and the diagnosis, POSTed.

The incident's JSON columns (``evidence``, ``claim``) go as the objects they hold, not as strings to decode again.
A webhook with a ``body`` sends that template instead, rendered in a sandbox (:mod:`monitor.config.templates`) with
the values of :func:`template_values`, with its ``method``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from monitor.alerts import facts
from monitor.alerts.receivers import Context, post
from monitor.config import Webhook as Hook
from monitor.config import templates
from monitor.core import urls
from monitor.core.incidents import Incident

JSON_COLUMNS = ("evidence", "claim")  # an incident's columns that hold JSON


def webhook_payload(kind: str, incident: Incident, patterns: list[str], diagnosis: dict[str, Any] | None = None) -> dict[str, Any]:
    payload = {"event": kind, "incident": with_objects(incident), "patterns": patterns, "source": "monitor"}
    return payload if diagnosis is None else {**payload, "diagnosis": diagnosis}


def with_objects(incident: Incident) -> dict[str, Any]:
    """The incident with each JSON column as the object it holds (one that is not JSON stays as stored)."""
    row = incident.to_json()
    return {**row, **{name: decoded(row[name]) for name in JSON_COLUMNS if isinstance(row[name], str)}}


def decoded(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


class Webhook:
    """``webhook:<url, redacted>``; its headers (secrets, often) stay in the config, never in the outbox."""

    kinds = frozenset({"opened", "resolved", "diagnosed", "reminder", "escalated"})
    refreshes = False

    def __init__(self, hook: Hook) -> None:
        self.hook = hook
        self.name = f"webhook:{urls.redact(hook.url)}"

    def message(
        self, kind: str, incident: Incident, context: Context, patterns: list[str], diagnosis: dict[str, Any] | None
    ) -> dict[str, Any]:
        if self.hook.body is not None:
            values = template_values(kind, incident, context)
            json_body = templates.is_json(self.hook.body, self.hook.headers)
            return {"event": kind, "title": values["title"], "rendered": templates.render(self.hook.body, values, json_body=json_body)}
        members = list(context.members)
        if diagnosis is None and len(members) == 1:
            diagnosis = members[0]["diagnosis"]  # a first message that waited for it
        payload = {
            **webhook_payload(kind, incident, patterns, diagnosis),
            "key": context.key,
            "instance": context.instance,
            "title": facts.title(kind, members) if members else None,
            "text": facts.text(members),
            "incidents": members,
        }
        return payload if context.links is None else {**payload, "links": context.links}

    def send(self, payload: dict[str, Any], client: httpx.Client, idempotency_key: str) -> str | None:
        # the same key for every retry of this message, and unique across installs: a receiver can de-duplicate
        headers = {**self.hook.headers, "Idempotency-Key": idempotency_key}
        if "rendered" in payload:
            return post(client, self.hook.url, None, headers, method=self.hook.method, content=str(payload["rendered"]))
        return post(client, self.hook.url, payload, headers)


def template_values(kind: str, incident: Incident, context: Context) -> dict[str, Any]:
    """What a webhook's body template may say (docs/alerting.md lists them), from the message's first incident:
    Gatus' placeholders and Uptime Kuma's ``msg``, ``monitorJSON`` and ``heartbeatJSON`` among them."""
    members = list(context.members)
    fact = members[0] if members else {"target": incident.target, "status": incident.status}
    resolved = kind == "resolved"
    errors = ", ".join(str(part) for part in (fact.get("error"), fact.get("detail")) if part)
    summary = str(fact.get("summary") or incident.summary or "")
    target, url = str(fact.get("target") or ""), fact.get("url") or ""
    state = "resolved" if resolved else "firing"
    values: dict[str, Any] = {
        "event": kind,
        "resolved": resolved,
        "state": state,
        "triggered_or_resolved": "RESOLVED" if resolved else "TRIGGERED",
        "target": target,
        "group": fact.get("group") or "",
        "url": url,
        "summary": summary,
        "description": summary,
        "errors": errors,
        "status_code": fact.get("status_code"),
        "severity": fact.get("severity") or incident.severity or "critical",
        "incident_id": incident.id,
        "key": context.key,
        "instance": context.instance,
        "title": facts.title(kind, members) if members else f"{target}: {kind}",
        "text": facts.text(members),
        "failing_for": facts.span(float(fact.get("failing_for") or 0.0)),
        "link": (context.links or {}).get("incident"),
    }
    up = "Up" if resolved else "Down"
    values["msg"] = f"[{target}] [{'✅' if resolved else '🔴'} {up}] {errors or summary}"
    values["monitorJSON"] = {"name": target, "url": url, "pathName": target}
    values["heartbeatJSON"] = {"status": 1 if resolved else 0, "msg": errors or summary, "time": fact.get("failing_since")}
    return values
