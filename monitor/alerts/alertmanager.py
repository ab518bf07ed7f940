"""Prometheus Alertmanager's v2 API: each incident one alert, firing while open, with ``endsAt`` once resolved.

The labels stay fixed while the incident lives (``alertname``, ``target``, ``incident``: the store's key,
unique across databases, ``instance``: ``alerts.instance`` or the host name, ``source``), so Alertmanager's
dedup, grouping and silences apply; what changes goes in the annotations (``summary``, ``pattern``,
``severity``, ``diagnosis``, ``suspected_cause``, ``root_cause``, ``confidence``, ``related_incident``,
``past_fix``, and with ``web.external_url`` ``incident_url`` and ``confirm_url``: the incident's page, and where
on it a person confirms or rejects the past incident asserted or suggested). Open incidents are re-sent
(``refreshes``) so Alertmanager does not time them out. With several Alertmanagers (an HA cluster), each member
gets every alert, as Prometheus sends them, each as a receiver of its own (``alertmanager:<url>``); the cluster
deduplicates.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

from monitor.alerts import facts
from monitor.alerts.receivers import Context, post
from monitor.core import urls
from monitor.core.incidents import Incident

ALERTMANAGER = "alertmanager"


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def alertmanager_alert(
    incident: Incident, past_fix: str | None = None, *, key: str | None = None, instance: str | None = None
) -> dict[str, Any]:
    import socket

    related = incident.related_incident
    alert: dict[str, Any] = {
        "labels": {
            "alertname": "MonitorIncident",
            "target": incident.target,
            "incident": key or str(incident.id),
            "instance": instance or socket.gethostname(),
            "source": "monitor",
        },
        "annotations": {
            "summary": incident.summary or "",
            "pattern": incident.pattern,
            "severity": incident.severity or "critical",
            "diagnosis": incident.diagnosis or "",
            "suspected_cause": incident.suspected_cause or "",
            "root_cause": incident.root_cause or "",
            "confidence": incident.confidence or "",
            "related_incident": f"#{related}" if related else "",
            "past_fix": past_fix or "",
        },
        "startsAt": iso(incident.opened_at),
    }
    if incident.closed_at:
        alert["endsAt"] = iso(incident.closed_at)
    return alert


class Alertmanager:
    """``alertmanager`` alone, ``alertmanager:<url, redacted>`` for each member of a cluster."""

    kinds = frozenset({"opened", "updated", "resolved", "diagnosed"})
    refreshes = True

    def __init__(self, url: str, name: str = ALERTMANAGER) -> None:
        self.url, self.name = url, name

    def message(
        self, kind: str, incident: Incident, context: Context, patterns: list[str], diagnosis: dict[str, Any] | None
    ) -> dict[str, Any]:
        alert = alertmanager_alert(incident, context.past_fix, key=context.key, instance=context.instance)
        for fact in context.members[:1]:  # what failed, as annotations: url, status, error, excerpt, for how long
            alert["annotations"].update(
                {
                    "url": fact.get("url") or "",
                    "status_code": str(fact.get("status_code") or ""),
                    "error": fact.get("error") or "",
                    "excerpt": fact.get("excerpt") or "",
                    "failing_since": iso(fact["failing_since"]),
                    "description": facts.text([fact]),
                }
            )
        if context.links is not None:
            confirm = context.links["confirm"]
            alert["annotations"].update({"incident_url": context.links["incident"], "confirm_url": confirm[0]["url"] if confirm else ""})
        return {"alerts": [alert]}

    def send(self, payload: dict[str, Any], client: httpx.Client, idempotency_key: str) -> str | None:
        return post(client, self.url.rstrip("/") + "/api/v2/alerts", payload["alerts"])


def members(configured: Sequence[Any]) -> list[Alertmanager]:
    """One receiver per configured Alertmanager."""
    if len(configured) == 1:
        return [Alertmanager(str(configured[0]))]
    return [Alertmanager(str(url), f"{ALERTMANAGER}:{urls.redact(str(url))}") for url in configured]
