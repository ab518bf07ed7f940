"""``/maintenance`` and ``/api/v1/maintenance``: the maintenance windows of the config in force, one-off and
recurring, each with the window in force now or the next one (a year ahead at most), or "over"."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from monitor.config.maintenance import Maintenance, described
from monitor.web.site import Page, Site, View, json_response

AHEAD = 366 * 86400.0  # how far ahead the next window is looked for


def routes(site: Site) -> list[BaseRoute]:
    view = Windows(site)
    return [Route("/maintenance", view.page), Route("/api/v1/maintenance", view.api)]


def window_json(window: Maintenance, now: float) -> dict[str, Any]:
    """A window as the UI shows it: what it covers, when, and its occurrence in force or next (or neither)."""
    coming = window.occurrences(now, now + AHEAD)
    active = next(((start, end) for start, end in coming if start <= now < end), None)
    upcoming = next(((start, end) for start, end in coming if start > now), None)
    return {
        "targets": window.targets,
        "reason": window.reason,
        "recurring": window.recurring,
        "rule": described(window),
        "rrule": window.rrule,
        "timezone": window.timezone,
        "duration": window.duration,
        "active": None if active is None else {"start": active[0], "end": active[1]},
        "next": None if upcoming is None else {"start": upcoming[0], "end": upcoming[1]},
    }


class Windows(View):
    def _windows(self) -> list[dict[str, Any]]:
        now = self.site.clock()
        return [window_json(window, now) for window in self.site.pages.config.maintenance]

    def page(self, request: Request) -> Response:
        return self.site.render("maintenance.html", title="Maintenance", windows=self._windows())

    def api(self, request: Request) -> Response:
        return json_response({"items": self._windows(), "next": None})


PAGE = Page("maintenance", routes, link=("/maintenance", "Maintenance"))  # its monitor.pages entry point (pyproject.toml)
