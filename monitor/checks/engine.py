"""The check engine: one HTTP health check per target, many at once.

A check never raises. Whatever the target does (refuses, hangs, drips bytes,
streams forever, answers garbage) it returns a :class:`Result` value within the
target's ``timeout``, which bounds the whole check, not each read.

Error kinds (``Result.error``)::

    timeout              the check did not finish within its timeout
    connection_refused   nothing listens on the port
    connection_reset     the peer reset or dropped the connection
    dns                  the host name does not resolve
    tls                  handshake or certificate verification failed
    protocol             the peer did not speak HTTP
    too_many_redirects   redirects went past max_redirects
    redirect_refused     a redirect led outside what the check may reach (see ``Checker(reach=...)``)
    body_too_large       the body went past max_body bytes
    unexpected_status    the status code is not one of expect.status
    condition_failed     a condition in expect failed (latency, body, JSON, cert)
    connection_error     any other transport failure

Redirects are followed up to ``max_redirects``. A hop to another origin
(scheme, host, port) carries neither the target's headers nor its body, as
browsers do; ``Checker(reach=...)`` also refuses hops outside what a check may
reach. Text the target controls (a bad header line, a JSON value, a location)
goes to the capped ``excerpt``, never to ``detail``.

``severity`` is ``ok``, ``warning`` (up, but a soft condition failed: latency or
certificate expiry) or ``critical`` (down, or a hard condition failed).

``phases`` times each part of a check in milliseconds, summed over redirects::

    dns          resolving the host name (0 for an address, or a reused connection)
    connect      the TCP connection
    tls          the TLS handshake
    first_byte   from the request to the response head
    body         reading the body

``expect.max_latency`` is judged on their sum, the time the network and the target took, so the
process's own start-up never turns a healthy target into a warning.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import ipaddress
import json
import socket
import ssl
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urljoin

import httpcore
from httpcore._backends.base import AsyncNetworkStream

try:  # httpcore imports anyio's asyncio backend on its first connection: ~45 ms the first check would pay
    import anyio._backends._asyncio  # noqa: F401
except ImportError:  # pragma: no cover - a newer anyio laid out otherwise; the first check is slower, no more
    pass

from monitor.checks.transport import Backend, Pool
from monitor.config import Target
from monitor.core import urls

TIMEOUT = "timeout"
REFUSED = "connection_refused"
RESET = "connection_reset"
DNS = "dns"
TLS = "tls"
PROTOCOL = "protocol"
REDIRECTS = "too_many_redirects"
REDIRECT_REFUSED = "redirect_refused"
BODY_TOO_LARGE = "body_too_large"
STATUS = "unexpected_status"
CONDITION = "condition_failed"
CONNECTION = "connection_error"

OK, WARNING, CRITICAL = "ok", "warning", "critical"

# Connection pools are cheap to shard, and a pool slows down past a few
# connections in flight (NOTES.md), so each pool serves a few workers only.
WORKERS_PER_POOL = 4
USER_AGENT = b"monitor/0.1 (+health check)"
MIN_PER_PROCESS = 250
REDIRECTS_CODES = {301, 302, 303, 307, 308}
EXCERPT_HEADERS = (b"content-type", b"server", b"retry-after", b"location", b"www-authenticate")
EXCERPT_BODY = 300
QUOTE_CHARS = 200  # of target-controlled text in an error: quoted in the excerpt, never in ``detail``
PHASES = ("dns", "connect", "tls", "first_byte", "body")


@dataclass(frozen=True)
class Result:
    """What one check of one target found."""

    name: str
    url: str
    ok: bool
    severity: str
    status_code: int | None
    latency_ms: float
    error: str | None
    detail: str
    checked_at: float
    cert_expires_at: float | None = None
    # What a failing target answered: status line, a few headers, the start of the body. Not stored.
    excerpt: str | None = None
    # Milliseconds per phase (PHASES): where the time went. Not stored.
    phases: dict[str, float] | None = None
    # What was checked: http, tcp, tls, dns or heartbeat (config.KINDS). Not stored: the config says it.
    kind: str = "http"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Failure(Exception):
    """Internal: ends a check early with an error kind; never leaves this module."""

    def __init__(self, kind: str, detail: str, status: int | None = None, quote: str | None = None) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.status, self.quote = kind, detail, status, quote


def _chain(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def classify(exc: BaseException) -> tuple[str, str]:
    """Map a transport exception to an error kind and a short detail."""
    text = str(exc) or type(exc).__name__
    for cause in _chain(exc):
        if isinstance(cause, socket.gaierror):
            return DNS, f"name does not resolve: {cause.strerror or cause}"
        if isinstance(cause, ssl.SSLError):
            return TLS, str(cause)
        if isinstance(cause, ConnectionRefusedError):
            return REFUSED, "connection refused"
        if isinstance(cause, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            return RESET, "connection reset by peer"
    lowered = text.lower()
    if "name or service not known" in lowered or "nodename nor servname" in lowered:
        return DNS, text
    if "connection refused" in lowered or "connect call failed" in lowered:
        return REFUSED, text
    if "certificate" in lowered or "ssl" in lowered:
        return TLS, text
    if isinstance(exc, httpcore.RemoteProtocolError):
        if "without sending" in lowered or "peer closed" in lowered:
            return RESET, text
        return PROTOCOL, text
    if isinstance(exc, (httpcore.ReadError, httpcore.WriteError)):
        return RESET, text
    if isinstance(exc, httpcore.TimeoutException):
        return TIMEOUT, text
    return CONNECTION, f"{type(exc).__name__}: {text}"


def json_field(document: Any, path: str) -> Any:
    """Follow ``a.b.0.c`` into parsed JSON; raises KeyError when a step is missing."""
    node = document
    for part in path.split(".") if path else []:
        if isinstance(node, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(node) <= index < len(node):
                raise KeyError(path)
            node = node[index]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(path)
    return node


def _cert_expiry(response: httpcore.Response) -> float | None:
    stream = response.extensions.get("network_stream")
    ssl_object = stream.get_extra_info("ssl_object") if stream is not None else None
    if ssl_object is None:
        return None
    cert = ssl_object.getpeercert()
    not_after = cert.get("notAfter") if cert else None
    return float(ssl.cert_time_to_seconds(not_after)) if not_after else None


async def _read_capped(response: httpcore.Response, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in response.aiter_stream():
        size += len(chunk)
        if size > limit:
            raise _Failure(BODY_TOO_LARGE, f"body is larger than {limit} bytes", response.status)
        chunks.append(chunk)
    return b"".join(chunks)


def _quote(text: str) -> str:
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"


def _own_words(detail: str) -> tuple[str, str | None]:
    """An error message split into its own words and the peer's bytes it quotes (h11's "illegal header line: ...")."""
    head, sep, rest = detail.partition(": ")
    if not sep or not head.replace(" ", "").replace("_", "").isalpha():
        return "the peer's answer is not valid HTTP", _quote(detail)
    return head, _quote(rest)


def _evaluate(target: Target, status: int, body: bytes, latency: float, cert: float | None,
              now: float) -> tuple[str, str | None, str, str | None]:
    """Apply ``expect``: returns (severity, error kind, detail, the target's text it quotes)."""
    expect = target.expect
    if status not in expect.status:
        return CRITICAL, STATUS, f"status {status} not in expected codes", None
    if expect.body_contains is not None and expect.body_contains not in body.decode("utf-8", "replace"):
        return CRITICAL, CONDITION, f"body does not contain {expect.body_contains!r}", None
    if expect.json_ is not None:
        try:
            actual = json_field(json.loads(body), expect.json_.path)
        except (ValueError, KeyError):
            return CRITICAL, CONDITION, f"JSON field {expect.json_.path!r} is missing or body is not JSON", None
        if actual != expect.json_.equals:  # the value is the target's text: quoted, not in the detail
            return CRITICAL, CONDITION, f"JSON field {expect.json_.path!r} is not {expect.json_.equals!r}", (
                f"JSON field {expect.json_.path!r} is {_quote(repr(actual))}")
    if expect.max_latency is not None and latency > expect.max_latency:
        return WARNING, CONDITION, f"latency {latency * 1000:.0f} ms over {expect.max_latency * 1000:.0f} ms", None
    if expect.cert_min_days is not None and cert is not None:
        days = (cert - now) / 86400
        if days < expect.cert_min_days:
            return WARNING, CONDITION, f"certificate expires in {days:.1f} days (minimum {expect.cert_min_days:g})", None
    return OK, None, f"status {status}", None


@functools.lru_cache(maxsize=16)
def tls_context(verify: bool, ca_file: str | None = None) -> ssl.SSLContext:
    """One context per kind for the whole process: building one loads the CA bundle (up to 0.1 s)."""
    if not verify:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    import certifi

    return ssl.create_default_context(cafile=ca_file or certifi.where())


def _excerpt(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> str:
    """A bounded look at what the target answered (data the agent reads, never instructions)."""
    shown = [f"{k.decode('latin-1')}: {v.decode('latin-1')[:120]}" for k, v in headers if k.lower() in EXCERPT_HEADERS]
    text = body[:EXCERPT_BODY].decode("utf-8", "replace")
    more = f" [... {len(body) - EXCERPT_BODY} more bytes]" if len(body) > EXCERPT_BODY else ""
    return "\n".join([f"HTTP {status}", *shown, "", text + more]).strip()


def _shown(url: str) -> str:
    """A URL the target chose, as a detail may quote it: redacted and short."""
    shown = urls.redact(url)
    return shown if len(shown) <= 120 else shown[:119] + "…"


def _header(response: httpcore.Response, name: bytes) -> str | None:
    for key, value in response.headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class _Timings:
    """Where one check's time goes, in milliseconds per phase (PHASES).

    A phase waited on when the check ends (a timeout, a reset) is counted up to that moment, less
    any connection set-up (dns, connect, tls) that happened inside it.
    """

    def __init__(self) -> None:
        self.ms = dict.fromkeys(PHASES, 0.0)
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


_timings: contextvars.ContextVar[_Timings | None] = contextvars.ContextVar("monitor_check_timings", default=None)


class _TimedBackend(Backend):
    """The network backend (monitor.checks.transport), resolving host names itself so that DNS and connect are timed apart.

    The addresses are tried in the resolver's order; a TLS handshake still names the URL's host.
    """

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> AsyncNetworkStream:
        timings = _timings.get()
        started = time.perf_counter()
        try:
            addresses = [host] if _is_address(host) else await _resolve(host, port)
        finally:
            resolved = time.perf_counter()
            if timings is not None:
                timings.ms["dns"] += (resolved - started) * 1000
        try:
            for address in addresses[:-1]:
                try:
                    return await super().connect_tcp(address, port, timeout, local_address, socket_options)
                except (httpcore.ConnectError, OSError):
                    continue
            return await super().connect_tcp(addresses[-1], port, timeout, local_address, socket_options)
        finally:
            if timings is not None:
                timings.ms["connect"] += (time.perf_counter() - resolved) * 1000


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


async def _resolve(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos)) or [host]


async def _trace(event: str, info: dict[str, Any]) -> None:
    """httpcore's trace extension: the TLS handshake and the wait for the answer go to the current check's phases."""
    timings = _timings.get()
    if timings is not None and event == "http11.send_request_headers.started":
        timings.wait("first_byte")
    elif timings is not None and event.startswith("connection.start_tls."):
        if event.endswith(".started"):
            timings.tls_started = time.perf_counter()
        elif timings.tls_started is not None:
            timings.ms["tls"] += (time.perf_counter() - timings.tls_started) * 1000
            timings.tls_started = None


class Checker:
    """Checks targets concurrently with bounded concurrency.

    It speaks HTTP/1.1 through httpcore (the transport under httpx), with
    small connection pools shared by a few workers each: a whole check costs
    about half the CPU of the same check through httpx's client (bench/checks.py).

    Use as an async context manager, or call :meth:`run` from sync code::

        results = Checker(concurrency=32).run(config.targets)
    """

    def __init__(self, *, concurrency: int = 64, processes: int = 1, clock: Any = time.time,
                 reach: Callable[[str], bool] | None = None, heartbeats: Any = None) -> None:
        self.concurrency = concurrency
        self.heartbeats = heartbeats  # heartbeat.Heartbeats: the pings heartbeat targets are judged on
        self.reach = reach  # None: redirects may go anywhere http(s); else every hop must satisfy it
        self.processes = processes
        self.clock = clock
        self._pools: dict[tuple[bool, str | None, int], Pool] = {}

    def _pool(self, target: Target, worker: int) -> Pool:
        # Loading the CA bundle costs ~0.2 s: plain-http targets skip it.
        verify = target.verify_tls and target.url.startswith("https:")
        trust = (verify, target.ca_file if verify else None)
        key = (*trust, worker // WORKERS_PER_POOL)
        pool = self._pools.get(key)
        if pool is None:
            pool = Pool(ssl_context=tls_context(*trust), max_idle=WORKERS_PER_POOL * 2, network_backend=_TimedBackend())
            self._pools[key] = pool
        return pool

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()

    async def __aenter__(self) -> Checker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def check(self, target: Target, *, worker: int = 0) -> Result:
        """Check one target; always returns a Result within ``target.timeout`` (plus a hair)."""
        if target.kind != "http":
            return await self._other_kind(target)
        started, began = time.perf_counter(), self.clock()
        status: int | None = None
        cert: float | None = None
        excerpt: str | None = None
        timings = _Timings()
        reset = _timings.set(timings)
        try:
            async with asyncio.timeout(target.timeout):
                status, body, cert, headers = await self._fetch(target, self._pool(target, worker))
            latency = time.perf_counter() - started
            severity, error, detail, quote = _evaluate(target, status, body, timings.network_seconds() or latency,
                                                       cert, began)
            if severity != OK:
                excerpt = "\n".join(filter(None, [quote, _excerpt(status, headers, body)]))
        except _Failure as failure:
            severity, error, detail, status = CRITICAL, failure.kind, failure.detail, failure.status
            excerpt = failure.quote
            latency = time.perf_counter() - started
        except TimeoutError:
            severity, error = CRITICAL, TIMEOUT
            latency = time.perf_counter() - started
            detail = f"no complete answer within {target.timeout:g}s"
        except (httpcore.ProtocolError, httpcore.NetworkError, httpcore.TimeoutException,
                httpcore.UnsupportedProtocol, OSError, ValueError) as exc:
            error, detail = classify(exc)
            if error in (PROTOCOL, CONNECTION):  # these messages may quote what the peer sent
                detail, excerpt = _own_words(detail)
            severity, latency = CRITICAL, time.perf_counter() - started
        finally:
            timings.stop()
            _timings.reset(reset)
        return Result(
            name=target.name, url=target.url, ok=severity == OK, severity=severity,
            status_code=status, latency_ms=round(latency * 1000, 3), error=error,
            detail=detail[:500], checked_at=began, cert_expires_at=cert, excerpt=excerpt,
            phases={p: round(ms, 3) for p, ms in timings.ms.items()},
        )

    async def _other_kind(self, target: Target) -> Result:
        """tcp, tls and dns targets are probed (probes.py); heartbeat targets judged on their pings (heartbeat.py)."""
        from monitor.checks import heartbeat, probes

        if target.kind == "heartbeat":
            return heartbeat.judge(target, self.heartbeats, self.clock())
        return await probes.probe(target, clock=self.clock)

    async def _fetch(self, target: Target, pool: Pool
                     ) -> tuple[int, bytes, float | None, list[tuple[bytes, bytes]]]:
        url, method, content = target.url, target.method, (target.body or "").encode() or None
        headers = [(b"User-Agent", USER_AGENT), *((k.encode(), v.encode()) for k, v in target.headers.items())]
        if fresh_connection(target):
            headers.append((b"Connection", b"close"))
        extensions = {"timeout": dict.fromkeys(("connect", "read", "write", "pool"), target.timeout), "trace": _trace}
        timings = _timings.get() or _Timings()
        for _hop in range(target.max_redirects + 1):
            async with pool.stream(method, url, headers=headers, content=content, extensions=extensions) as response:
                timings.wait("body")
                cert = _cert_expiry(response) if url.startswith("https:") else None
                location = _header(response, b"location")
                if response.status in REDIRECTS_CODES and location:
                    url, hop = urljoin(url, location), url
                    self._may_follow(url, response.status)
                    if response.status == 303 or (response.status in (301, 302) and method == "POST"):
                        method, content = "GET", None
                    if not urls.same_origin(url, hop):  # as browsers do: no credentials, no body elsewhere
                        headers, content = headers[:1], None
                        method = "HEAD" if method == "HEAD" else "GET"
                    continue
                body = b"" if method == "HEAD" else await _read_capped(response, target.max_body)
                timings.stop()
                return response.status, body, cert, response.headers
        raise _Failure(REDIRECTS, f"more than {target.max_redirects} redirects", quote=f"last location: {_shown(url)}")

    def _may_follow(self, url: str, status: int) -> None:
        if urls.split(url) is None or (self.reach is not None and not self.reach(url)):
            raise _Failure(REDIRECT_REFUSED, "a redirect led outside what this check may reach", status,
                           quote=f"location: {_shown(url)}")

    async def check_all(self, targets: Iterable[Target]) -> list[Result]:
        """Check every target, at most ``concurrency`` at once; results keep the input order."""
        todo = list(enumerate(targets))
        results: list[Result | None] = [None] * len(todo)
        queue: asyncio.Queue[tuple[int, Target]] = asyncio.Queue()
        for item in todo:
            queue.put_nowait(item)

        async def work(worker: int) -> None:
            while not queue.empty():
                index, target = queue.get_nowait()
                results[index] = await self.check(target, worker=worker)

        await asyncio.gather(*(work(i) for i in range(min(self.concurrency, len(todo)))))
        return [r for r in results if r is not None]

    def run(self, targets: Iterable[Target]) -> list[Result]:
        """Sync entry point: check all targets and close the pools.

        With ``processes > 1`` a large batch is split over forked worker
        processes, since one process is CPU-bound at about 1,400 checks/s. Only
        single-threaded callers (the one-shot CLI, benchmarks) should ask for it.
        """
        todo = list(targets)
        if self.processes > 1 and len(todo) >= MIN_PER_PROCESS * 2:
            return self._run_forked(todo)

        async def main() -> list[Result]:
            async with self:
                return await self.check_all(todo)

        return asyncio.run(main())

    def _run_forked(self, todo: list[Target]) -> list[Result]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        count = min(self.processes, len(todo) // MIN_PER_PROCESS)
        chunks = [todo[i::count] for i in range(count)]
        worker = Checker(concurrency=max(1, self.concurrency // count), clock=self.clock, heartbeats=self.heartbeats)
        with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(worker.run, chunks))
        results: list[Result] = [None] * len(todo)  # type: ignore[list-item]
        for index, part in enumerate(parts):
            results[index::count] = part
        return results


def fresh_connection(target: Target) -> bool:
    """A check that must see the certificate served now opens its own connection; others reuse one
    (keep-alive) where the target allows it. A ``Connection`` header of the target's own decides too."""
    if any(name.lower() == "connection" for name in target.headers):
        return False
    return target.expect.cert_min_days is not None and target.url.startswith("https:")


def exit_code(results: Iterable[Result]) -> int:
    """Nagios convention: 0 OK, 1 WARNING, 2 CRITICAL."""
    severities = {r.severity for r in results}
    if CRITICAL in severities:
        return 2
    return 1 if WARNING in severities else 0
