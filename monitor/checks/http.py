"""The http check kind: one request (and its redirects) to a target, judged by its ``expect``.

A check never raises. Whatever the target does (refuses, hangs, drips bytes, streams forever,
answers garbage) it returns a :class:`~monitor.core.results.Result` within the target's
``timeout``, which bounds the whole check, not each read. Its error kinds are listed in
:mod:`monitor.core.errors`.

Redirects are followed up to ``max_redirects``. A hop to another origin (scheme, host, port)
carries neither the target's headers nor its body, as browsers do; ``Checker(reach=...)`` also
refuses hops outside what a check may reach. Text the target controls (a bad header line, a JSON
value, a location) goes to the capped ``excerpt``, never to ``detail``.

``phases`` times each part of a check in milliseconds, summed over redirects::

    dns          resolving the host name (0 for an address, or a reused connection)
    connect      the TCP connection
    tls          the TLS handshake
    first_byte   from the request to the response head
    body         reading the body

``expect.max_latency`` is judged on their sum, the time the network and the target took, so the
process's own start-up never turns a healthy target into a warning.

It speaks HTTP/1.1 through httpcore (the transport under httpx), with small connection pools
(:mod:`monitor.checks.transport`) shared by a few workers each: a whole check costs about half
the CPU of the same check through httpx's client (bench/checks.py).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import replace
from urllib.parse import urljoin

import httpcore

try:  # httpcore imports anyio's asyncio backend on its first connection: ~45 ms the first check would pay. A private
    # module, with no public name; tests/test_cli_startup.py fails when anyio moves it
    import anyio._backends._asyncio  # noqa: F401
except ImportError:  # pragma: no cover - a newer anyio laid out otherwise; the first check is slower, no more
    pass

from monitor.checks import network
from monitor.checks.answers import Headers, evaluate, excerpt, quote
from monitor.checks.context import Context
from monitor.checks.transport import Pool, TimedBackend, Timings, timings, trace
from monitor.config import Target
from monitor.core import errors, kinds, urls
from monitor.core.results import CRITICAL, OK, Result

# Connection pools are cheap to shard, and a pool slows down past a few
# connections in flight (NOTES.md), so each pool serves a few workers only.
WORKERS_PER_POOL = 4
USER_AGENT = b"monitor/0.1 (+health check)"
REDIRECTS_CODES = {301, 302, 303, 307, 308}


Found = tuple[str, str | None, str, int | None, float | None, str | None]


class _Failure(Exception):
    """Internal: ends a check early with an error kind; never leaves this module."""

    def __init__(self, kind: str, detail: str, status: int | None = None, quote: str | None = None) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.status, self.quote = kind, detail, status, quote


def classify(exc: BaseException) -> tuple[str, str]:
    """Map a transport exception to an error kind and a short detail."""
    named = network.classify(exc)
    if named is not None:
        return named
    text = str(exc) or type(exc).__name__
    lowered = text.lower()
    if isinstance(exc, httpcore.RemoteProtocolError):
        if "without sending" in lowered or "peer closed" in lowered:
            return errors.RESET, text
        return errors.PROTOCOL, text
    if isinstance(exc, (httpcore.ReadError, httpcore.WriteError)):
        return errors.RESET, text
    if isinstance(exc, httpcore.TimeoutException):
        return errors.TIMEOUT, text
    return network.unclassified(exc)


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
            raise _Failure(errors.BODY_TOO_LARGE, f"body is larger than {limit} bytes", response.status)
        chunks.append(chunk)
    return b"".join(chunks)


def _own_words(detail: str) -> tuple[str, str | None]:
    """An error message split into its own words and the peer's bytes it quotes (h11's "illegal header line: ...")."""
    head, sep, rest = detail.partition(": ")
    if not sep or not head.replace(" ", "").replace("_", "").isalpha():
        return "the peer's answer is not valid HTTP", quote(detail)
    return head, quote(rest)


def _shown(url: str) -> str:
    """A URL the target chose, as a detail may quote it: redacted and short."""
    shown = urls.redact(url)
    return shown if len(shown) <= 120 else shown[:119] + "…"


def answered(response: httpcore.Response) -> tuple[float, int]:
    """An answer's HTTP version (1.1) and its Content-Length, -1 where it gives none (chunked, or read to the
    close), as blackbox_exporter's probe_http_version and probe_http_content_length read them."""
    version = bytes(response.extensions.get("http_version") or b"").decode("ascii", "replace").removeprefix("HTTP/")
    length = (_header(response, b"content-length") or "").strip()
    try:
        number = float(version)
    except ValueError:
        number = 0.0
    return number, int(length) if length.isdigit() else -1


def _header(response: httpcore.Response, name: bytes) -> str | None:
    for key, value in response.headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def fresh_connection(target: Target) -> bool:
    """A check that must see the certificate served now opens its own connection; others reuse one
    (keep-alive) where the target allows it. A ``Connection`` header of the target's own decides too."""
    if any(name.lower() == "connection" for name in target.headers):
        return False
    judged = target.expect.cert_min_days is not None or any(
        "CERTIFICATE_EXPIRATION" in condition.placeholders for condition in target.conditions
    )
    return judged and target.url.startswith("https:")


class Http:
    """The http kind: pools of kept-alive connections by trust and worker, and the check itself."""

    def __init__(self, context: Context) -> None:
        self.clock, self.reach, self.dialer = context.clock, context.reach, context.dialer
        self._pools: dict[tuple[bool, str | None, int], Pool] = {}

    def _pool(self, target: Target, worker: int) -> Pool:
        # Loading the CA bundle costs ~0.2 s: plain-http targets skip it.
        verify = target.verify_tls and target.url.startswith("https:")
        trust = (verify, target.ca_file if verify else None)
        key = (*trust, worker // WORKERS_PER_POOL)
        pool = self._pools.get(key)
        if pool is None:
            pool = Pool(ssl_context=network.tls_context(*trust), max_idle=WORKERS_PER_POOL * 2, network_backend=TimedBackend(self.dialer))
            self._pools[key] = pool
        return pool

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()

    async def check(self, target: Target, *, worker: int = 0) -> Result:
        """Check one target; always returns a Result within ``target.timeout`` (plus a hair)."""
        started, began = time.perf_counter(), self.clock()
        timed = Timings()
        reset = timings.set(timed)
        try:
            found, latency = await self._answer(target, worker, timed, started, began)
        finally:
            timed.stop()
            timings.reset(reset)
        severity, error, detail, status, cert, excerpted = found
        answered = timed.answered
        return replace(
            Result.judged(target.name, target.url, severity, error, detail[:500], seconds=latency, at=began),
            status_code=status,
            cert_expires_at=cert,
            excerpt=excerpted,
            phases={p: round(ms, 3) for p, ms in timed.ms.items()},
            ip_version=network.ip_version(timed.address),
            http_version=answered[0] if answered else None,
            content_length=answered[1] if answered else None,
        )

    async def _answer(self, target: Target, worker: int, timed: Timings, started: float, began: float) -> tuple[Found, float]:
        """What the check found, (severity, error kind, detail, status, certificate expiry, excerpt), and its latency."""
        try:
            async with asyncio.timeout(target.timeout):
                status, body, cert, headers = await self._fetch(target, self._pool(target, worker))
            latency = time.perf_counter() - started
            severity, error, detail, said = evaluate(target, status, body, timed.network_seconds() or latency, cert, began)
            shown = "\n".join(filter(None, [said, excerpt(status, headers, body)])) if severity != OK else None
            return (severity, error, detail, status, cert, shown), latency
        except _Failure as failure:
            return (CRITICAL, failure.kind, failure.detail, failure.status, None, failure.quote), time.perf_counter() - started
        except TimeoutError:
            detail = f"no complete answer within {target.timeout:g}s"
            return (CRITICAL, errors.TIMEOUT, detail, None, None, None), time.perf_counter() - started
        except (
            httpcore.ProtocolError,
            httpcore.NetworkError,
            httpcore.TimeoutException,
            httpcore.UnsupportedProtocol,
            OSError,
            ValueError,
        ) as exc:
            error, detail = classify(exc)
            said = None
            if error in (errors.PROTOCOL, errors.CONNECTION):  # these messages may quote what the peer sent
                detail, said = _own_words(detail)
            return (CRITICAL, error, detail, None, None, said), time.perf_counter() - started

    async def _fetch(self, target: Target, pool: Pool) -> tuple[int, bytes, float | None, Headers]:
        url, method, content = target.url, target.method, (target.body or "").encode() or None
        headers = [(b"User-Agent", USER_AGENT), *((k.encode(), v.encode()) for k, v in target.headers.items())]
        if fresh_connection(target):
            headers.append((b"Connection", b"close"))
        extensions = {"timeout": dict.fromkeys(("connect", "read", "write", "pool"), target.timeout), "trace": trace}
        timed = timings.get() or Timings()
        for _hop in range(target.max_redirects + 1):
            async with pool.stream(method, url, headers=headers, content=content, extensions=extensions) as response:
                timed.wait("body")
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
                timed.answered = answered(response)
                body = b"" if method == "HEAD" else await _read_capped(response, target.max_body)
                timed.stop()
                return response.status, body, cert, response.headers
        raise _Failure(errors.REDIRECTS, f"more than {target.max_redirects} redirects", quote=f"last location: {_shown(url)}")

    def _may_follow(self, url: str, status: int) -> None:
        if urls.split(url) is None or (self.reach is not None and not self.reach(url)):
            raise _Failure(
                errors.REDIRECT_REFUSED, "a redirect led outside what this check may reach", status, quote=f"location: {_shown(url)}"
            )


# blackbox_exporter's names of the http phases, by ours
BLACKBOX_HTTP_PHASES = {"dns": "resolve", "connect": "connect", "tls": "tls", "first_byte": "processing", "body": "transfer"}


def _blackbox_phases(result: Result) -> dict[str, float]:
    phases = result.phases or {}
    return {theirs: phases.get(ours, 0.0) / 1000 for ours, theirs in BLACKBOX_HTTP_PHASES.items()}


def probe_address(target: str) -> str:
    """A scrape's ``target`` as a URL: blackbox's ``host:port`` is ``http://host:port``."""
    return target if target[:8].lower().startswith(("http://", "https://")) else f"http://{target}"


KIND = kinds.declare(
    kinds.Kind(
        "http",
        schemes=("http", "https"),
        host=network.host_of,
        probe=kinds.Probe(
            "http://probe.invalid/",
            probe_address,
            series=(
                kinds.Series("probe_http_status_code", "Response HTTP status code", lambda r: r.status_code or 0),
                kinds.Series("probe_http_content_length", "Length of http content response", lambda r: r.content_length or 0),
                kinds.Series("probe_http_version", "Returns the version of HTTP of the probe response", lambda r: r.http_version or 0),
                kinds.Series(
                    "probe_http_ssl", "Indicates if SSL was used for the final redirect", lambda r: int(r.cert_expires_at is not None)
                ),
                kinds.Series(
                    "probe_failed_due_to_regex", "Indicates if probe failed due to regex", lambda r: int(r.error == errors.CONDITION)
                ),
                kinds.Series(
                    "probe_http_duration_seconds", "Duration of http request by phase, summed over all redirects", _blackbox_phases, "phase"
                ),
            ),
        ),
        check=Http,
    )
)
