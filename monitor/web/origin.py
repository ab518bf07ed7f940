"""Where a request comes from: the ``Host`` it names, the page that sent a form, and the CSRF token that
page was given.

A page on any site can send the browser to the UI, and a name rebound to 127.0.0.1 (DNS rebinding) lets
such a page read the answers. :class:`HostCheck` answers 421 to a request naming a host the UI is not
known by: ``localhost``, an IP address (a rebinding page cannot name one), the address in
``web.listen``, or a name in ``web.allowed_hosts`` (``"*"``: any). An action's form must come from the
UI's own pages (:func:`foreign`: ``Origin``, or else ``Referer``; neither is refused), and carry the CSRF
token of its page's cookie, which only this server can make (:func:`csrf_token`: a nonce and its HMAC
under a key drawn from ``web.token``, so every replica makes and accepts the same).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Callable
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from monitor.config.serving import WebConfig

LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain"})


def hostname(host: str) -> str:
    """The name in a ``Host`` header, lower case, without its port or brackets ('' if there is none)."""
    try:
        return (urlsplit(f"//{host}").hostname or "").rstrip(".")
    except ValueError:
        return ""


def allowed(host: str, web: WebConfig) -> bool:
    name = hostname(host)
    if not name:
        return False
    if name in LOCAL_NAMES:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        names = {n.lower().rstrip(".") for n in web.allowed_hosts} | {web.host.lower()}
        return "*" in names or name in names


class HostCheck:
    """Answers 421 to a request whose ``Host`` is not one the UI is known by (``web()``: the settings in force)."""

    def __init__(self, app: ASGIApp, web: Callable[[], WebConfig]) -> None:
        self.app, self.web = app, web

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if not allowed(host, self.web()):
                said = hostname(host)[:100] or "no host"
                answer = PlainTextResponse(
                    f"this web UI is not known as {said!r}: add the name to web.allowed_hosts to reach it by that name", status_code=421
                )
                await answer(scope, receive, send)
                return
        await self.app(scope, receive, send)


def foreign(request: Request) -> str | None:
    """Why a form did not come from the UI's own pages, or None: its ``Origin`` (or else ``Referer``) must be
    this scheme and host."""
    own = f"{request.url.scheme}://{request.headers.get('host', '')}"
    origin = request.headers.get("origin")
    if origin is None:
        referer = urlsplit(request.headers.get("referer", ""))
        if not referer.netloc:
            return "a request with neither Origin nor Referer is refused: send the form from the incident page"
        origin = f"{referer.scheme}://{referer.netloc}"
    if origin != own:
        return f"a request from another site is refused (Origin: {origin[:100]})"
    return None


def _key(token: str) -> bytes:
    return hashlib.sha256(b"monitor web csrf\0" + token.encode()).digest()


def csrf_token(token: str) -> str:
    """A new CSRF token: a nonce and its HMAC under ``web.token``'s key."""
    nonce = secrets.token_urlsafe(24)
    return f"{nonce}.{hmac.new(_key(token), nonce.encode(), hashlib.sha256).hexdigest()}"


def made_here(csrf: str, token: str) -> bool:
    """True when ``csrf`` is one :func:`csrf_token` made with this ``web.token``."""
    nonce, _, mac = csrf.partition(".")
    expected = hmac.new(_key(token), nonce.encode(), hashlib.sha256).hexdigest()
    return bool(nonce) and hmac.compare_digest(mac.encode(), expected.encode())
