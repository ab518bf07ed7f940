"""The links an alert carries: the incident's page in the web UI, and where on it a person confirms or rejects each
past incident the memory asserted or suggested ("Same failure" / "Not this", :mod:`monitor.memory.links`).

Only with ``web.external_url`` (the UI's address as people reach it): without it, alerts carry no link. A link only
opens the page, at that past incident; the word itself is said there, with the web token (a link followed by a
chat client's preview must change nothing)::

    {"incident": "https://monitor.example.org/incidents/7",
     "confirm": [{"id": 3, "asserted": true, "url": "https://monitor.example.org/incidents/7#past-3"}]}
"""

from __future__ import annotations

from typing import Any

from monitor.core.claims import suggestions
from monitor.core.incidents import Incident


def page_links(external_url: str | None, incident: Incident) -> dict[str, Any] | None:
    """The incident's page and each past incident's place on it; None without ``external_url``."""
    if not external_url:
        return None
    page = f"{external_url.rstrip('/')}/incidents/{incident.id}"
    asserted = incident.related_incident
    said = [asserted] if asserted else []
    said += [s.id for s in suggestions(incident.claim) if s.id not in said]
    return {"incident": page, "confirm": [{"id": past, "asserted": past == asserted, "url": f"{page}#past-{past}"} for past in said]}


def confirm_line(links: dict[str, Any] | None) -> str | None:
    """The links in words, for a message people read: None when there is no page or nothing to confirm."""
    if not links:
        return None
    if not links["confirm"]:
        return f"incident page: {links['incident']}"
    named = ", ".join(f"#{past['id']}" for past in links["confirm"])
    return f"the same failure as {named}? say so, or not: {links['confirm'][0]['url']}"
