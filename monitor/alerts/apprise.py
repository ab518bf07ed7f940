"""Apprise channels (Slack, Teams, Telegram, e-mail, ntfy, ...): a title and a body people read on a phone."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx

from monitor.alerts import facts
from monitor.alerts.links import confirm_line
from monitor.alerts.receivers import Context
from monitor.core import urls
from monitor.core.claims import suggestions
from monitor.core.incidents import Incident
from monitor.incidents.diagnosis import asserted_line, suggestion_line


def apprise_receiver(url: str) -> str:
    """An Apprise channel's name in the outbox: a digest, so its URL (and the secrets in it) is never stored."""
    return "apprise:" + hashlib.sha256(url.encode()).hexdigest()[:16]


def apprise_message(
    kind: str, incident: Incident, past_fix: str | None, members: tuple[dict[str, Any], ...] = (), links: dict[str, Any] | None = None
) -> dict[str, str]:
    """Target, pattern, severity, diagnosis and the past fix; with ``members`` (their facts), each of them:
    URL, status, error, excerpt, how long it failed; with ``links``, where to confirm or reject the past incidents."""
    severity = incident.severity or "critical"
    linked = [line] if (line := confirm_line(links)) else []
    if members:
        kinds = {"opened": "failure" if severity == "critical" else "warning", "resolved": "success"}
        return {
            "title": f"[monitor] {facts.title(kind, members)}",
            "body": urls.redact_text("\n".join([facts.text(members), *linked])),
            "type": kinds.get(kind, "info"),
        }
    title = f"[monitor] {incident.target}: incident #{incident.id} {kind}"
    if kind != "resolved":
        title += f" ({severity})"
    lines = [f"{incident.summary or ''}", f"target: {incident.target}, pattern: {incident.pattern}, severity: {severity}"]
    if incident.root_cause and incident.confidence:
        lines.append(f"diagnosis: {incident.root_cause} ({incident.confidence} confidence): {incident.diagnosis or ''}")
    if incident.related_incident:
        lines.append(asserted_line(incident.related_incident, past_fix))
    lines += [suggestion_line(s) for s in suggestions(incident.claim)] + linked
    kinds = {"opened": "failure" if severity == "critical" else "warning", "resolved": "success"}
    return {"title": title, "body": urls.redact_text("\n".join(lines)), "type": kinds.get(kind, "info")}


class Apprise:
    """``apprise:<digest of its URL>``."""

    kinds = frozenset({"opened", "resolved", "diagnosed", "reminder", "escalated"})
    refreshes = False

    def __init__(self, url: str) -> None:
        self.url = url
        self.name = apprise_receiver(url)

    def message(
        self, kind: str, incident: Incident, context: Context, patterns: list[str], diagnosis: dict[str, Any] | None
    ) -> dict[str, Any]:
        return apprise_message(kind, incident, context.past_fix, context.members, context.links)

    def send(self, payload: dict[str, Any], client: httpx.Client, idempotency_key: str) -> str | None:
        import apprise  # only for configs that use it: it loads its ~100 service plugins

        notifier = apprise.Apprise()
        if not notifier.add(self.url):
            return "Apprise does not understand this URL"
        sent = notifier.notify(title=payload["title"], body=payload["body"], notify_type=payload["type"])
        return None if sent else f"Apprise could not deliver to {urls.redact(self.url)}"
