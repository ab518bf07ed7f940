"""The JSON API under ``/api/v1/``: the same data as the pages (see README)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from monitor.core.claims import Claim
from monitor.core.results import StoredResult
from monitor.web import params
from monitor.web.pages import PER_PAGE, WINDOWS
from monitor.web.site import Page, Site, json_response


def routes(site: Site) -> list[BaseRoute]:
    api = Api(site)
    return [
        Route("/api/v1/targets", api.targets),
        Route("/api/v1/targets/{name:path}/results", api.results),
        Route("/api/v1/targets/{name:path}", api.target),
        Route("/api/v1/incidents", api.incidents),
        Route("/api/v1/incidents/{id:int}", api.incident),
        Route("/api/v1/runs", api.runs),
        Route("/api/v1/runs/{id:int}", api.run),
        Route("/api/v1/memory", api.memory),
        Route("/api/v1/memory/samples", api.memory_samples),
    ]


def result_json(result: StoredResult) -> dict[str, Any]:
    """A stored result as the API shows it: its row, its phases an object (None: none)."""
    return {**result.to_json(), "phases": result.phase_times() or None}


def target_json(row: dict[str, Any]) -> dict[str, Any]:
    latest: StoredResult | None = row["latest"]
    return {
        "name": row["name"],
        "state": row["state"],
        "config": row["config"],
        "last_check": latest.checked_at if latest else None,
        "latest": result_json(latest) if latest else None,
        "uptime": {window: uptime.to_json() for window, uptime in row["uptime"].items()},
    }


class Api:
    def __init__(self, site: Site) -> None:
        self.site = site
        self.store, self.pages = site.reader, site.pages

    def targets(self, request: Request) -> Response:
        data = self.pages.fleet(page=params.page(request), per_page=params.limit(request, PER_PAGE), q=params.name_filter(request))
        following = None
        if data["page"] < data["pages"]:
            following = f"{request.url.path}?{urlencode({**request.query_params, 'page': str(data['page'] + 1)})}"
        return json_response(
            {
                "items": [target_json(row) for row in data["targets"]],
                "next": following,
                **{k: data[k] for k in ("page", "pages", "total", "matched", "counts")},
            }
        )

    def target(self, request: Request) -> Response:
        name = request.path_params["name"]
        if not self.pages.known(name):
            return json_response({"error": f"no target {name!r}"}, 404)
        return json_response(
            {
                **target_json(self.pages.target_row(name, self.site.clock())),
                "open_incidents": [i.to_json() for i in self.store.incidents.open_incidents(name)],
            }
        )

    def results(self, request: Request) -> Response:
        name = request.path_params["name"]
        if not self.pages.known(name):
            return json_response({"error": f"no target {name!r}"}, 404)
        limit = params.limit(request)
        page = self.store.results.results_page(name, limit=limit, before=params.results_cursor(request))
        rows = [result_json(r) for r in page]
        return json_response({"items": rows, "next": params.next_page(request, page, limit, params.result_cursor)})

    def incidents(self, request: Request) -> Response:
        limit = params.limit(request)
        page = self.store.incidents.incidents_page(
            target=request.query_params.get("target") or None,
            status=request.query_params.get("status") or None,
            limit=limit,
            before=params.int_param(request, "before"),
        )
        rows = [incident.to_json() for incident in page]
        return json_response({"items": rows, "next": params.next_page(request, rows, limit, params.by_id)})

    def incident(self, request: Request) -> Response:
        data = self.pages.incident(request.path_params["id"])
        if data is None:
            return json_response({"error": f"no incident #{request.path_params['id']}"}, 404)
        return json_response(
            {
                **data["incident"].to_json(),
                "claim": said.to_dict() if (said := Claim.from_json(data["incident"].claim)) else {},
                "suggested": [s.to_dict() for s in data["suggested"]],
                "links": data["links"],
                "timeline": data["timeline"],
                "notifications": data["notifications"],
                "runs": [run.to_json() for run in data["runs"]],
                "recalled": [i.id for i in data["recalled"]],
                "actions": [action.to_json() for action in data["actions"]],
            }
        )

    def runs(self, request: Request) -> Response:
        limit = params.limit(request)
        rows = self.store.runs.runs_page(
            limit=limit, before=params.int_param(request, "before"), incident_id=params.int_param(request, "incident")
        )
        return json_response({"items": [run.to_json() for run in rows], "next": params.next_page(request, rows, limit, params.by_id)})

    def run(self, request: Request) -> Response:
        data = self.pages.run(request.path_params["id"])
        if data is None:
            return json_response({"error": f"no agent run #{request.path_params['id']}"}, 404)
        steps = [{k: v for k, v in s.items() if k != "tool_calls"} for s in data["steps"]]
        recalled = [i.id for i in data["recalled"]]
        return json_response({**data["run"].to_json(), "recall": data["recall"], "recalled": recalled, "steps": steps})

    def memory(self, request: Request) -> Response:
        data = self.pages.memory()
        return json_response(
            {
                **data["report"],
                "summaries": data["summaries"],
                "incidents_by_target_pattern": [count.to_json() for count in data["counts"]],
                "resolution_notes": [note.to_json() for note in data["notes"]],
            }
        )

    def memory_samples(self, request: Request) -> Response:
        window = params.window(request, "7d")
        samples = self.store.memory.memory_samples(self.site.clock() - WINDOWS[window])
        return json_response({"window": window, "items": [sample.to_json() for sample in samples]})


PAGE = Page("api", routes)  # its monitor.pages entry point (pyproject.toml)
