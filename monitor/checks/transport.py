"""The network under httpcore: asyncio transports and protocols, with nothing in between, and a pool.

httpcore's default network backend goes through anyio, which opens a cancel scope for every read
and write and builds a dict of socket attributes each time httpcore asks whether an idle
connection is still usable. At thousands of checks a second that was about a third of a check's
CPU. This backend keeps each connection's incoming bytes in an :class:`asyncio.Protocol` and hands
them to httpcore as it reads.

:class:`TimedBackend` also times each check's phases (:class:`Timings`: dns, connect, tls, first byte,
body), resolving host names itself so that DNS and connect are timed apart.

Only connecting and the TLS handshake are bounded here; a read or a write is bounded by the
``asyncio.timeout`` every check runs under (see :meth:`monitor.checks.http.Http.check`). Failures
come out as httpcore's exceptions, with the OS or TLS error as their cause, as its own backends do.

:class:`Pool` keeps connections alive for the checks that follow, by origin. It does what a check
needs of httpcore's connection pool (keep-alive, a fresh connection when the peer closed one) and
no more: a check has one request in flight per worker, so nothing queues for a connection, and
nothing needs the locks and cancellation shields the general pool takes for each request.
"""

from __future__ import annotations

import asyncio
import contextvars
import select
import socket
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import httpcore
from httpcore import SOCKET_OPTION, AsyncHTTPConnection, AsyncNetworkBackend, AsyncNetworkStream, Origin, Request, Response

from monitor.checks import network
from monitor.core.results import PHASES


class _Connection(asyncio.Protocol):
    """The bytes a peer sent that nobody read yet, and whether it closed."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.closed = False
        self.error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed, self.error = True, exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    async def wait_readable(self) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def drain(self) -> None:
        if self._drained is not None:
            await self._drained

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class Stream(AsyncNetworkStream):
    """One TCP (or TLS) connection as httpcore reads and writes it."""

    def __init__(self, transport: asyncio.Transport, connection: _Connection) -> None:
        self._transport, self._connection = transport, connection

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        connection = self._connection
        while not connection.buffer and not connection.closed:
            await connection.wait_readable()
        if connection.buffer:
            data = bytes(connection.buffer[:max_bytes])
            del connection.buffer[:max_bytes]
            return data
        if connection.error is not None:
            raise httpcore.ReadError(str(connection.error) or type(connection.error).__name__) from connection.error
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._transport.is_closing():
            error = self._connection.error
            raise httpcore.WriteError(str(error) if error else "the connection is closed") from error
        self._transport.write(buffer)
        await self._connection.drain()

    async def aclose(self) -> None:
        if self._transport.get_extra_info("ssl_object") is None:
            self._transport.close()
        else:  # close() would wait for the peer's TLS close_notify (up to 30 s), past a one-shot check's event loop
            self._transport.abort()  # (Checker.run), whose end left the socket open; a check has read what it wants

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport = await loop.start_tls(self._transport, self._connection, ssl_context, server_hostname=server_hostname)
        except TimeoutError as exc:
            self._transport.close()
            raise httpcore.ConnectTimeout("the TLS handshake timed out") from exc
        except (OSError, ssl.SSLError, ConnectionError) as exc:
            self._transport.close()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        if transport is None:
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        return Stream(transport, self._connection)

    def get_extra_info(self, info: str) -> Any:
        if info == "ssl_object":
            return self._transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._transport.get_extra_info("sockname")
        if info == "server_addr":
            return self._transport.get_extra_info("peername")
        if info == "socket":
            return self._transport.get_extra_info("socket")
        if info == "is_readable":  # asked of an idle connection: did the peer send or close anything?
            connection = self._connection
            if connection.buffer or connection.closed:
                return True
            return readable(self._transport.get_extra_info("socket"))
        return None


def readable(sock: socket.socket | None) -> bool:
    """Whether a read of ``sock`` would return at once (bytes, or the end of a closed one): gone counts as readable."""
    if sock is None or sock.fileno() < 0:
        return True
    poll = select.poll()
    poll.register(sock.fileno(), select.POLLIN)
    return bool(poll.poll(0))


class Backend(AsyncNetworkBackend):
    """httpcore's network backend on plain asyncio (see the module docstring)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SOCKET_OPTION] | None = None,
    ) -> AsyncNetworkStream:
        return await self._connect(host, port, lambda address: self._open(address, port, timeout, local_address, socket_options))

    async def _connect(self, host: str, port: int, open_: Callable[[str], Awaitable[AsyncNetworkStream]]) -> AsyncNetworkStream:
        """A connection to ``host``, opened by ``open_`` (here: the event loop resolves the name and dials)."""
        return await open_(host)

    async def _open(
        self, host: str, port: int, timeout: float | None, local_address: str | None, socket_options: Iterable[SOCKET_OPTION] | None
    ) -> AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport, connection = await loop.create_connection(
                    _Connection, host, port, local_addr=(local_address, 0) if local_address else None
                )
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"no connection to {host}:{port} within {timeout:g}s") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        sock = transport.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        return Stream(transport, connection)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[SOCKET_OPTION] | None = None
    ) -> AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport, connection = await loop.create_unix_connection(_Connection, path)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"no connection to {path} within {timeout:g}s") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return Stream(transport, connection)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class Timings:
    """Where one check's time goes, in milliseconds per phase (PHASES), and the address it connected (or tried) to.

    A phase waited on when the check ends (a timeout, a reset) is counted up to that moment, less
    any connection set-up (dns, connect, tls) that happened inside it.
    """

    def __init__(self) -> None:
        self.ms = dict.fromkeys(PHASES, 0.0)
        self.address: str | None = None
        self.answered: tuple[float, int] | None = None  # the final answer's HTTP version and Content-Length (http.py)
        self.tls_started: float | None = None
        self._waiting: tuple[str, float, float] | None = None

    def _setup(self) -> float:
        return self.ms["dns"] + self.ms["connect"] + self.ms["tls"]

    def wait(self, phase: str) -> None:
        self.stop()
        self._waiting = (phase, time.perf_counter(), self._setup())

    def stop(self) -> None:
        if self._waiting is not None:
            phase, since, setup = self._waiting
            self.ms[phase] += (time.perf_counter() - since) * 1000 - (self._setup() - setup)
            self._waiting = None

    def network_seconds(self) -> float:
        return sum(self.ms.values()) / 1000


timings: contextvars.ContextVar[Timings | None] = contextvars.ContextVar("monitor_check_timings", default=None)


class TimedBackend(Backend):
    """:class:`Backend`, resolving host names itself so that DNS and connect are timed apart (into the
    current check's :data:`timings`).

    The addresses are tried in the resolver's order, those ``dialer`` admits only; a TLS handshake still names
    the URL's host.
    """

    def __init__(self, dialer: network.Dialer = network.ANY_ADDRESS) -> None:
        self.dialer = dialer

    async def _connect(self, host: str, port: int, open_: Callable[[str], Awaitable[AsyncNetworkStream]]) -> AsyncNetworkStream:
        """Each of ``host``'s addresses in turn, the time to resolve them and to connect counted apart."""
        current = timings.get()
        started = time.perf_counter()
        try:
            addresses = await self.dialer.addresses(host, port)
        finally:
            resolved = time.perf_counter()
            if current is not None:
                current.ms["dns"] += (resolved - started) * 1000
        try:
            for address in addresses[:-1]:
                self._dialing(current, address)
                try:
                    return await open_(address)
                except (httpcore.ConnectError, OSError):
                    continue
            self._dialing(current, addresses[-1])
            return await open_(addresses[-1])
        finally:
            if current is not None:
                current.ms["connect"] += (time.perf_counter() - resolved) * 1000

    @staticmethod
    def _dialing(current: Timings | None, address: str) -> None:
        if current is not None:
            current.address = address


async def trace(event: str, info: dict[str, Any]) -> None:
    """httpcore's trace extension: the TLS handshake and the wait for the answer go to the current check's phases."""
    current = timings.get()
    if current is not None and event == "http11.send_request_headers.started":
        current.wait("first_byte")
    elif current is not None and event.startswith("connection.start_tls."):
        if event.endswith(".started"):
            current.tls_started = time.perf_counter()
        elif current.tls_started is not None:
            current.ms["tls"] += (time.perf_counter() - current.tls_started) * 1000
            current.tls_started = None


class Pool(httpcore.AsyncConnectionInterface):
    """Connections by origin, reused while the peer keeps them open; at most ``max_idle`` kept idle."""

    def __init__(
        self, *, ssl_context: ssl.SSLContext | None = None, max_idle: int = 8, network_backend: AsyncNetworkBackend | None = None
    ) -> None:
        self.ssl_context, self.max_idle = ssl_context, max_idle
        self.network_backend = network_backend or Backend()
        self._idle: list[AsyncHTTPConnection] = []  # oldest first

    async def handle_async_request(self, request: Request) -> Response:
        origin = request.url.origin
        connection = await self._reuse(origin) or AsyncHTTPConnection(
            origin, ssl_context=self.ssl_context, http1=True, http2=False, retries=0, network_backend=self.network_backend
        )
        try:
            response = await connection.handle_async_request(request)
        except BaseException:
            await connection.aclose()
            raise
        body = _Body(response.stream, lambda: self._release(connection))
        return Response(status=response.status, headers=response.headers, content=body, extensions=response.extensions)

    async def _reuse(self, origin: Origin) -> AsyncHTTPConnection | None:
        for index in range(len(self._idle) - 1, -1, -1):
            connection = self._idle[index]
            if connection.can_handle_request(origin):
                del self._idle[index]
                if connection.is_idle() and not connection.has_expired():
                    return connection
                await connection.aclose()
        return None

    async def _release(self, connection: AsyncHTTPConnection) -> None:
        if not connection.is_idle():
            await connection.aclose()
            return
        self._idle.append(connection)
        while len(self._idle) > self.max_idle:
            await self._idle.pop(0).aclose()

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.aclose()


class _Body:
    """A response body that hands its connection back to the pool once it is closed."""

    def __init__(self, stream: Any, release: Any) -> None:
        self._stream, self._release = stream, release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._stream.aclose()
        finally:
            await self._release()
