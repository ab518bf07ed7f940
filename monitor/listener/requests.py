"""A request as its bytes arrive on a non-blocking socket: the head, then the body its headers announce.

The listener's one watching thread feeds each connection's bytes to its :class:`Incoming`; a worker
only ever sees a whole request, so a client that sends slowly holds a descriptor until its deadline,
never a thread. A body is framed by ``Content-Length`` or sent chunked (a job may POST its output with a
ping). With a ``Content-Length`` of up to ``MAX_PING_UPLOAD`` it is read through and only its last
``MAX_PING_BODY`` bytes are kept (where a failing script's error is); a chunked one is at most
``MAX_PING_BODY`` bytes.
"""

from __future__ import annotations

MAX_HEAD = 8192  # bytes of request line and headers; /metrics and /healthz need far fewer
MAX_PING_BODY = 10_000  # bytes of a ping's body (a job's output) kept: the tail
MAX_PING_UPLOAD = 1 << 20  # bytes of output a job may POST with a ping (Content-Length); more is refused
MAX_CHUNKED = MAX_PING_BODY + 4096  # the same body sent chunked, with room for the chunks' size lines


class Refused(Exception):
    """A request answered by the listener itself: ``status`` and a one-line ``reason``."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


class Incoming:
    """One connection's request so far; ``feed`` says when it is whole, or raises :class:`Refused`."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline  # monotonic time by which the whole request must have arrived
        self.data = b""
        self.head: bytes | None = None
        self.body = b""
        self._length: int | None = None  # the Content-Length; None while the body comes chunked
        self._dropped = 0  # bytes of a long body let go (only its tail is kept)

    @property
    def path(self) -> str:
        """The request's path, without its query."""
        parts = (self.head or b"").split(b"\r\n", 1)[0].split(b"\n", 1)[0].split()
        return parts[1].decode("latin-1").split("?")[0] if len(parts) >= 2 else ""

    def feed(self, data: bytes) -> bool:
        """Take bytes that arrived; True once the head and the whole body are here."""
        self.data += data
        if self.head is None and not self._take_head():
            return False
        if self._length is not None:
            if self._dropped + len(self.data) >= self._length:
                self.body = self.data[: self._length - self._dropped][-MAX_PING_BODY:]
                return True
            if len(self.data) > MAX_PING_BODY:  # a long output: its head goes, as it arrives
                cut = len(self.data) - MAX_PING_BODY
                self._dropped, self.data = self._dropped + cut, self.data[cut:]
            return False
        body = dechunk(self.data)
        if body is None:
            return False
        self.body = body
        return True

    def _take_head(self) -> bool:
        end, gap = self.data.find(b"\r\n\r\n"), 4
        if end < 0:
            end, gap = self.data.find(b"\n\n"), 2
        if end < 0:
            if len(self.data) >= MAX_HEAD:
                raise Refused(431, f"the request line and headers are at most {MAX_HEAD} bytes")
            return False
        self.head, self.data = self.data[: end + gap], self.data[end + gap :]
        self._length = body_length(header_values(self.head))
        return True


def header_values(head: bytes) -> dict[str, str]:
    """The head's headers by lower-case name (the last of a repeated one)."""
    found = {}
    for line in head.decode("latin-1").splitlines()[1:]:
        name, colon, value = line.partition(":")
        if colon:
            found[name.strip().lower()] = value.strip()
    return found


def body_length(headers: dict[str, str]) -> int | None:
    """How many body bytes follow the head; None for a chunked body."""
    coding = headers.get("transfer-encoding")
    if coding is not None:
        if coding.lower() != "chunked":
            raise Refused(411, f"send a Content-Length or a chunked body, not {coding!r}")
        return None
    text = headers.get("content-length", "0")
    if not text.isdigit():
        raise Refused(400, f"Content-Length {text!r} is not a number of bytes")
    if int(text) > MAX_PING_UPLOAD:
        raise Refused(413, f"a ping's body is at most {MAX_PING_UPLOAD} bytes (its last {MAX_PING_BODY} are kept)")
    return int(text)


def dechunk(raw: bytes) -> bytes | None:
    """The body of a chunked ``raw``; None while more of it is to come."""
    if len(raw) > MAX_CHUNKED:
        raise Refused(413, f"a ping's body is at most {MAX_PING_BODY} bytes")
    body, at = b"", 0
    while (eol := raw.find(b"\r\n", at)) >= 0:
        size = chunk_size(raw[at:eol])
        if len(body) + size > MAX_PING_BODY:
            raise Refused(413, f"a ping's body is at most {MAX_PING_BODY} bytes")
        if size == 0:  # the last chunk; then trailers (ignored) and a blank line
            return body if raw.startswith(b"\r\n", eol + 2) or raw.find(b"\r\n\r\n", eol) >= 0 else None
        start, end = eol + 2, eol + 2 + size
        if len(raw) < end + 2:
            return None
        if raw[end : end + 2] != b"\r\n":
            raise Refused(400, "a chunk is longer than its size line says")
        body, at = body + raw[start:end], end + 2
    return None


def chunk_size(line: bytes) -> int:
    text = line.split(b";", 1)[0].strip()
    if not text or any(c not in b"0123456789abcdefABCDEF" for c in text):
        raise Refused(400, f"{text[:20]!r} is not a chunk size")
    return int(text, 16)
