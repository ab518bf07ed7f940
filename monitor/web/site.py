"""What every page handler shares: the store, the page data, the clock, and the templates that render.

Templates are Jinja2 with autoescape, so whatever a target or a model wrote is shown as text; every value a
template or the JSON API writes is redacted (:func:`monitor.core.urls.redact_text`) on its way out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup
from starlette.responses import HTMLResponse, Response
from starlette.routing import BaseRoute

from monitor.core.results import WARNING, Seen
from monitor.core.state import DOWN, state_of
from monitor.core.urls import redact_text, redacted
from monitor.store import StoreView
from monitor.web import charts
from monitor.web.editor import Editor
from monitor.web.pages import Pages
from monitor.web.status import duration
from monitor.wiring import Actions

ROW_CLASSES = {DOWN: "failed", WARNING: "warning"}
Link = tuple[str, str]  # a link in the navigation: (path, label)


@dataclass(frozen=True)
class Page:
    """A group of pages of the web UI (:mod:`monitor.web.routes`): its ``name`` (its ``monitor.pages`` entry
    point's), ``routes(site)``, and its ``link`` in the navigation (None: none)."""

    name: str
    routes: Callable[[Site], list[BaseRoute]]
    link: Link | None = None


def when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch)) + " UTC" if epoch else "-"


def ago(epoch: float | None, now: float | None = None) -> str:
    if not epoch:
        return "never"
    seconds = max(0.0, (now or time.time()) - epoch)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def row_class(result: Seen) -> str:
    """A result's row in a table: failed (it found the target down), warning (up, degraded) or ok."""
    return ROW_CLASSES.get(state_of(result), "ok")


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio * 100:.2f}%"


def templates() -> jinja2.Environment:
    """The page templates shipped in the package, with the filters they use."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(resources.files("monitor.web") / "templates")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=shown,
    )
    env.filters.update(
        when=when,
        ago=ago,
        ms=ms,
        pct=pct,
        q=lambda s: quote(str(s), safe=""),
        nbytes=lambda n: f"{n or 0:,}",
        lasted=duration,
        row_class=row_class,
    )
    env.globals.update(phase_colours=charts.PHASE_COLOURS, state_colours=charts.STATE_COLOURS)
    return env


def shown(value: Any) -> Any:
    """A value as a template writes it: text redacted; markup built by the code (uptime bars) as it is."""
    return redact_text(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def json_response(data: Any, status: int = 200) -> Response:
    return Response(json.dumps(redacted(data), default=str), status_code=status, media_type="application/json")


@dataclass
class Site:
    """The web UI over one store, which it reads through ``reader``: every part read-only, no write. ``refresh`` is
    how often the overview reloads its data, in seconds (None: the config's ``web.refresh``, as it is in force).
    Actions on incidents go through ``actions`` (None: there are none). ``nav``: the links every page's navigation
    shows (:func:`monitor.web.routes.navigation`). ``editor`` changes the config file from the admin pages and API
    (None: they only read)."""

    reader: StoreView
    pages: Pages
    clock: Callable[[], float] = time.time
    refresh: float | None = None
    env: jinja2.Environment = field(default_factory=templates)
    actions: Actions | None = None
    nav: tuple[Link, ...] = ()
    editor: Editor | None = None

    def render(self, template: str | jinja2.Template, code: int = 200, **context: Any) -> HTMLResponse:
        """``template`` (a name, or one made with ``env.from_string``) rendered with ``context``."""
        refresh = self.refresh if self.refresh is not None else self.pages.config.web.refresh
        html = self.env.get_template(template).render(**{"refresh": refresh, "now": self.clock(), "nav": self.nav, **context})
        return HTMLResponse(html, status_code=code)

    def not_found(self, what: str) -> HTMLResponse:
        return self.render("error.html", 404, title="Not found", message=f"{what} is not in this database.")


class View:
    """A page's handlers (its routes' endpoints), over the :class:`Site` they read and render with."""

    def __init__(self, site: Site) -> None:
        self.site = site
