"""The MCP server over streamable HTTP, behind the web token.

Every request must carry ``Authorization: Bearer <web.token>`` (compared in constant time, as the web UI compares
the token of an action); one without it is answered 401 and never reaches the server. A request naming a host the
server is not known by is answered 421 (:class:`monitor.web.origin.HostCheck`: DNS rebinding), as by the web UI.
The listener bounds its connections and their read time as the web UI's does (:mod:`monitor.web.guard`), and each
token's requests in flight and each body's size and elements (:mod:`monitor.mcp.bounds`).
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from monitor.config import WebConfig
from monitor.mcp.bounds import Bounded
from monitor.web.guard import Guard, guarded_protocol
from monitor.web.origin import HostCheck

PATH = "/mcp"


class BearerToken:
    """Answers 401 to a request without ``Authorization: Bearer <token>``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.holds(dict(scope["headers"]).get(b"authorization", b"")):
            refusal = JSONResponse(
                {"error": "this MCP endpoint answers only with the web token: Authorization: Bearer <web.token>"},
                status_code=401,
                headers={"www-authenticate": 'Bearer realm="monitor"'},
            )
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def holds(self, header: bytes) -> bool:
        scheme, _, given = header.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token)


def http_app(server: MCPServer, token: str, web: WebConfig) -> ASGIApp:
    """The server's streamable HTTP endpoint at :data:`PATH`, behind ``token``, known by ``web``'s names
    (``web.listen`` set to where it listens). Stateless: each request stands alone, and answers in JSON."""
    app = server.streamable_http_app(
        streamable_http_path=PATH,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),  # HostCheck's, below
    )
    return HostCheck(BearerToken(Bounded(app), token), lambda: web)


def serve(app: ASGIApp, host: str, port: int, *, ready: Callable[[str], None] | None = None) -> None:
    """Serve in the foreground until SIGINT or SIGTERM; ``ready`` is told the endpoint's URL once it listens."""
    import socket

    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    config = uvicorn.Config(app, log_level="warning", access_log=False, server_header=False, http=guarded_protocol(Guard()))
    server = uvicorn.Server(config)
    if ready is not None:
        bound_host, bound_port = sock.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        ready(f"http://{shown}:{bound_port}{PATH}")
    server.run(sockets=[sock])
