"""``/targets/{name}`` (check history chart, the last results, the target's incidents) and its badges,
``/badges/{name}/status.svg``, ``uptime.svg`` and ``latency.svg``."""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from monitor.web import charts, params
from monitor.web.pages import WINDOWS
from monitor.web.site import Page, Site, View, ms, pct

BADGE_CACHE = "public, max-age=60"
BADGES = ("status", "uptime", "latency")


def routes(site: Site) -> list[BaseRoute]:
    view = Targets(site)
    return [Route("/targets/{name:path}", view.target), Route("/badges/{name:path}/{kind:str}.svg", view.badge)]


class Targets(View):
    def target(self, request: Request) -> Response:
        name, site = request.path_params["name"], self.site
        if not site.pages.known(name):
            return site.not_found(f"Target {name!r}")
        limit, window = params.limit(request), params.window(request, "24h")
        data = site.pages.target(name, window=window, limit=limit, before=params.results_cursor(request))
        chart = charts.history_chart(data["buckets"], data["since"], data["now"], data["slices"], data["window_incidents"])
        last = data["results"][-1] if data["results"] else None
        older = f"?{urlencode({'window': window, 'limit': limit, 'before': params.result_cursor(last)})}" if data["more"] and last else None
        return site.render("target.html", title=name, chart=chart, older=older, windows=list(WINDOWS), **data)

    def badge(self, request: Request) -> Response:
        name, kind = request.path_params["name"], request.path_params["kind"]
        if kind not in BADGES:
            return Response("badges: status.svg, uptime.svg, latency.svg", status_code=404)
        if not self.site.pages.known(name):
            return Response(
                charts.badge(name, "not found", charts.STATE_COLOURS["unknown"]),
                status_code=404,
                media_type="image/svg+xml",
                headers={"cache-control": "no-cache"},
            )
        window = params.window(request, "24h")
        read = {"status": self._status, "uptime": self._uptime, "latency": self._latency}[kind]
        label, value, colour = read(name, window, self.site.clock())
        return Response(charts.badge(label, value, colour), media_type="image/svg+xml", headers={"cache-control": BADGE_CACHE})

    def _status(self, name: str, window: str, now: float) -> tuple[str, str, str]:
        state = self.site.pages.target_row(name, now)["state"]
        return name, state, charts.STATE_COLOURS[state]

    def _uptime(self, name: str, window: str, now: float) -> tuple[str, str, str]:
        ratio = self.site.reader.results.uptime(name, {window: WINDOWS[window]}, now)[window].ratio
        state = "unknown" if ratio is None else "up" if ratio >= 0.99 else "warning" if ratio >= 0.95 else "down"
        return f"uptime {window}", pct(ratio), charts.STATE_COLOURS[state]

    def _latency(self, name: str, window: str, now: float) -> tuple[str, str, str]:
        buckets = self.site.reader.results.latency_buckets(name, now - WINDOWS[window], now, 1)
        mean = buckets[0].mean_ms if buckets else None
        state = "unknown" if mean is None else "up" if mean < 500 else "warning" if mean < 2000 else "down"
        return f"latency {window}", ms(mean), charts.STATE_COLOURS[state]


PAGE = Page("targets", routes)  # its monitor.pages entry point (pyproject.toml)
