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
import json
import ssl
import time
from typing import Any
from urllib.parse import urljoin

import httpcore

try:  # httpcore imports anyio's asyncio backend on its first connection: ~45 ms the first check would pay
    import anyio._backends._asyncio  # noqa: F401
except ImportError:  # pragma: no cover - a newer anyio laid out otherwise; the first check is slower, no more
    pass

from monitor.checks import conditions, network, registry
from monitor.checks.transport import Pool, TimedBackend, Timings, timings, trace
from monitor.config import Target
from monitor.core import errors, kinds, urls
from monitor.core.results import CRITICAL, OK, PASSING, WARNING, Result

# Connection pools are cheap to shard, and a pool slows down past a few
# connections in flight (NOTES.md), so each pool serves a few workers only.
WORKERS_PER_POOL = 4
USER_AGENT = b"monitor/0.1 (+health check)"
REDIRECTS_CODES = {301, 302, 303, 307, 308}
EXCERPT_HEADERS = (b"content-type", b"server", b"retry-after", b"location", b"www-authenticate")
EXCERPT_BODY = 512  # a Java exception's chain of causes with the host it names (Lettuce, Hikari) is 200-400 bytes
QUOTE_CHARS = 200  # of target-controlled text in an error: quoted in the excerpt, never in ``detail``
Headers = list[tuple[bytes, bytes]]


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
            raise _Failure(errors.BODY_TOO_LARGE, f"body is larger than {limit} bytes", response.status)
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


def evaluate(target: Target, status: int, body: bytes, latency: float, cert: float | None,
             now: float) -> tuple[str, str | None, str, str | None]:
    """Apply ``expect`` and ``conditions``: returns (severity, error kind, detail, the target's text it quotes)."""
    verdict = _expected(target, status, body, latency, cert, now)
    if not target.conditions or verdict[1] == errors.STATUS:  # a wrong status: its body's conditions add noise
        return verdict
    seen = conditions.Seen(latency_ms=latency * 1000, status=status, body=body, cert_expires_at=cert, now=now)
    return conditions.merged(verdict, conditions.failures(target.conditions, seen))


def _status_is_judged(target: Target) -> bool:
    """Whether ``expect.status`` applies: written, or the default when no condition names [STATUS]."""
    return "status" in target.expect.model_fields_set or not any(
        "STATUS" in condition.placeholders for condition in target.conditions)


def _expected(target: Target, status: int, body: bytes, latency: float, cert: float | None,
              now: float) -> tuple[str, str | None, str, str | None]:
    """Apply ``expect``: returns (severity, error kind, detail, the target's text it quotes)."""
    expect = target.expect
    if status not in expect.status and _status_is_judged(target):
        return CRITICAL, errors.STATUS, f"status {status} not in expected codes", None
    text = body.decode("utf-8", "replace") if expect.body_contains or expect.body_not_contains else ""
    if expect.body_contains is not None and expect.body_contains not in text:
        return CRITICAL, errors.CONDITION, f"body does not contain {expect.body_contains!r}", None
    if expect.body_not_contains is not None and expect.body_not_contains in text:
        return CRITICAL, errors.CONDITION, f"body contains {expect.body_not_contains!r}", None
    if expect.json_ is not None:
        try:
            actual = json_field(json.loads(body), expect.json_.path)
        except (ValueError, KeyError):
            return CRITICAL, errors.CONDITION, f"JSON field {expect.json_.path!r} is missing or body is not JSON", None
        except RecursionError:  # a hostile body: deeper than the parser goes, so no field can be read
            return CRITICAL, errors.CONDITION, "body is JSON nested too deeply to read", None
        if actual != expect.json_.equals:  # the value is the target's text: quoted, not in the detail
            return CRITICAL, errors.CONDITION, f"JSON field {expect.json_.path!r} is not {expect.json_.equals!r}", (
                f"JSON field {expect.json_.path!r} is {_quote(repr(actual))}")
    if expect.max_latency is not None and latency > expect.max_latency:
        return WARNING, errors.CONDITION, f"latency {latency * 1000:.0f} ms over {expect.max_latency * 1000:.0f} ms", None
    if expect.cert_min_days is not None and cert is not None:
        days = (cert - now) / 86400
        if days < expect.cert_min_days:
            return WARNING, errors.CONDITION, f"certificate expires in {days:.1f} days (minimum {expect.cert_min_days:g})", None
    return OK, None, f"status {status}", None


def _excerpt(status: int, headers: Headers, body: bytes) -> str:
    """A bounded look at what the target answered (data the agent reads, never instructions)."""
    shown = [f"{k.decode('latin-1')}: {v.decode('latin-1')[:120]}" for k, v in headers if k.lower() in EXCERPT_HEADERS]
    body = focused(body)
    text = body[:EXCERPT_BODY].decode("utf-8", "replace")
    more = f" [... {len(body) - EXCERPT_BODY} more bytes]" if len(body) > EXCERPT_BODY else ""
    return "\n".join([f"HTTP {status}", *shown, "", text + more]).strip()


def focused(body: bytes) -> bytes:
    """A health document too long to show whole, with the details of passing components left out: the
    failing one's error is what matters, and it is often last (Spring Boot lists ``db``, ``diskSpace``,
    then ``ldap`` with its error). Each component's verdict stays. Any other body is as it came."""
    if len(body) <= EXCERPT_BODY or body.lstrip()[:1] not in (b"{", b"["):
        return body
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth: as it came
        return body
    return json.dumps(_without_passing_details(document, root=True), separators=(",", ":"),
                      ensure_ascii=False).encode()


def _without_passing_details(node: Any, *, root: bool = False) -> Any:
    """``node`` with each passing component (not the document itself: its parts may fail) reduced to its
    plain fields, and listed after the failing ones, whose errors the excerpt's bytes are for."""
    if isinstance(node, list):
        return [_without_passing_details(item) for item in sorted(node, key=_passing)]
    if not isinstance(node, dict):
        return node
    if not root and _passing(node):
        return {key: value for key, value in node.items() if not isinstance(value, (dict, list))}
    ordered = sorted(node.items(), key=lambda item: _passing(item[1]))
    return {key: _without_passing_details(value) for key, value in ordered}


def _passing(node: Any) -> bool:
    """Whether ``node`` is a component whose own verdict passes (``{"status": "UP", ...}``)."""
    status = node.get("status") if isinstance(node, dict) else None
    return isinstance(status, str) and status.lower() in PASSING


def _shown(url: str) -> str:
    """A URL the target chose, as a detail may quote it: redacted and short."""
    shown = urls.redact(url)
    return shown if len(shown) <= 120 else shown[:119] + "…"


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
        "CERTIFICATE_EXPIRATION" in condition.placeholders for condition in target.conditions)
    return judged and target.url.startswith("https:")


class Http:
    """The http kind: pools of kept-alive connections by trust and worker, and the check itself."""

    def __init__(self, context: registry.Context) -> None:
        self.clock, self.reach, self.dialer = context.clock, context.reach, context.dialer
        self._pools: dict[tuple[bool, str | None, int], Pool] = {}

    def _pool(self, target: Target, worker: int) -> Pool:
        # Loading the CA bundle costs ~0.2 s: plain-http targets skip it.
        verify = target.verify_tls and target.url.startswith("https:")
        trust = (verify, target.ca_file if verify else None)
        key = (*trust, worker // WORKERS_PER_POOL)
        pool = self._pools.get(key)
        if pool is None:
            pool = Pool(ssl_context=network.tls_context(*trust), max_idle=WORKERS_PER_POOL * 2,
                        network_backend=TimedBackend(self.dialer))
            self._pools[key] = pool
        return pool

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()

    async def check(self, target: Target, *, worker: int = 0) -> Result:
        """Check one target; always returns a Result within ``target.timeout`` (plus a hair)."""
        started, began = time.perf_counter(), self.clock()
        status: int | None = None
        cert: float | None = None
        excerpt: str | None = None
        timed = Timings()
        reset = timings.set(timed)
        try:
            async with asyncio.timeout(target.timeout):
                status, body, cert, headers = await self._fetch(target, self._pool(target, worker))
            latency = time.perf_counter() - started
            severity, error, detail, quote = evaluate(target, status, body, timed.network_seconds() or latency,
                                                      cert, began)
            if severity != OK:
                excerpt = "\n".join(filter(None, [quote, _excerpt(status, headers, body)]))
        except _Failure as failure:
            severity, error, detail, status = CRITICAL, failure.kind, failure.detail, failure.status
            excerpt = failure.quote
            latency = time.perf_counter() - started
        except TimeoutError:
            severity, error = CRITICAL, errors.TIMEOUT
            latency = time.perf_counter() - started
            detail = f"no complete answer within {target.timeout:g}s"
        except (httpcore.ProtocolError, httpcore.NetworkError, httpcore.TimeoutException,
                httpcore.UnsupportedProtocol, OSError, ValueError) as exc:
            error, detail = classify(exc)
            if error in (errors.PROTOCOL, errors.CONNECTION):  # these messages may quote what the peer sent
                detail, excerpt = _own_words(detail)
            severity, latency = CRITICAL, time.perf_counter() - started
        finally:
            timed.stop()
            timings.reset(reset)
        return Result(
            name=target.name, url=target.url, ok=severity == OK, severity=severity,
            status_code=status, latency_ms=round(latency * 1000, 3), error=error,
            detail=detail[:500], checked_at=began, cert_expires_at=cert, excerpt=excerpt,
            phases={p: round(ms, 3) for p, ms in timed.ms.items()},
        )

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
                body = b"" if method == "HEAD" else await _read_capped(response, target.max_body)
                timed.stop()
                return response.status, body, cert, response.headers
        raise _Failure(errors.REDIRECTS, f"more than {target.max_redirects} redirects",
                       quote=f"last location: {_shown(url)}")

    def _may_follow(self, url: str, status: int) -> None:
        if urls.split(url) is None or (self.reach is not None and not self.reach(url)):
            raise _Failure(errors.REDIRECT_REFUSED, "a redirect led outside what this check may reach", status,
                           quote=f"location: {_shown(url)}")


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
                kinds.Series(
                    "probe_http_ssl",
                    "Indicates if SSL was used for the final redirect",
                    lambda r: int(r.cert_expires_at is not None),
                ),
                kinds.Series(
                    "probe_failed_due_to_regex",
                    "Indicates if probe failed due to regex",
                    lambda r: int(r.error == errors.CONDITION),
                ),
                kinds.Series(
                    "probe_http_duration_seconds",
                    "Duration of http request by phase, summed over all redirects",
                    _blackbox_phases,
                    "phase",
                ),
            ),
        ),
    )
)
registry.register("http", Http)
