"""Bounds on the web UI's listener: how many connections it holds, and how long a request may take to arrive.

uvicorn holds every connection it accepts, and a request whose head drips in a line at a time resets its
keep-alive timer: a thousand such clients use up the daemon's descriptors, and then its checks fail.
:func:`guarded_protocol` gives uvicorn an HTTP protocol (h11's) that closes a connection whose request has
not arrived whole ``read_timeout`` seconds after it opened (or after its last answer), and that, at
``max_connections``, closes the oldest connection still sending to make room, or refuses the new one when
every connection is being answered. Each close is counted, and summed up in the log once a minute.
"""

from __future__ import annotations

import asyncio
import logging

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from monitor.listener.refusals import Refusals

log = logging.getLogger("monitor.web")

MAX_CONNECTIONS = 100  # well below systemd's default 1,024 descriptors, and the unit raises that
READ_TIMEOUT = 10.0  # seconds for a request's head and body to arrive


class Guard:
    """The connections of one listener, oldest first, and its bounds."""

    def __init__(self, *, max_connections: int = MAX_CONNECTIONS, read_timeout: float = READ_TIMEOUT) -> None:
        self.max_connections, self.read_timeout = max_connections, read_timeout
        self.open: dict[GuardedProtocol, None] = {}  # insertion order: oldest first
        self.refusals = Refusals("the web listener", log=log)

    def make_room(self) -> bool:
        """Close the oldest connection whose request is still arriving; False when none is."""
        for protocol in self.open:
            if protocol.waiting():
                protocol.close("closed to make room for a newer connection")
                return True
        return False


class GuardedProtocol(H11Protocol):
    """uvicorn's h11 protocol, with a read deadline and a connection cap from ``guard``."""

    guard: Guard
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.guard.open) >= self.guard.max_connections and not self.guard.make_room():
            self.guard.refusals.note("refused: every connection is being answered")
            transport.abort()
            return
        self.guard.open[self] = None
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.open.pop(self, None)
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()  # the next request on this connection has as long as the first

    def waiting(self) -> bool:
        """True while the request is still arriving (or none has begun): not yet the app's to answer."""
        return self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing()

    def close(self, reason: str) -> None:
        self.guard.refusals.note(reason)
        self.transport.abort()

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.guard.read_timeout, self._expire)

    def _expire(self) -> None:
        if self.waiting():
            self.close("sent no whole request in time")


def guarded_protocol(guard: Guard) -> type[GuardedProtocol]:
    """A protocol class for ``uvicorn.Config(http=...)`` whose connections ``guard`` bounds."""
    return type("GuardedProtocol", (GuardedProtocol,), {"guard": guard})
