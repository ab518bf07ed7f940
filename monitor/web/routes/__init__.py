"""The web UI's routes, one module per group of pages; each has ``routes(site)``.

The built-in groups are :data:`GROUPS`, their links in the navigation :data:`NAV`. A page of a module of its own
registers a :class:`Page` (:func:`register`) before the app is made: its routes are served by the same app, behind
the same host check and headers as every other page, and its link joins the navigation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from starlette.routing import BaseRoute

from monitor.web.routes import admin, admin_pages, api, incidents, maintenance, memory, overview, runs, status, targets
from monitor.web.site import Link, Site

GROUPS = (overview, targets, incidents, runs, memory, maintenance, admin_pages, admin, api, status)
NAV: tuple[Link, ...] = (
    ("/", "Overview"),
    ("/incidents", "Incidents"),
    ("/runs", "Agent runs"),
    ("/memory", "Memory"),
    ("/maintenance", "Maintenance"),
    ("/admin/targets", "Config"),
)


@dataclass(frozen=True)
class Page:
    """A group of pages of a module of its own: ``routes(site)``, and its ``link`` in the navigation (None: none)."""

    name: str
    routes: Callable[[Site], list[BaseRoute]]
    link: Link | None = None


_REGISTERED: dict[str, Page] = {}


def register(page: Page) -> Page:
    """Serve ``page`` in every app made from now on; registering the same page again is fine, another is refused."""
    known = _REGISTERED.get(page.name)
    if (known is not None and known != page) or page.name in {group.__name__.rpartition(".")[2] for group in GROUPS}:
        raise ValueError(f"a page group named {page.name!r} is already served")
    _REGISTERED[page.name] = page
    return page


def unregister(name: str) -> None:
    """Serve a registered page no more (a test's)."""
    _REGISTERED.pop(name, None)


def routes(site: Site) -> list[BaseRoute]:
    made: list[Callable[[Site], list[BaseRoute]]] = [*(group.routes for group in GROUPS), *(page.routes for page in _REGISTERED.values())]
    return [route for group in made for route in group(site)]


def navigation() -> tuple[Link, ...]:
    """The links of the navigation: the built-in pages', then the registered ones'."""
    return NAV + tuple(page.link for page in _REGISTERED.values() if page.link is not None)
