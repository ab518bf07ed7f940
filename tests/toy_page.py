"""A toy web page, as a new page is added: one module with its routes, its template and its link, registered.

``/fleet`` counts the configured targets by their state now, read through the same page data as the overview;
``/api/v1/fleet`` is its JSON twin. It only reads.
"""

from __future__ import annotations

from collections import Counter

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from monitor.web import routes as web_routes
from monitor.web.site import Site, json_response

TEMPLATE = """{% extends "base.html" %}
{% block main %}
<h1>Fleet</h1>
<table class="list"><tbody>
{% for state, count in states %}<tr><td>{{ state }}</td><td>{{ count }}</td></tr>{% endfor %}
</tbody></table>
{% endblock %}
"""


def states(site: Site) -> list[tuple[str, int]]:
    """How many configured targets are in each state (as the overview says it), most first, then by name."""
    pages, now = site.pages, site.clock()
    counted = Counter(str(pages.state(name, site.reader.results.latest_result(name), now)) for name in pages.target_names())
    return sorted(counted.items(), key=lambda item: (-item[1], item[0]))


def routes(site: Site) -> list[BaseRoute]:
    template = site.env.from_string(TEMPLATE)

    def page(request: Request) -> Response:
        return site.render(template, title="Fleet", states=states(site))

    def api(request: Request) -> Response:
        return json_response({"states": dict(states(site))})

    return [Route("/fleet", page), Route("/api/v1/fleet", api)]


PAGE = web_routes.register(web_routes.Page("fleet", routes, link=("/fleet", "Fleet")))
