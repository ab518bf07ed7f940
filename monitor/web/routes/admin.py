"""The admin API: targets and maintenance windows of the config file, read and changed with a token.

::

    GET    /api/v1/admin/targets                 the targets as written in the file, its version (ETag)
    POST   /api/v1/admin/targets                 add one (a JSON object, as a target is written in YAML)
    GET    /api/v1/admin/targets/{name}          one target as written
    PUT    /api/v1/admin/targets/{name}          replace it (keys not given go)
    PATCH  /api/v1/admin/targets/{name}          change some keys (RFC 7386: null removes one)
    DELETE /api/v1/admin/targets/{name}          delete it
    POST   /api/v1/admin/targets/{name}/pause    pause it (paused: true), .../resume to check it again
    ...    /api/v1/admin/maintenance[/{index}]   the same for maintenance windows, by their position
    GET    /api/v1/admin/changes                 the log of changes: who (the token's name), when, what, how it went

Every request carries ``Authorization: Bearer <token>`` (``web.token``, or one of ``web.tokens``, whose name the log
shows); a change carries ``If-Match: <version>`` from a GET, and a file changed since is a 412. A request without a
token is a 401 and only counted in the log; every change asked for with one is logged in the store, made or refused.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from monitor.config.edits import Edit, EditError, Op
from monitor.listener.refusals import Refusals
from monitor.web.editor import READ_ONLY, Editor, Outcome
from monitor.web.site import Page, Site, json_response

log = logging.getLogger("monitor.web")

MAX_BODY = 65_536  # bytes of a request's JSON
SECTIONS = ("targets", "maintenance")
OPS: dict[str, Op] = {"PUT": "replace", "PATCH": "patch", "DELETE": "delete"}


def routes(site: Site) -> list[BaseRoute]:
    api = Admin(site)
    found: list[BaseRoute] = [Route("/api/v1/admin/changes", api.changes)]
    for section in SECTIONS:
        base = f"/api/v1/admin/{section}"
        found += [
            Route(base, api.listed, methods=["GET", "POST"], name=f"admin-{section}"),
            Route(base + "/{key:path}/pause", api.pause, methods=["POST"]),
            Route(base + "/{key:path}/resume", api.pause, methods=["POST"]),
            Route(base + "/{key:path}", api.item, methods=["GET", "PUT", "PATCH", "DELETE"]),
        ]
    return found


def section_of(request: Request) -> str:
    return request.url.path.removeprefix("/api/v1/admin/").partition("/")[0]


def key_of(section: str, key: str) -> str | int | None:
    """A target's name, or a window's position (None: not a position)."""
    if section == "targets":
        return key
    return int(key) if key.isascii() and key.isdigit() and len(key) < 7 else None


class Refused(Exception):
    """A request the admin API refuses, with the answer that says why."""

    def __init__(self, answer: Response) -> None:
        super().__init__(answer.status_code)
        self.answer = answer


def refusing(handler: Callable[[Admin, Request], Awaitable[Response]]) -> Callable[[Admin, Request], Awaitable[Response]]:
    """``handler``, answering a request it refuses (:class:`Refused`) with the refusal."""

    @functools.wraps(handler)
    async def answered(admin: Admin, request: Request) -> Response:
        try:
            return await handler(admin, request)
        except Refused as refused:
            return refused.answer

    return answered


class Admin:
    def __init__(self, site: Site) -> None:
        self.site = site
        self.refusals = Refusals("the admin API", log=log, what="refused requests")

    def _who(self, request: Request) -> str:
        """The name of the token the request carries (else :class:`Refused`)."""
        web = self.site.pages.config.web
        if not web.token and not web.tokens:
            raise Refused(json_response({"error": "the admin API is off: set web.token (or web.tokens) to turn it on"}, 403))
        scheme, _, offered = request.headers.get("authorization", "").partition(" ")
        name = web.token_name(offered.strip()) if scheme.lower() == "bearer" else None
        if name is None:
            self.refusals.note("no token, or a wrong one")
            answer = json_response({"error": "send Authorization: Bearer <token> (web.token, or one of web.tokens)"}, 401)
            answer.headers["WWW-Authenticate"] = 'Bearer realm="monitor admin"'
            raise Refused(answer)
        return name

    def _gate(self, request: Request) -> tuple[str, Editor]:
        """Who asks (their token's name) and the editor (else :class:`Refused`)."""
        who = self._who(request)
        if self.site.editor is None:
            raise Refused(json_response({"error": READ_ONLY}, 409))
        return who, self.site.editor

    @refusing
    async def listed(self, request: Request) -> Response:
        who, editor = self._gate(request)
        section = section_of(request)
        if request.method == "POST":
            return await self._change(request, editor, Edit(section, "add", None, await _body(request)), who)
        try:
            items, version = editor.file.items(section)
        except EditError as exc:
            return json_response({"error": exc.message}, exc.status)
        data = {"version": version, "writable": editor.refusal() is None, "why_not": editor.refusal(), "items": [i for _, i in items]}
        return _tagged(json_response(data), version)

    @refusing
    async def item(self, request: Request) -> Response:
        who, editor = self._gate(request)
        section = section_of(request)
        key = key_of(section, request.path_params["key"])
        if request.method == "GET":
            return self._one(editor, section, key)
        body = await _body(request) if request.method != "DELETE" else None
        if key is None:
            return json_response({"error": f"{section} has no item {request.path_params['key']!r}"}, 404)
        return await self._change(request, editor, Edit(section, OPS[request.method], key, body), who)

    @refusing
    async def pause(self, request: Request) -> Response:
        who, editor = self._gate(request)
        if section_of(request) != "targets":
            return json_response({"error": "only a target is paused; a window is changed or deleted"}, 404)
        paused = request.url.path.endswith("/pause")
        edit = Edit("targets", "patch", request.path_params["key"], {"paused": True if paused else None})
        return await self._change(request, editor, edit, who)

    @refusing
    async def changes(self, request: Request) -> Response:
        self._who(request)
        return json_response({"items": [change.to_json() for change in self.site.reader.changes.config_changes(100)]})

    def _one(self, editor: Editor, section: str, key: str | int | None) -> Response:
        try:
            items, version = editor.file.items(section)
        except EditError as exc:
            return json_response({"error": exc.message}, exc.status)
        found = next((item for name, item in items if name == key), None)
        if found is None:
            return json_response({"error": f"{section} has no item {key!r}"}, 404)
        return _tagged(json_response({"version": version, "item": found}), version)

    async def _change(self, request: Request, editor: Editor, edit: Edit, who: str) -> Response:
        expected = request.headers.get("if-match", "").removeprefix("W/").strip('" ') or None
        client = request.client.host if request.client else None
        outcome = await run_in_threadpool(editor.change, edit, expected, actor=who, client=client)
        return _tagged(json_response(_answer(outcome), outcome.status), outcome.version)


def _answer(outcome: Outcome) -> dict[str, Any]:
    if not outcome.ok:
        return {"error": outcome.message}
    return {"message": outcome.message, "version": outcome.version, "reloaded": outcome.reloaded, "diff": outcome.diff}


def _tagged(response: Response, version: str | None) -> Response:
    if version:
        response.headers["ETag"] = f'"{version}"'
    return response


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object, at most MAX_BODY bytes (else :class:`Refused`, a 400 or 413 that says why)."""
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY:
            raise Refused(json_response({"error": f"a body of more than {MAX_BODY:,} bytes"}, 413))
    try:
        body = json.loads(data or b"null")
    except (UnicodeDecodeError, ValueError) as exc:
        raise Refused(json_response({"error": f"the body is not JSON: {exc}"}, 400)) from exc
    if not isinstance(body, dict):
        raise Refused(json_response({"error": "the body is a JSON object: a target or a window as it is written in YAML"}, 400))
    return body


PAGE = Page("admin", routes)  # its monitor.pages entry point (pyproject.toml)
