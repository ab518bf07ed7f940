"""The web UI's routes, one module per group of pages; each has ``routes(site)``.

A new page is a module here with its ``routes`` and a template, and one line in :data:`GROUPS`.
"""

from __future__ import annotations

from starlette.routing import BaseRoute

from monitor.web.routes import api, incidents, maintenance, memory, overview, runs, status, targets
from monitor.web.site import Site

GROUPS = (overview, targets, incidents, runs, memory, maintenance, api, status)


def routes(site: Site) -> list[BaseRoute]:
    return [route for group in GROUPS for route in group.routes(site)]
