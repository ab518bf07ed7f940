"""``/status/{slug}``, the public status pages, and ``/status/`` listing them (``/`` too, on their own
listener). They have no forms, no scripts and no links into the admin UI; a page's logo is the one
thing they load from elsewhere, and their Content-Security-Policy allows its origin and no other."""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from monitor.web.site import Page, Site
from monitor.web.status import StatusPages

CACHE = "public, max-age=30"


def routes(site: Site, *, alone: bool = False) -> list[BaseRoute]:
    """The status pages' routes; ``alone`` (their own listener) adds ``/``, the list of pages."""
    view = Status(site)
    index = [Route("/status", view.index), Route("/status/", view.index)] + ([Route("/", view.index)] if alone else [])
    return [*index, Route("/status/{slug}", view.page)]


def csp(logo: str | None) -> str:
    """The status pages' policy: nothing but their own stylesheet, and the logo's origin for images."""
    images = "'self' data:"
    if logo:
        parts = urlsplit(logo)
        images += f" {parts.scheme}://{parts.netloc}"
    return f"default-src 'none'; style-src 'self'; img-src {images}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"


class Status:
    def __init__(self, site: Site) -> None:
        self.site = site
        self.pages = StatusPages(site.pages, clock=site.clock)

    def index(self, request: Request) -> Response:
        response = self.site.render("status_index.html", title="Status", listed=self.pages.listed())
        response.headers["content-security-policy"] = csp(None)
        return response

    def page(self, request: Request) -> Response:
        data = self.pages.page(request.path_params["slug"])
        if data is None:
            response: Response = self.site.render(
                "status_error.html", 404, title="Not found", message="There is no status page at this address."
            )
            response.headers["content-security-policy"] = csp(None)
            return response
        response = self.site.render("status.html", title=data["page"].title, **data)
        response.headers["content-security-policy"] = csp(data["page"].logo)
        response.headers["cache-control"] = CACHE
        return response


PAGE = Page("status", routes)  # its monitor.pages entry point (pyproject.toml)
