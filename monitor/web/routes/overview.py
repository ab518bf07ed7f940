"""``/?page=&q=``: a page of targets, problems first, with state, uptime and recent latency by phase,
open incidents on top; it refreshes itself from ``/fragments/overview`` (same parameters)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from monitor.web import charts, params
from monitor.web.site import Page, Site, View


def routes(site: Site) -> list[BaseRoute]:
    view = Overview(site)
    return [Route("/", view.page), Route("/fragments/overview", view.fragment)]


def page_numbers(page: int, pages: int) -> list[int]:
    """The pages a pager links: the first, the last, and two either side of this one."""
    return sorted({1, pages, *range(max(1, page - 2), min(pages, page + 2) + 1)})


def overview_query(page: int, q: str) -> str:
    """``?page=N&q=TEXT`` for a page of the overview, leaving out the defaults (page 1, no filter)."""
    values = {name: value for name, value in (("page", page if page > 1 else ""), ("q", q)) if value}
    return f"?{urlencode(values)}" if values else ""


class Overview(View):
    def data(self, request: Request) -> dict[str, Any]:
        data = self.site.pages.overview(page=params.page(request), q=params.name_filter(request))
        for row in data["targets"]:
            row["chart"] = charts.phase_bars(row["recent"])
        data["query"] = overview_query(data["page"], data["q"])
        data["page_links"] = {n: "/" + overview_query(n, data["q"]) for n in page_numbers(data["page"], data["pages"])}
        return data

    def page(self, request: Request) -> Response:
        return self.site.render("overview.html", title="Overview", **self.data(request))

    def fragment(self, request: Request) -> Response:
        return self.site.render("_overview_live.html", **self.data(request))


PAGE = Page("overview", routes, link=("/", "Overview"))  # its monitor.pages entry point (pyproject.toml)
