"""``/memory``: working and long-term memory, and memory size over time."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from monitor.web import charts, params
from monitor.web.pages import WINDOWS
from monitor.web.site import Page, Site, View


def routes(site: Site) -> list[BaseRoute]:
    return [Route("/memory", Memory(site).page)]


class Memory(View):
    def page(self, request: Request) -> Response:
        data = self.site.pages.memory(window=params.window(request, "7d"))
        samples = data["samples"]
        return self.site.render(
            "memory.html",
            title="Memory",
            windows=list(WINDOWS),
            working_chart=charts.size_chart(samples, "bytes", "working memory, bytes"),
            db_chart=charts.size_chart(samples, "db_bytes", "database, bytes"),
            **data,
        )


PAGE = Page("memory", routes, link=("/memory", "Memory"))  # its monitor.pages entry point (pyproject.toml)
