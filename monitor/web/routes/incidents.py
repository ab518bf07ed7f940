"""``/incidents`` (the list), ``/incidents/{id}`` (timeline of one incident with its recalled past incidents),
and ``POST /incidents/{id}/actions``.

Actions are off unless ``web.token`` is set; then an incident page offers acknowledge, resolve with a
note, silence and a public note (shown on status pages), and beside each past incident it asserts or suggests,
"Same failure" and "Not this" (a person's word: :mod:`monitor.memory.links`), to whoever types the token, with a
CSRF token and a same-origin request. What the token holder asks is audited in the store, done or refused; a request without
the token is refused and only counted in the log (a flood of them stores nothing and shows nothing).
"""

from __future__ import annotations

import hmac
import logging
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from monitor.core.incidents import Verdict
from monitor.incidents.writer import Writer
from monitor.listener.refusals import Refusals
from monitor.web import origin, params
from monitor.web.params import BadRequest
from monitor.web.site import Page, Site

log = logging.getLogger("monitor.web")

ACTIONS = ("acknowledge", "resolve", "silence", "public_note", "same", "not")
VERDICTS: dict[str, Verdict] = {"same": "same", "not": "not"}  # the actions that link to a past incident (``other``)
MAX_ID = 2**63 - 1
CSRF_COOKIE = "monitor_csrf"
MAX_FORM = 16_384  # bytes of an action's form
MAX_NOTE = 1000  # characters of a note, as the form's field allows


def routes(site: Site) -> list[BaseRoute]:
    view = Incidents(site)
    return [
        Route("/incidents", view.index),
        Route("/incidents/{id:int}", view.incident),
        Route("/incidents/{id:int}/actions", view.action, methods=["POST"]),
    ]


class Incidents:
    def __init__(self, site: Site) -> None:
        self.site = site
        self.refusals = Refusals("the web UI", log=log, what="refused actions")

    def index(self, request: Request) -> Response:
        status, name = request.query_params.get("status") or None, request.query_params.get("target") or None
        limit = params.limit(request)
        rows = self.site.reader.incidents.incidents_page(
            target=name, status=status, limit=limit, before=params.int_param(request, "before")
        )
        more = params.next_page(request, rows, limit, params.by_id)
        return self.site.render("incidents.html", title="Incidents", incidents=rows, more=more, filter_status=status, target=name)

    def incident(self, request: Request) -> Response:
        data = self.site.pages.incident(request.path_params["id"])
        if data is None:
            return self.site.not_found(f"Incident #{request.path_params['id']}")
        title = f"Incident #{data['incident'].id}"
        token = self.site.pages.config.web.token
        if not token:
            return self.site.render("incident.html", title=title, csrf=None, **data)
        csrf = request.cookies.get(CSRF_COOKIE, "")
        if not origin.made_here(csrf, token):
            csrf = origin.csrf_token(token)
        response = self.site.render("incident.html", title=title, csrf=csrf, **data)
        response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="strict", path="/")
        return response

    async def action(self, request: Request) -> Response:
        """Acknowledge, resolve with a note, silence, or post a public note: with the configured token and the
        page's CSRF token. A request without them is refused and only counted in the log; one with them is
        audited, done or refused."""
        site, token, actions = self.site, self.site.pages.config.web.token, self.site.actions
        if not token or actions is None:
            return site.render("error.html", 405, title="Read-only", message="Actions are off: set web.token to turn them on.")
        incident_id = request.path_params["id"]
        if site.reader.incidents.incident(incident_id) is None:
            return site.not_found(f"Incident #{incident_id}")
        fields = await form(request)
        action, note = fields.get("action", ""), fields.get("note", "").strip()
        stranger = _stranger(request, fields, token)
        if stranger is not None:
            self.refusals.note(stranger.partition(" (")[0])  # one count per kind, whatever the origin
            return site.render("error.html", 403, title="Refused", message=stranger)
        if len(note) > MAX_NOTE:
            return site.render(
                "error.html", 413, title="Note too long", message=f"a note of {len(note):,} characters: at most {MAX_NOTE:,}"
            )
        client = request.client.host if request.client else None
        refusal = _refusal(action, note) or _link_refusal(site, action, incident_id, fields.get("other", ""))
        if refusal is not None:
            actions.audit.audit_web_action(incident_id, action or "?", ok=False, detail=refusal, note=note, client=client)
            return site.render("error.html", 403, title="Refused", message=refusal)
        detail = _act(actions.writer(), incident_id, action, note, fields.get("other", ""))
        actions.audit.audit_web_action(incident_id, action, ok=True, detail=detail, note=note, client=client)
        return RedirectResponse(f"/incidents/{incident_id}", status_code=303)


async def form(request: Request) -> dict[str, str]:
    """An urlencoded form of at most MAX_FORM bytes, one value per field."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            raise BadRequest(f"a form of more than {MAX_FORM} bytes")
    try:
        fields = parse_qs(body.decode(), max_num_fields=10, strict_parsing=False)
    except (UnicodeDecodeError, ValueError) as exc:
        raise BadRequest(f"not a form: {exc}") from None
    return {name: values[0] for name, values in fields.items()}


def _stranger(request: Request, fields: dict[str, str], token: str) -> str | None:
    """Why a request is not from someone holding the token on this site's page, or None."""
    elsewhere = origin.foreign(request)
    if elsewhere is not None:
        return elsewhere
    cookie, field = request.cookies.get(CSRF_COOKIE, ""), fields.get("csrf", "")
    if not origin.made_here(cookie, token) or not hmac.compare_digest(cookie.encode(), field.encode()):
        return "the form's CSRF token does not match this browser's: reload the incident page and try again"
    if not hmac.compare_digest(fields.get("token", "").encode(), token.encode()):
        return "wrong token (web.token)"
    return None


def _refusal(action: str, note: str) -> str | None:
    """Why the token holder's request is refused, or None."""
    if action not in ACTIONS:
        return f"unknown action {action[:32]!r}: one of {', '.join(ACTIONS)}"
    if action == "resolve" and not note:
        return "resolving needs a note of what fixed it: later investigations recall it"
    if action == "public_note" and not note:
        return "a public note needs its text: status pages show it under the incident"
    return None


def _link_refusal(site: Site, action: str, incident_id: int, other: str) -> str | None:
    """Why a "same" or "not" cannot link the incident to past incident ``other``, or None."""
    if action not in VERDICTS:
        return None
    if not (other.isascii() and other.isdigit()) or not 0 < int(other) <= MAX_ID:
        return f"{action}: name the past incident by its number, not {other[:32]!r}"
    if int(other) == incident_id:
        return f"incident #{incident_id} cannot be linked to itself: name a past incident"
    if site.reader.incidents.incident(int(other)) is None:
        return f"no incident #{int(other)}"
    return None


def _act(incidents: Writer, incident_id: int, action: str, note: str, other: str = "") -> str:
    """Do an action on an incident, as ``monitor incidents resolve`` and ``confirm`` do; returns what was done."""
    said = f": {note}" if note else ""
    if action in VERDICTS:
        from monitor.memory.links import link

        return link(incidents, incident_id, int(other), VERDICTS[action], actor="web", note=note or None).said(incident_id)
    if action == "resolve":
        if incidents.resolve(incident_id, resolution=note):
            return "resolved"
        return "was already resolved; its resolution note is replaced"
    if action == "public_note":
        incidents.post_public_note(incident_id, note)
        return "public note posted: status pages show it"
    if action == "silence":
        incidents.silence(incident_id, f"silenced in the web UI{said}")
        return "silenced: no more alerts for it"
    incidents.acknowledge(incident_id, f"acknowledged in the web UI{said}")
    return "acknowledged"


PAGE = Page("incidents", routes, link=("/incidents", "Incidents"))  # its monitor.pages entry point (pyproject.toml)
