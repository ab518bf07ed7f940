"""The HTTP client receivers post with: a deadline for each delivery as a whole, and an answer read no further than
``ANSWER_BYTES``.

httpx's timeouts bound each read and write, not a request: a receiver answering 200 with a chunk every tenth of
a second held its sender for as long as it went on, and a body read whole grew the daemon by its size (200 MB
answers took it past a gigabyte). Here every socket operation of a delivery waits no longer than what is left
of its ``deadline`` (connect, TLS, the request, the status line and headers included), and :func:`post` reads
at most ``ANSWER_BYTES`` of the answer's body, then closes the connection: what a receiver says past its status
line changes nothing.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

from monitor.core import urls

DEADLINE = 10.0  # seconds one delivery may take, from connecting to the last byte read
TIMEOUT = 5.0  # seconds one connect, read or write may take
ANSWER_BYTES = 64 << 10  # of a receiver's answer read, at most; the rest is dropped unread

_ends: ContextVar[float | None] = ContextVar("monitor_delivery_ends", default=None)


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Every socket operation of the client's requests in this block ends by ``seconds`` from now."""
    token = _ends.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _ends.reset(token)


def _left(timeout: float | None) -> float | None:
    """``timeout``, cut to what is left of the deadline (never 0, which would make the socket non-blocking)."""
    ends = _ends.get()
    if ends is None:
        return timeout
    left = max(0.001, ends - time.monotonic())
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> httpcore.NetworkStream:
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    """httpcore's own sync backend, each operation cut to the delivery's deadline."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        """A connection to the first of ``host``'s addresses that answers; the name's lookup, too, ends by the
        deadline (a resolver that hangs would otherwise hold the delivery for as long as it does)."""
        failed: Exception | None = None
        for address in _addresses(host, port, _left(timeout)):
            try:
                return _Stream(self._backend.connect_tcp(address, port, _left(timeout), local_address, socket_options))
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failed = exc
        raise failed or httpcore.ConnectError(f"{host} has no address")

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        return _Stream(self._backend.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


_RESOLVER = ThreadPoolExecutor(max_workers=4, thread_name_prefix="monitor-resolve")


def _addresses(host: str, port: int, timeout: float | None) -> list[str]:
    """``host``'s addresses, looked up within ``timeout`` (an address is its own)."""
    with contextlib.suppress(ValueError):
        return [str(ipaddress.ip_address(host.strip("[]")))]
    lookup = _RESOLVER.submit(socket.getaddrinfo, host, port, type=socket.SOCK_STREAM)
    try:
        found = lookup.result(timeout=timeout)
    except FutureTimeout:
        raise httpcore.ConnectTimeout(f"looking up {host} took longer than the delivery may") from None
    except OSError as exc:
        raise httpcore.ConnectError(f"cannot look up {host}: {exc}") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in found))


class _Transport(httpx.HTTPTransport):
    """httpx's transport (no proxy from the environment), on :class:`_Backend`."""

    def __init__(self) -> None:
        super().__init__(trust_env=False)
        limits = httpx.Limits()
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_Backend(),
        )


def delivery_client() -> httpx.Client:
    """A client whose requests inside :func:`within` end by its deadline."""
    return httpx.Client(timeout=TIMEOUT, trust_env=False, transport=_Transport())


def post(
    client: httpx.Client,
    url: str,
    body: Any,
    headers: dict[str, str] | None = None,
    *,
    deadline: float = DEADLINE,
    method: str = "POST",
    content: str | None = None,
) -> str | None:
    """POST JSON (or send ``content`` as it is, with ``method``) within ``deadline``, reading at most
    ``ANSWER_BYTES`` of the answer; the error (with no secret of the URL in it), if it failed. The status line
    decides: a 2xx whose body is cut short was delivered."""
    sent: dict[str, Any] = {"json": body} if content is None else {"content": content.encode()}
    try:
        with within(deadline), client.stream(method, url, headers=headers or {}, **sent) as response:
            _read_some(response)
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__}: {urls.redact_text(str(exc))}"
    return None if response.is_success else f"HTTP {response.status_code}"


def _read_some(response: httpx.Response) -> None:
    """Up to ``ANSWER_BYTES`` of the body, so that a short answer leaves its connection fit to be used again."""
    read = 0
    with contextlib.suppress(httpx.TransportError):  # the deadline came mid-body: the status was the answer
        for chunk in response.iter_raw():
            read += len(chunk)
            if read >= ANSWER_BYTES:
                break
