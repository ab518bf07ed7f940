"""``/admin/targets`` and ``/admin/maintenance``: the config file's targets and maintenance windows, changed from the
browser.

Each list page shows the items as the file has them, a form that adds one, whether the file can be written back
(and why not: target files, a read-only file, a link), and the latest changes with who made them. An item's page
shows its own lines of the file, comments kept, to edit in place; pause, resume and delete are buttons there. Every
form carries the config's version as the page read it (a file changed since is refused, never overwritten), the
token, and a CSRF token only this server makes, from a page of this site; the change goes through the daemon's
:class:`~monitor.web.editor.Editor`, as the admin API's do.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from monitor.config import safeyaml
from monitor.config.edits import Edit, EditError, Op, written
from monitor.config.serving import WebConfig
from monitor.listener.refusals import Refusals
from monitor.web import origin
from monitor.web.editor import READ_ONLY
from monitor.web.routes.incidents import form
from monitor.web.site import Page, Site

log = logging.getLogger("monitor.web")

CSRF_COOKIE = "monitor_admin_csrf"
TITLES = {"targets": "Targets", "maintenance": "Maintenance windows"}
BUTTONS: dict[str, Op] = {"save": "replace", "delete": "delete", "pause": "patch", "resume": "patch"}


def routes(site: Site) -> list[BaseRoute]:
    view = AdminPages(site)
    found: list[BaseRoute] = []
    for section in TITLES:
        found += [
            Route(f"/admin/{section}", view.listed, methods=["GET", "POST"]),
            Route(f"/admin/{section}/{{key:path}}", view.item, methods=["GET", "POST"]),
        ]
    return found


def csrf_key(web: WebConfig) -> str | None:
    """What this site's CSRF tokens are made with: ``web.token``, else the first of ``web.tokens`` (None: no token)."""
    return web.token or next(iter(sorted(web.tokens.values())), None)


class AdminPages:
    def __init__(self, site: Site) -> None:
        self.site = site
        self.refusals = Refusals("the admin pages", log=log, what="refused changes")

    async def listed(self, request: Request) -> Response:
        section = request.url.path.removeprefix("/admin/")
        if request.method == "POST":
            return await self._post(request, section, None)
        editor = self.site.editor
        context: dict[str, Any] = {"section": section, "items": [], "version": "", "why_not": READ_ONLY, "changes": []}
        if editor is not None:
            try:
                items, version = editor.file.items(section)
                context.update(items=items, version=version, why_not=editor.refusal())
            except EditError as exc:
                context.update(why_not=exc.message)
            context["changes"] = self.site.reader.changes.config_changes(20)
        return self._page(request, "admin.html", TITLES[section], **context)

    async def item(self, request: Request) -> Response:
        section, key = request.url.path.removeprefix("/admin/").partition("/")[::2]
        if request.method == "POST":
            return await self._post(request, section, key)
        editor = self.site.editor
        if editor is None:
            return self.site.render("error.html", 409, title="Read-only", message=READ_ONLY)
        try:
            data, version = editor.file.read()
            text = written(data.decode("utf-8"), section, _key(section, key))
        except EditError as exc:
            return self.site.render("error.html", exc.status, title="Not here", message=exc.message)
        paused = any(name == key and isinstance(i, dict) and i.get("paused") for name, i in editor.file.items(section)[0])
        context = {"section": section, "key": key, "text": text, "version": version, "why_not": editor.refusal(), "paused": paused}
        return self._page(request, "admin_item.html", f"{TITLES[section]}: {key}", **context)

    def _page(self, request: Request, template: str, title: str, **context: Any) -> Response:
        """A page with its forms' CSRF token (kept in a cookie), when a token is configured."""
        secret = csrf_key(self.site.pages.config.web)
        if secret is None:
            return self.site.render(template, title=title, csrf=None, **context)
        csrf = request.cookies.get(CSRF_COOKIE, "")
        if not origin.made_here(csrf, secret):
            csrf = origin.csrf_token(secret)
        response = self.site.render(template, title=title, csrf=csrf, **context)
        response.set_cookie(CSRF_COOKIE, csrf, httponly=True, samesite="strict", path="/admin")
        return response

    async def _post(self, request: Request, section: str, key: str | None) -> Response:
        web, editor = self.site.pages.config.web, self.site.editor
        if csrf_key(web) is None or editor is None:
            return self.site.render("error.html", 405, title="Read-only", message=READ_ONLY if editor is None else "set web.token")
        fields = await form(request)
        who = self._who(request, fields, web)
        if who.startswith("!"):
            self.refusals.note(who[1:].partition(" (")[0])
            return self.site.render("error.html", 403, title="Refused", message=who[1:])
        try:
            edit = _edit(section, key, fields)
        except EditError as exc:
            return self.site.render("error.html", exc.status, title="Not changed", message=exc.message)
        client = request.client.host if request.client else None
        outcome = await run_in_threadpool(editor.change, edit, fields.get("version"), actor=who, client=client)
        if not outcome.ok:
            return self.site.render("error.html", outcome.status, title="Not changed", message=outcome.message)
        if edit.op == "delete" or edit.op == "add":
            return RedirectResponse(f"/admin/{section}", status_code=303)
        return RedirectResponse(f"/admin/{section}/{quote(str(key), safe='/')}", status_code=303)

    def _who(self, request: Request, fields: dict[str, str], web: WebConfig) -> str:
        """The name of the token typed into the form, or ``!`` and why the request is refused."""
        elsewhere = origin.foreign(request)
        if elsewhere is not None:
            return "!" + elsewhere
        cookie, field, secret = request.cookies.get(CSRF_COOKIE, ""), fields.get("csrf", ""), csrf_key(web) or ""
        if not origin.made_here(cookie, secret) or not hmac.compare_digest(cookie.encode(), field.encode()):
            return "!the form's CSRF token does not match this browser's: reload the page and try again"
        return web.token_name(fields.get("token", "")) or "!wrong token (web.token, or one of web.tokens)"


def _key(section: str, key: str) -> str | int:
    if section == "targets":
        return key
    if not (key.isascii() and key.isdigit() and len(key) < 7):
        raise EditError(f"no window {key[:32]!r}: windows are named by their position", 404)
    return int(key)


def _edit(section: str, key: str | None, fields: dict[str, str]) -> Edit:
    """The change a form asks for."""
    if key is None:
        return Edit(section, "add", None, _added(section, fields))
    button, named = fields.get("action", ""), _key(section, key)
    if button not in BUTTONS:
        raise EditError(f"unknown action {button[:32]!r}: one of {', '.join(BUTTONS)}", 400)
    if button in ("pause", "resume"):
        return Edit(section, "patch", named, {"paused": True if button == "pause" else None})
    return Edit(section, BUTTONS[button], named, _yaml(fields.get("yaml", "")) if button == "save" else None)


def _added(section: str, fields: dict[str, str]) -> dict[str, Any]:
    """A new target from the form's fields (and any more settings in YAML), or a new window from its YAML."""
    value = _yaml(fields.get("yaml", "")) if fields.get("yaml", "").strip() else {}
    if section == "targets":
        given = {name: fields.get(name, "").strip() for name in ("name", "url", "interval")}
        value = {**{name: text for name, text in given.items() if text}, **value}
    return value


def _yaml(text: str) -> dict[str, Any]:
    try:
        value, _ = safeyaml.load(text.encode("utf-8"), max_bytes=16_384, max_nodes=2_000)
    except safeyaml.YamlError as exc:
        raise EditError(f"not YAML: {exc.message}" + (f" (line {exc.line})" if exc.line else ""), 400) from None
    if not isinstance(value, dict):
        raise EditError("write the item as a YAML mapping (key: value, one a line)", 400)
    return value


PAGE = Page("admin_pages", routes, link=("/admin/targets", "Config"))  # its monitor.pages entry point (pyproject.toml)
