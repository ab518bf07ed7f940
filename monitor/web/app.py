"""The web UI and JSON API: a small Starlette app, served by uvicorn (:mod:`monitor.web.server`).

Pages (HTML; each group of pages is a module of :mod:`monitor.web.routes`)::

    /?page=&q=              overview: a page of targets, problems first, with state, uptime and recent
                            latency by phase; open incidents on top; refreshes itself from
                            /fragments/overview (same parameters)
    /targets/{name}         check history chart, the last results, the target's incidents
    /incidents, /incidents/{id}      list; timeline of one incident with its recalled past incidents
    /runs, /runs/{id}       agent runs; one replayed step by step
    /memory                 working and long-term memory, and memory size over time
    /badges/{name}/status.svg, uptime.svg, latency.svg
    /status/{slug}          a public status page (status_pages:); :func:`create_status_app` serves these
                            alone, for a listener that is safe to expose (web.status_listen)

and the same data as JSON under /api/v1/ (see README). It is read-only unless ``web.token`` is
set; then ``POST /incidents/{id}/actions`` acknowledges, resolves with a note or silences, with the
token, a CSRF token only the server makes and a same-origin request, and every attempt with the token
is audited in the store. With the token, the admin pages (/admin/targets, /admin/maintenance) and the admin API
(/api/v1/admin/: :mod:`monitor.web.routes.admin`) change the config file's targets and maintenance windows, each
change validated, written back and reloaded by the daemon (:mod:`monitor.web.editor`). A request naming a host
the UI is not known by is a 421 (DNS rebinding: :mod:`monitor.web.origin`). Every
response carries a strict Content-Security-Policy, so even a page that let markup through could run
no inline script.

``create_app(store, config)`` is the app. Given the daemon's :class:`~monitor.config.ConfigHolder`,
every request reads the config in force, so the pages follow a reload at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from importlib import resources

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from monitor import wiring
from monitor.config import Config, ConfigHolder
from monitor.incidents.writer import Writer
from monitor.store import Store
from monitor.store.engines import describe
from monitor.web import routes
from monitor.web.editor import Editor
from monitor.web.origin import HostCheck
from monitor.web.pages import Pages
from monitor.web.params import BadRequest
from monitor.web.routes import status
from monitor.web.site import Site, json_response

log = logging.getLogger("monitor.web.app")

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff", "referrer-policy": "same-origin", "x-frame-options": "DENY"}
UNAVAILABLE_SAID_EVERY = 60.0  # seconds between log lines while the database stays away


class SecurityHeaders:
    """Adds CSP and friends to every response (a response's own CSP stays)."""

    def __init__(self, app: ASGIApp, *, csp: str = CSP) -> None:
        self.app = app
        self.headers = {**HEADERS, "content-security-policy": csp}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (k.encode(), v.encode()) for k, v in self.headers.items() if k.encode() not in names
                ]
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(
    store: Store,
    config: Config | ConfigHolder | None = None,
    *,
    clock: Callable[[], float] = time.time,
    refresh: float | None = None,
    writer: Writer | None = None,
    editor: Editor | None = None,
) -> ASGIApp:
    """The web UI over ``store``; ``refresh`` is how often the overview reloads its data, in seconds
    (default: the config's ``web.refresh``); actions go through ``writer`` (the daemon's incident writer), changes
    to the config file through ``editor`` (None: the admin pages and API only read)."""
    pages = Pages(store.read_only(), config, clock=clock)
    actions = wiring.web_actions(lambda: pages.config, store, own=writer)
    site = Site(pages.store, pages, clock=clock, refresh=refresh, actions=actions, nav=routes.navigation(), editor=editor)
    static = Mount("/static", StaticFiles(directory=str(resources.files("monitor.web") / "static")), name="static")
    errors = Errors(site, passing=store.engine.passing)
    app = Starlette(
        routes=[*routes.routes(site), static],
        exception_handlers={BadRequest: errors.bad_request, 404: errors.missing, **dict.fromkeys(store.errors, errors.unavailable)},
    )
    return SecurityHeaders(HostCheck(app, lambda: site.pages.config.web))


def create_status_app(store: Store, config: Config | ConfigHolder | None = None, *, clock: Callable[[], float] = time.time) -> ASGIApp:
    """The status pages alone (:mod:`monitor.web.routes.status`): no admin page, no API, no action."""
    reader = store.read_only()
    site = Site(reader, Pages(reader, config, clock=clock), clock=clock)
    static = Mount("/static", StaticFiles(directory=str(resources.files("monitor.web") / "static")), name="static")
    errors = Errors(site, passing=store.engine.passing, template="status_error.html")
    app = Starlette(
        routes=[*status.routes(site, alone=True), static],
        exception_handlers={BadRequest: errors.bad_request, 404: errors.missing, **dict.fromkeys(store.errors, errors.unavailable)},
    )
    return SecurityHeaders(app, csp=status.csp(None))


class Errors:
    """What a page or an API call answers when it cannot answer: 400, 404, 503 (JSON under /api/)."""

    def __init__(self, site: Site, *, passing: Callable[[BaseException], bool], template: str = "error.html") -> None:
        self.site, self.passing, self.template = site, passing, template
        self.said = 0.0  # when the log last said the database was unavailable

    async def bad_request(self, request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return json_response({"error": str(exc)}, 400)
        return self.site.render(self.template, 400, title="Bad request", message=str(exc))

    async def missing(self, request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return json_response({"error": "no such API path; see /api/v1/targets"}, 404)
        return self.site.render(self.template, 404, title="Not found", message="There is no page at this address.")

    async def unavailable(self, request: Request, exc: Exception) -> Response:
        """The database is away (a PostgreSQL restart, a lock held too long): 503, and a line in the log a minute."""
        if not self.passing(exc):
            raise exc  # a bug (SQLite's OperationalError is also "no such column"): a 500 and its traceback
        reason = f"the database is unavailable: {describe(exc)}"
        if time.monotonic() - self.said >= UNAVAILABLE_SAID_EVERY:
            log.warning("web pages wait for the database: %s", describe(exc))
            self.said = time.monotonic()
        if request.url.path.startswith("/api/"):
            response: Response = json_response({"error": reason}, 503)
        else:
            response = self.site.render(self.template, 503, title="Database unavailable", message=f"{reason}. Try again shortly.")
        response.headers["Retry-After"] = "10"
        return response
