"""The web UI and JSON API: a small Starlette app, served by uvicorn.

Pages (HTML, Jinja2 with autoescape, so whatever a target or a model wrote is shown as text)::

    /?page=&q=              overview: a page of targets, problems first, with state, uptime and recent
                            latency by phase; open incidents on top; refreshes itself from
                            /fragments/overview (same parameters)
    /targets/{name}         check history chart, the last results, the target's incidents
    /incidents, /incidents/{id}      list; timeline of one incident with its recalled past incidents
    /runs, /runs/{id}       agent runs; one replayed step by step
    /memory                 working and long-term memory, and memory size over time
    /badges/{name}/status.svg, uptime.svg, latency.svg

and the same data as JSON under /api/v1/ (see README). It is read-only unless ``web.token`` is
set; then ``POST /incidents/{id}/actions`` acknowledges, resolves with a note or silences, with the
token, a CSRF token and a same-origin request, and every attempt is audited in the store. Every
response carries a strict Content-Security-Policy, so even a page that let markup through could run
no inline script.

``create_app(store, config)`` is the app; :class:`WebServer` runs it on a thread of
the daemon, and :func:`serve` in the foreground for ``monitor web``.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from monitor.config import Config
from monitor.core.urls import redact_text
from monitor.store import Store
from monitor.store.engines import describe
from monitor.web import charts
from monitor.web.pages import PER_PAGE, WINDOWS, Pages

log = logging.getLogger("monitor.web.app")

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff", "referrer-policy": "same-origin",
           "x-frame-options": "DENY"}
MAX_LIMIT = 500
MAX_FILTER = 200  # characters of the overview's name filter
ACTIONS = ("acknowledge", "resolve", "silence")
CSRF_COOKIE = "monitor_csrf"
MAX_FORM = 16_384  # bytes of an action's form
BADGE_CACHE = "public, max-age=60"


class BadRequest(ValueError):
    """A query parameter the API cannot use; answered 400 with its message."""


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resources.files("monitor.web") / "templates")),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters.update(when=_when, ago=_ago, ms=_ms, pct=_pct, q=lambda s: quote(str(s), safe=""),
                       nbytes=lambda n: f"{n or 0:,}")
    env.globals.update(phase_colours=charts.PHASE_COLOURS, state_colours=charts.STATE_COLOURS)
    return env


def _when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch)) + " UTC" if epoch else "-"


def _ago(epoch: float | None, now: float | None = None) -> str:
    if not epoch:
        return "never"
    seconds = max(0.0, (now or time.time()) - epoch)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def _pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio * 100:.2f}%"


class SecurityHeaders:
    """Adds CSP and friends to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = list(message.get("headers", [])) + [
                    (k.encode(), v.encode()) for k, v in HEADERS.items() if k.encode() not in names]
            await send(message)

        await self.app(scope, receive, with_headers)


def _limit(request: Request, default: int = 50) -> int:
    raw = request.query_params.get("limit", str(default))
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise BadRequest(f"limit must be a whole number from 1 to {MAX_LIMIT}, not {raw!r}")
    return int(raw)


def _page(request: Request) -> int:
    raw = request.query_params.get("page", "1")
    if not raw.isdigit() or int(raw) < 1:
        raise BadRequest(f"page must be a whole number from 1, not {raw!r}")
    return int(raw)


def _filter(request: Request) -> str:
    q = request.query_params.get("q", "").strip()
    if len(q) > MAX_FILTER:
        raise BadRequest(f"q (a part of target names) may have at most {MAX_FILTER} characters, not {len(q)}")
    return q


def _page_numbers(page: int, pages: int) -> list[int]:
    """The pages a pager links: the first, the last, and two either side of this one."""
    return sorted({1, pages, *range(max(1, page - 2), min(pages, page + 2) + 1)})


def _overview_query(page: int, q: str) -> str:
    """``?page=N&q=TEXT`` for a page of the overview, leaving out the defaults (page 1, no filter)."""
    params = {name: value for name, value in (("page", page if page > 1 else ""), ("q", q)) if value}
    return f"?{urlencode(params)}" if params else ""


def _int_param(request: Request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return None
    if not raw.isdigit():
        raise BadRequest(f"{name} must be a positive whole number, not {raw!r}")
    return int(raw)


def _results_cursor(request: Request) -> tuple[float, int] | None:
    """``before=<checked_at>:<id>``, as the ``next`` link of a results page gives it."""
    raw = request.query_params.get("before")
    if not raw:
        return None
    at, _, row_id = raw.partition(":")
    try:
        return float(at), int(row_id or 2**63 - 1)
    except ValueError:
        raise BadRequest(f"before must be <checked_at>:<id> as a next link gives it, not {raw!r}") from None


def _window(request: Request, default: str) -> str:
    window = request.query_params.get("window", default)
    if window not in WINDOWS:
        raise BadRequest(f"window must be one of {', '.join(WINDOWS)}, not {window!r}")
    return window


def _next(request: Request, items: list[dict[str, Any]], limit: int, cursor: Callable[[dict[str, Any]], str]) -> str | None:
    """The URL of the next page, or None when this one was the last."""
    if len(items) < limit:
        return None
    params = {**request.query_params, "before": cursor(items[-1]), "limit": str(limit)}
    return f"{request.url.path}?{urlencode(params)}"


def create_app(store: Store, config: Config | None = None, *, clock: Callable[[], float] = time.time,
               refresh: float = 10.0) -> ASGIApp:
    """The web UI over ``store``; ``refresh`` is how often the overview reloads its data, in seconds."""
    pages = Pages(store, config, clock=clock)
    env = _templates()

    def render(template: str, code: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(env.get_template(template).render(**{"refresh": refresh, "now": clock(), **context}), status_code=code)

    def not_found(what: str) -> HTMLResponse:
        return render("error.html", 404, title="Not found", message=f"{what} is not in this database.")

    def overview_data(request: Request) -> dict[str, Any]:
        data = pages.overview(page=_page(request), q=_filter(request))
        for row in data["targets"]:
            row["chart"] = charts.phase_bars(row["recent"])
        data["query"] = _overview_query(data["page"], data["q"])
        data["page_links"] = {n: "/" + _overview_query(n, data["q"]) for n in _page_numbers(data["page"], data["pages"])}
        return data

    def overview(request: Request) -> Response:
        return render("overview.html", title="Overview", **overview_data(request))

    def overview_fragment(request: Request) -> Response:
        return render("_overview_live.html", **overview_data(request))

    def target(request: Request) -> Response:
        name = request.path_params["name"]
        if not pages.known(name):
            return not_found(f"Target {name!r}")
        limit, window = _limit(request), _window(request, "24h")
        data = pages.target(name, window=window, limit=limit, before=_results_cursor(request))
        chart = charts.history_chart(data["buckets"], data["since"], data["now"], data["slices"],
                                     data["window_incidents"])
        last = data["results"][-1] if data["results"] else None
        older = (f"?{urlencode({'window': window, 'limit': limit, 'before': _result_cursor(last)})}"
                 if data["more"] and last else None)
        return render("target.html", title=name, chart=chart, older=older, windows=list(WINDOWS), **data)

    def incidents(request: Request) -> Response:
        status, name = request.query_params.get("status") or None, request.query_params.get("target") or None
        limit = _limit(request)
        rows = store.incidents_page(target=name, status=status, limit=limit, before=_int_param(request, "before"))
        more = _next(request, rows, limit, lambda r: str(r["id"]))
        return render("incidents.html", title="Incidents", incidents=rows, more=more, filter_status=status, target=name)

    def incident(request: Request) -> Response:
        data = pages.incident(request.path_params["id"])
        if data is None:
            return not_found(f"Incident #{request.path_params['id']}")
        if not pages.config.web.token:
            return render("incident.html", title=f"Incident #{data['incident']['id']}", csrf=None, **data)
        csrf = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
        response = render("incident.html", title=f"Incident #{data['incident']['id']}", csrf=csrf, **data)
        response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="strict", path="/")
        return response

    async def incident_action(request: Request) -> Response:
        """Acknowledge, resolve with a note, or silence: with the configured token and the page's CSRF token;
        every request that gets this far is audited, done or refused."""
        token = pages.config.web.token
        if not token:
            return render("error.html", 405, title="Read-only", message="Actions are off: set web.token to turn them on.")
        incident_id = request.path_params["id"]
        fields = await _form(request)
        action, note = fields.get("action", ""), fields.get("note", "").strip()
        client = request.client.host if request.client else None
        refusal = _refusal(request, fields, token, action, note)
        if refusal is None and store.incident(incident_id) is None:
            refusal = f"there is no incident #{incident_id}"
        if refusal is not None:
            store.audit_web_action(incident_id, action or "?", ok=False, detail=refusal, note=note, client=client)
            return render("error.html", 403, title="Refused", message=refusal)
        detail = _act(store, incident_id, action, note)
        store.audit_web_action(incident_id, action, ok=True, detail=detail, note=note, client=client)
        return RedirectResponse(f"/incidents/{incident_id}", status_code=303)

    def runs(request: Request) -> Response:
        limit = _limit(request)
        rows = store.runs_page(limit=limit, before=_int_param(request, "before"))
        return render("runs.html", title="Agent runs", runs=rows, more=_next(request, rows, limit, lambda r: str(r["id"])))

    def run(request: Request) -> Response:
        data = pages.run(request.path_params["id"])
        if data is None:
            return not_found(f"Agent run #{request.path_params['id']}")
        return render("run.html", title=f"Agent run #{data['run']['id']}", **data)

    def memory(request: Request) -> Response:
        data = pages.memory(window=_window(request, "7d"))
        samples = data["samples"]
        return render("memory.html", title="Memory", windows=list(WINDOWS),
                      working_chart=charts.size_chart(samples, "bytes", "working memory, bytes"),
                      db_chart=charts.size_chart(samples, "db_bytes", "database, bytes"), **data)

    def badge(request: Request) -> Response:
        name, kind = request.path_params["name"], request.path_params["kind"]
        if kind not in ("status", "uptime", "latency"):
            return Response("badges: status.svg, uptime.svg, latency.svg", status_code=404)
        if not pages.known(name):
            return Response(charts.badge(name, "not found", charts.STATE_COLOURS["unknown"]), status_code=404,
                            media_type="image/svg+xml", headers={"cache-control": "no-cache"})
        now = clock()
        window = _window(request, "24h")
        if kind == "status":
            row = pages.target_row(name, now)
            label, value, colour = name, row["state"], charts.STATE_COLOURS[row["state"]]
        elif kind == "uptime":
            ratio = store.uptime(name, {window: WINDOWS[window]}, now)[window]["ratio"]
            label, value = f"uptime {window}", _pct(ratio)
            colour = charts.STATE_COLOURS["unknown" if ratio is None else "up" if ratio >= 0.99
                                          else "warning" if ratio >= 0.95 else "down"]
        else:
            buckets = store.latency_buckets(name, now - WINDOWS[window], now, 1)
            mean = buckets[0]["mean_ms"] if buckets else None
            label, value = f"latency {window}", _ms(mean)
            colour = charts.STATE_COLOURS["unknown" if mean is None else "up" if mean < 500
                                          else "warning" if mean < 2000 else "down"]
        return Response(charts.badge(label, value, colour), media_type="image/svg+xml",
                        headers={"cache-control": BADGE_CACHE})

    # -- JSON API ---------------------------------------------------------------------------

    def api_targets(request: Request) -> Response:
        data = pages.fleet(page=_page(request), per_page=_limit(request, PER_PAGE), q=_filter(request))
        following = None
        if data["page"] < data["pages"]:
            following = f"{request.url.path}?{urlencode({**request.query_params, 'page': str(data['page'] + 1)})}"
        return _json({"items": [_target_json(row) for row in data["targets"]], "next": following,
                      **{k: data[k] for k in ("page", "pages", "total", "matched", "counts")}})

    def api_target(request: Request) -> Response:
        name = request.path_params["name"]
        if not pages.known(name):
            return _json({"error": f"no target {name!r}"}, 404)
        return _json({**_target_json(pages.target_row(name, clock())),
                      "open_incidents": store.open_incidents(name)})

    def api_results(request: Request) -> Response:
        name = request.path_params["name"]
        if not pages.known(name):
            return _json({"error": f"no target {name!r}"}, 404)
        limit = _limit(request)
        rows = [_result_json(r) for r in store.results_page(name, limit=limit, before=_results_cursor(request))]
        return _json({"items": rows, "next": _next(request, rows, limit, _result_cursor)})

    def api_incidents(request: Request) -> Response:
        limit = _limit(request)
        rows = store.incidents_page(target=request.query_params.get("target") or None,
                                    status=request.query_params.get("status") or None,
                                    limit=limit, before=_int_param(request, "before"))
        return _json({"items": rows, "next": _next(request, rows, limit, lambda r: str(r["id"]))})

    def api_incident(request: Request) -> Response:
        data = pages.incident(request.path_params["id"])
        if data is None:
            return _json({"error": f"no incident #{request.path_params['id']}"}, 404)
        return _json({**data["incident"], "timeline": data["timeline"], "notifications": data["notifications"],
                      "runs": data["runs"], "recalled": [i["id"] for i in data["recalled"]], "actions": data["actions"]})

    def api_runs(request: Request) -> Response:
        limit = _limit(request)
        rows = store.runs_page(limit=limit, before=_int_param(request, "before"),
                               incident_id=_int_param(request, "incident"))
        return _json({"items": rows, "next": _next(request, rows, limit, lambda r: str(r["id"]))})

    def api_run(request: Request) -> Response:
        data = pages.run(request.path_params["id"])
        if data is None:
            return _json({"error": f"no agent run #{request.path_params['id']}"}, 404)
        steps = [{k: v for k, v in s.items() if k != "tool_calls"} for s in data["steps"]]
        return _json({**data["run"], "recall": data["recall"], "recalled": [i["id"] for i in data["recalled"]],
                      "steps": steps})

    def api_memory(request: Request) -> Response:
        data = pages.memory()
        return _json({**data["report"], "summaries": data["summaries"], "incidents_by_target_pattern": data["counts"],
                      "resolution_notes": data["notes"]})

    def api_memory_samples(request: Request) -> Response:
        window = _window(request, "7d")
        return _json({"window": window, "items": store.memory_samples(clock() - WINDOWS[window])})

    routes = [
        Route("/", overview), Route("/fragments/overview", overview_fragment),
        Route("/targets/{name:path}", target),
        Route("/incidents", incidents), Route("/incidents/{id:int}", incident),
        Route("/incidents/{id:int}/actions", incident_action, methods=["POST"]),
        Route("/runs", runs), Route("/runs/{id:int}", run), Route("/memory", memory),
        Route("/badges/{name:path}/{kind:str}.svg", badge),
        Route("/api/v1/targets", api_targets),
        Route("/api/v1/targets/{name:path}/results", api_results),
        Route("/api/v1/targets/{name:path}", api_target),
        Route("/api/v1/incidents", api_incidents), Route("/api/v1/incidents/{id:int}", api_incident),
        Route("/api/v1/runs", api_runs), Route("/api/v1/runs/{id:int}", api_run),
        Route("/api/v1/memory", api_memory), Route("/api/v1/memory/samples", api_memory_samples),
        Mount("/static", StaticFiles(directory=str(resources.files("monitor.web") / "static")), name="static"),
    ]

    async def bad_request(request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return _json({"error": str(exc)}, 400)
        return render("error.html", 400, title="Bad request", message=str(exc))

    async def missing(request: Request, exc: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return _json({"error": "no such API path; see /api/v1/targets"}, 404)
        return render("error.html", 404, title="Not found", message="There is no page at this address.")

    said = [0.0]  # when the log last said the database was unavailable

    async def unavailable(request: Request, exc: Exception) -> Response:
        """The database is away (a PostgreSQL restart, a lock held too long): 503, and a line in the log a minute."""
        if not store.engine.passing(exc):
            raise exc  # a bug (SQLite's OperationalError is also "no such column"): a 500 and its traceback
        reason = f"the database is unavailable: {describe(exc)}"
        if time.monotonic() - said[0] >= 60:
            log.warning("web pages wait for the database: %s", describe(exc))
            said[0] = time.monotonic()
        headers = {"Retry-After": "10"}
        if request.url.path.startswith("/api/"):
            response: Response = _json({"error": reason}, 503)
        else:
            response = render("error.html", 503, title="Database unavailable", message=f"{reason}. Try again shortly.")
        response.headers.update(headers)
        return response

    app = Starlette(routes=routes, exception_handlers={
        BadRequest: bad_request, 404: missing, **dict.fromkeys(store.errors, unavailable)})
    return SecurityHeaders(app)


async def _form(request: Request) -> dict[str, str]:
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


def _refusal(request: Request, fields: dict[str, str], token: str, action: str, note: str) -> str | None:
    """Why an action request is refused, or None."""
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.headers.get('host', '')}":
        return f"a request from another site ({origin}) is refused"
    cookie, field = request.cookies.get(CSRF_COOKIE, ""), fields.get("csrf", "")
    if not cookie or not hmac.compare_digest(cookie.encode(), field.encode()):
        return "the form's CSRF token does not match this browser's: reload the incident page and try again"
    if not hmac.compare_digest(fields.get("token", "").encode(), token.encode()):
        return "wrong token (web.token)"
    if action not in ACTIONS:
        return f"unknown action {action[:32]!r}: one of {', '.join(ACTIONS)}"
    if action == "resolve" and not note:
        return "resolving needs a note of what fixed it: later investigations recall it"
    return None


def _act(store: Store, incident_id: int, action: str, note: str) -> str:
    """Do an action on an incident, as ``monitor incidents resolve`` does; returns what was done."""
    said = f": {note}" if note else ""
    if action == "resolve":
        if store.close_incident(incident_id, resolution=note):
            return "resolved"
        store.update_incident(incident_id, resolution=redact_text(note))
        return "was already resolved; its resolution note is replaced"
    if action == "silence":
        store.update_incident(incident_id, silenced=1)
        store.append_incident_note(incident_id, f"silenced in the web UI{said}")
        return "silenced: no more alerts for it"
    store.append_incident_note(incident_id, f"acknowledged in the web UI{said}")
    return "acknowledged"


def _json(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(data, default=str), status_code=status, media_type="application/json")


def _result_cursor(row: dict[str, Any] | None) -> str:
    return f"{row['checked_at']!r}:{row['id']}" if row else ""


def _result_json(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "phases": charts.phases_of(row) or None}


def _target_json(row: dict[str, Any]) -> dict[str, Any]:
    latest = row["latest"]
    return {"name": row["name"], "state": row["state"], "config": row["config"],
            "last_check": latest["checked_at"] if latest else None,
            "latest": _result_json(latest) if latest else None, "uptime": row["uptime"]}


# -- serving ----------------------------------------------------------------------------------


def _listener(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _server(app: ASGIApp) -> Any:
    import uvicorn

    return uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                         server_header=False, timeout_graceful_shutdown=2))


def start_server(store: Store, config: Config, *, clock: Callable[[], float] = time.time) -> WebServer:
    """The daemon's web UI on ``config.web.listen``, reading through its own connection to the database
    (WAL: a page never waits for the daemon's writes, nor they for it), unless the database is in memory."""
    own = None if store.path == ":memory:" else store.reopen(timeout=1.0)  # closing never waits long
    app = create_app(own or store, config, clock=clock, refresh=config.web.refresh)
    try:
        return WebServer(app, config.web.host, config.web.port, closing=own).start()
    except BaseException:
        if own is not None:
            own.close()
        raise


class WebServer:
    """The web UI on its own thread and listener (``web.listen``), for the daemon."""

    def __init__(self, app: ASGIApp, host: str, port: int, *, closing: Store | None = None) -> None:
        self.closing = closing
        self.socket = _listener(host, port)
        self.server = _server(app)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]},
                                       name="monitor-web", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    def start(self, timeout: float = 10.0) -> WebServer:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(5)
        self.socket.close()
        if self.closing is not None:
            self.closing.close()


def serve(app: ASGIApp, host: str, port: int, ready: Callable[[str], None] | None = None) -> None:
    """Serve in the foreground until SIGINT or SIGTERM (``monitor web``)."""
    sock = _listener(host, port)
    server = _server(app)
    if ready is not None:
        name = sock.getsockname()
        ready(f"http://{name[0]}:{name[1]}")
    server.run(sockets=[sock])
