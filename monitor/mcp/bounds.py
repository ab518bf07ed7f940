"""Bounds on what one MCP request over HTTP may cost, before the SDK builds anything from it.

The SDK reads a body of up to 4 MiB and parses it whole: 4 MiB of ``[{},{},...]`` is a million objects, and two
dozen such requests at once hold gigabytes. :class:`Bounded` (behind the token, so every request it sees carries it)
answers 503 at once to a token's request past :data:`MAX_IN_FLIGHT` of its requests in flight, and 413 to a body
past :data:`MAX_BODY` bytes, or whose JSON holds more than :data:`MAX_ELEMENTS` elements or nests deeper than
:data:`MAX_DEPTH`: counted on the bytes, strings skipped, before any of it is decoded into objects.
"""

from __future__ import annotations

import re
from collections import Counter

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_IN_FLIGHT = 4  # requests of one token answered at once; a tool call takes its turn on the store anyway
MAX_BODY = 1024 * 1024  # bytes: a tool call's arguments are a few names and numbers, a note of 1,000 characters
MAX_ELEMENTS = 10_000  # objects, arrays and the commas between their members
MAX_DEPTH = 64
TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[{\]},]')  # a string whole, or one structural character


class TooLarge(Exception):
    """A body past the bounds: the 413's reason."""


class Bounded:
    """Refuses a request past its token's share of the server, or a body too large to decode, before the SDK has it."""

    def __init__(self, app: ASGIApp, *, max_in_flight: int = MAX_IN_FLIGHT) -> None:
        self.app, self.max_in_flight = app, max_in_flight
        self.in_flight: Counter[bytes] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        token = dict(scope["headers"]).get(b"authorization", b"")
        if self.in_flight[token] >= self.max_in_flight:
            busy = {"error": f"at most {self.max_in_flight} requests of one token at once: try again"}
            await JSONResponse(busy, status_code=503, headers={"retry-after": "1"})(scope, receive, send)
            return
        self.in_flight[token] += 1
        try:
            await self.checked(scope, receive, send)
        finally:
            self.in_flight[token] -= 1

    async def checked(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            body = await read_body(scope, receive)
            counted(body)
        except TooLarge as exc:
            await JSONResponse({"error": str(exc)}, status_code=413)(scope, receive, send)
            return
        await self.app(scope, replay(body, receive), send)


async def read_body(scope: Scope, receive: Receive, *, limit: int = MAX_BODY) -> bytes:
    """The request's body, read whole; :class:`TooLarge` as soon as it says or shows more than ``limit`` bytes."""
    declared = dict(scope["headers"]).get(b"content-length", b"0")
    if not declared.isdigit() or len(declared) > 12 or int(declared) > limit:
        raise TooLarge(f"a request's body is at most {limit:,} bytes")
    chunks, size, more = [], 0, True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > limit:
            raise TooLarge(f"a request's body is at most {limit:,} bytes")
        more = message.get("more_body", False)
    return b"".join(chunks)


def counted(body: bytes, *, max_elements: int = MAX_ELEMENTS, max_depth: int = MAX_DEPTH) -> int:
    """The elements ``body``'s JSON holds, counted without decoding it; :class:`TooLarge` past either bound."""
    elements = depth = 0
    for found in TOKENS.finditer(body):
        mark = found.group()[:1]
        if mark == b'"':
            continue
        if mark in (b"]", b"}"):
            depth -= 1
            continue
        elements += 1
        depth += mark != b","
        if elements > max_elements or depth > max_depth:
            raise TooLarge(f"a request's JSON holds at most {max_elements:,} elements, nested at most {max_depth} deep")
    return elements


def replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives ``body`` once, whole, then whatever the client sends next (its disconnect)."""
    given = False

    async def again() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again
