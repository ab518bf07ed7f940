"""``/runs`` (the agent's runs) and ``/runs/{id}`` (one replayed step by step)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from monitor.web import params
from monitor.web.site import Page, Site, View


def routes(site: Site) -> list[BaseRoute]:
    view = Runs(site)
    return [Route("/runs", view.index), Route("/runs/{id:int}", view.run)]


class Runs(View):
    def index(self, request: Request) -> Response:
        limit = params.limit(request)
        rows = self.site.reader.runs.runs_page(limit=limit, before=params.int_param(request, "before"))
        return self.site.render("runs.html", title="Agent runs", runs=rows, more=params.next_page(request, rows, limit, params.by_id))

    def run(self, request: Request) -> Response:
        data = self.site.pages.run(request.path_params["id"])
        if data is None:
            return self.site.not_found(f"Agent run #{request.path_params['id']}")
        return self.site.render("run.html", title=f"Agent run #{data['run'].id}", **data)


PAGE = Page("runs", routes, link=("/runs", "Agent runs"))  # its monitor.pages entry point (pyproject.toml)
