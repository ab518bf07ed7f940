"""The web UI's routes, one module per group of pages, each declaring its :class:`~monitor.web.site.Page`.

Every group, a built-in one as one of a package of its own, is a ``Page`` named in the ``monitor.pages`` entry
point group of its distribution (``name = "module:PAGE"``; monitor's own in ``pyproject.toml``): its routes are
served by the same app, behind the same host check and headers as every other page, and its link joins the
navigation. The built-in groups come first, in :data:`BUILTIN`'s order (a route matches the first that has it, so
no plugin shadows a built-in page); a test registers one in its own process (:func:`register`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.routing import BaseRoute

from monitor.core import plugins
from monitor.web.site import Link, Page, Site

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["BUILTIN", "Page", "loaded", "navigation", "register", "routes", "unregister"]

# The built-in groups in the order their routes are matched and their links shown; each monitor's own entry point.
BUILTIN = ("overview", "targets", "incidents", "runs", "memory", "maintenance", "admin_pages", "admin", "api", "status")
_REGISTERED: dict[str, Page] = {}


def register(page: Page) -> Page:
    """Serve ``page`` in every app made from now on; registering the same page again is fine, another by a name
    already served (a built-in's, an installed one's) is refused."""
    if {known.name: known for known in loaded()}.get(page.name, page) != page:
        raise ValueError(f"a page group named {page.name!r} is already served")
    _REGISTERED[page.name] = page
    return page


def unregister(name: str) -> None:
    """Serve a registered page no more (a test's); a built-in, or an installed one, is loaded again when asked for."""
    _REGISTERED.pop(name, None)


def loaded() -> list[Page]:
    """Every group: the built-in ones in their order, then each installed package's (its ``monitor.pages`` entry
    point, loaded on first ask), then those registered in this process."""
    return plugins.gather(plugins.PAGES, BUILTIN, _REGISTERED, _page)


def _page(point: EntryPoint) -> Page:
    page = point.load()  # ``module:PAGE``
    if not (isinstance(page, Page) and page.name == point.name):
        raise ValueError(f"entry point {point.value!r} of {plugins.PAGES} is no Page named {point.name!r}")
    return page


def routes(site: Site) -> list[BaseRoute]:
    """Every group's routes, in :func:`loaded`'s order."""
    return [route for page in loaded() for route in page.routes(site)]


def navigation() -> tuple[Link, ...]:
    """The links of the navigation, in :func:`loaded`'s order."""
    return tuple(page.link for page in loaded() if page.link is not None)
