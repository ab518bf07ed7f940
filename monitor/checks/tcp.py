"""The tcp check kind: a port that accepts a connection, and, with ``tcp.expect``, answers as expected.

Error kinds (besides those of :mod:`monitor.checks.probing`)::

    tcp_refused             nothing listens on the port
    tcp_timeout             no connection, or no matching reply, within the timeout
    tcp_unexpected_reply    the peer closed, or sent ``max_reply`` bytes, without a reply matching ``tcp.expect``
"""

from __future__ import annotations

import asyncio
import re

from monitor import config
from monitor.checks import network, probing
from monitor.checks.probing import Found, Probe
from monitor.config import Target
from monitor.core import errors, kinds
from monitor.core.results import OK, Result

EXCERPT_BYTES = 300
SEARCH_EACH_CHUNK = 1024  # bytes of a tcp reply searched again after every chunk; past them, as it grows by an eighth
SEARCH_IDLE = 0.05  # seconds a peer may pause before the bytes it sent are searched


def _rename(kind: str, detail: str) -> tuple[str, str]:
    return (errors.TCP_REFUSED if kind == errors.REFUSED else kind), detail


SPEC = probing.Spec(("dns", "connect", "reply"), "connection and reply", errors.TCP_TIMEOUT, _rename)


async def _tcp(target: Target, state: Probe, dialer: network.Dialer) -> Result:
    settings = target.tcp or config.TcpSettings()
    reader, writer = await probing.connect(target, state, "tcp", dialer)
    try:
        if settings.send is not None:
            writer.write(settings.send.encode())
            await writer.drain()
        if settings.expect is None:
            return state.result(OK, None, "connected")
        reply = await state.timed("reply", read_until(reader, re.compile(settings.expect), settings.max_reply))
        return state.result(OK, None, f"connected; the reply matches {settings.expect!r} ({len(reply)} bytes)")
    finally:
        await probing.close(writer)


async def read_until(reader: asyncio.StreamReader, pattern: re.Pattern[str], limit: int) -> bytes:
    """The reply, read until it matches ``pattern`` (at most ``limit`` bytes).

    Searching the whole reply after every chunk costs O(n²) against a peer that writes a byte at a time
    (64 KiB: two billion characters scanned). Past ``SEARCH_EACH_CHUNK`` bytes, the reply is searched when
    it has grown by an eighth, when the peer pauses for ``SEARCH_IDLE`` seconds, and at its end.
    """
    reply = bytearray()
    searched = 0

    def matches() -> bool:
        nonlocal searched
        searched = len(reply)
        return pattern.search(reply.decode("utf-8", "replace")) is not None

    while len(reply) < limit:
        wanted = reader.read(limit - len(reply))
        try:
            chunk = await (asyncio.wait_for(wanted, SEARCH_IDLE) if len(reply) > searched else wanted)
        except TimeoutError:  # the peer paused with bytes not yet searched
            if matches():
                return bytes(reply)
            continue
        if not chunk:
            if len(reply) > searched and matches():
                return bytes(reply)
            raise Found(
                errors.TCP_UNEXPECTED_REPLY,
                f"the peer closed the connection without a reply matching {pattern.pattern!r} ({len(reply)} bytes)",
                _shown(bytes(reply)),
            )
        reply += chunk
        if (len(reply) <= SEARCH_EACH_CHUNK or len(reply) - searched >= searched // 8) and matches():
            return bytes(reply)
    if len(reply) > searched and matches():
        return bytes(reply)
    raise Found(errors.TCP_UNEXPECTED_REPLY, f"no reply matching {pattern.pattern!r} in the first {limit} bytes", _shown(bytes(reply)))


def _shown(data: bytes) -> str:
    """A reply, as the excerpt may quote it: the target's bytes, bounded, never in ``detail``."""
    text = data[:EXCERPT_BYTES].decode("utf-8", "replace")
    more = f" [... {len(data) - EXCERPT_BYTES} more bytes]" if len(data) > EXCERPT_BYTES else ""
    return f"reply: {text!r}{more}"


Tcp = probing.prober(SPEC, _tcp)  # the tcp kind: keeps nothing between checks
KIND = kinds.declare(kinds.Kind("tcp", ("tcp",), host=network.host_of, probe=kinds.Probe("tcp://probe.invalid:1"), check=Tcp))
