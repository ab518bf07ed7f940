"""Checks that are not HTTP: a TCP port, a TLS certificate, a DNS answer.

Each probe returns the same :class:`~monitor.checks.engine.Result` as an HTTP check, within the
target's ``timeout``, and never raises. ``Checker.check`` calls :func:`probe` for every target
whose kind is not ``http`` (heartbeats are judged in ``heartbeat.py``).

Error kinds, besides the HTTP check's ``timeout``, ``connection_refused``, ``connection_reset``,
``dns`` (the target's host does not resolve), ``tls`` (a handshake that failed before any
certificate was judged) and ``condition_failed`` (``expect.max_latency``)::

    tcp_refused             nothing listens on the port
    tcp_timeout             no connection, or no matching reply, within the timeout
    tcp_unexpected_reply    the peer closed, or sent ``max_reply`` bytes, without a reply matching ``tcp.expect``
    cert_expired            the certificate's validity has ended (or not begun)
    cert_expiring           valid, but for fewer than ``expect.cert_min_days`` days (a warning)
    cert_untrusted          the chain does not lead to a trusted CA
    cert_hostname_mismatch  the certificate does not name the host (or ``tls.server_name``)
    dns_nxdomain            the name does not exist (unless ``dns.nxdomain`` expects that)
    dns_servfail            the server could not answer (SERVFAIL)
    dns_timeout             no answer within the timeout (junk and replies to other queries are ignored)
    dns_unexpected_answer   an answer, but not the expected one (none, missing records, or the name exists)
    dns_error               any other failure: REFUSED, a closed port, a malformed or cut-short TCP answer
"""

from __future__ import annotations

import asyncio
import calendar
import contextlib
import re
import ssl
import time
from collections.abc import Awaitable, Callable
from typing import Any

import dns.exception

from monitor import config
from monitor.checks import engine as checks
from monitor.checks.engine import CRITICAL, OK, WARNING, Result
from monitor.config import Target

TCP_REFUSED, TCP_TIMEOUT, TCP_UNEXPECTED_REPLY = "tcp_refused", "tcp_timeout", "tcp_unexpected_reply"
CERT_EXPIRED, CERT_EXPIRING, CERT_UNTRUSTED, CERT_MISMATCH = (
    "cert_expired", "cert_expiring", "cert_untrusted", "cert_hostname_mismatch")
DNS_NXDOMAIN, DNS_SERVFAIL, DNS_TIMEOUT, DNS_UNEXPECTED, DNS_ERROR = (
    "dns_nxdomain", "dns_servfail", "dns_timeout", "dns_unexpected_answer", "dns_error")
DEFAULT_CERT_MIN_DAYS = 14.0  # a tls:// target warns this long before expiry unless expect.cert_min_days says
EXPIRED_CODES = {9, 10}  # X509_V_ERR_CERT_NOT_YET_VALID, X509_V_ERR_CERT_HAS_EXPIRED
MISMATCH_CODES = {62, 64}  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
EXCERPT_BYTES = 300
SEARCH_EACH_CHUNK = 1024  # bytes of a tcp reply searched again after every chunk; past them, as it grows by an eighth
SEARCH_IDLE = 0.05  # seconds a peer may pause before the bytes it sent are searched


class _Found(Exception):
    """Internal: ends a probe early with an error kind; never leaves this module."""

    def __init__(self, kind: str, detail: str, excerpt: str | None = None, severity: str = CRITICAL) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.excerpt, self.severity = kind, detail, excerpt, severity


class _Probe:
    """One probe's clock: phases in milliseconds, and the Result it ends with."""

    def __init__(self, target: Target, began: float, phases: tuple[str, ...]) -> None:
        self.target, self.began, self.started = target, began, time.perf_counter()
        self.ms = dict.fromkeys(phases, 0.0)
        self.cert: float | None = None

    async def timed(self, phase: str, step: Awaitable[Any]) -> Any:
        started = time.perf_counter()
        try:
            return await step
        finally:
            self.ms[phase] += (time.perf_counter() - started) * 1000

    def result(self, severity: str, error: str | None, detail: str, excerpt: str | None = None) -> Result:
        latency = sum(self.ms.values()) / 1000 or time.perf_counter() - self.started
        limit = self.target.expect.max_latency
        if severity == OK and limit is not None and latency > limit:
            severity, error = WARNING, checks.CONDITION
            detail = f"latency {latency * 1000:.0f} ms over {limit * 1000:.0f} ms; {detail}"
        return Result(name=self.target.name, url=self.target.url, ok=severity == OK, severity=severity,
                      status_code=None, latency_ms=round(latency * 1000, 3), error=error, detail=detail[:500],
                      checked_at=self.began, cert_expires_at=self.cert, excerpt=excerpt,
                      phases={p: round(ms, 3) for p, ms in self.ms.items()}, kind=self.target.kind)


async def probe(target: Target, *, clock: Callable[[], float] = time.time) -> Result:
    """Check a tcp, tls or dns target; always returns a Result within ``target.timeout`` (plus a hair)."""
    run = {"tcp": _tcp, "tls": _tls, "dns": _dns}[target.kind]
    state = _Probe(target, clock(), PHASES[target.kind])
    try:
        async with asyncio.timeout(target.timeout):
            return await run(target, state)
    except _Found as found:
        return state.result(found.severity, found.kind, found.detail, found.excerpt)
    except TimeoutError:
        kind = {"tcp": TCP_TIMEOUT, "dns": DNS_TIMEOUT}.get(target.kind, checks.TIMEOUT)
        return state.result(CRITICAL, kind, f"no {WAITED[target.kind]} within {target.timeout:g}s")
    except dns.exception.Timeout:
        return state.result(CRITICAL, DNS_TIMEOUT, f"no DNS answer within {target.timeout:g}s")
    except dns.exception.DNSException as exc:
        return state.result(CRITICAL, DNS_ERROR, f"the DNS answer is unusable: {type(exc).__name__}")
    except EOFError:  # dnspython's word for a TCP answer cut short
        return state.result(CRITICAL, DNS_ERROR, "the server closed the connection before its answer was complete")
    except OSError as exc:
        kind, detail = checks.classify(exc)
        if target.kind == "tcp" and kind == checks.REFUSED:
            kind = TCP_REFUSED
        elif target.kind == "dns" and kind != checks.DNS:
            kind, detail = DNS_ERROR, f"asking the server failed: {detail}"
        return state.result(CRITICAL, kind, detail)


PHASES = {"tcp": ("dns", "connect", "reply"), "tls": ("dns", "connect", "tls"), "dns": ("resolve",)}
WAITED = {"tcp": "connection and reply", "tls": "TLS handshake", "dns": "DNS answer"}


async def _connect(target: Target, state: _Probe, kind: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = config.host_port(target.url, kind)
    host = host.strip("[]")
    addresses = [host] if checks._is_address(host) else await state.timed("dns", checks._resolve(host, port))
    for address in addresses[:-1]:
        try:
            return await state.timed("connect", asyncio.open_connection(address, port))
        except OSError:
            continue
    return await state.timed("connect", asyncio.open_connection(addresses[-1], port))


async def _close(writer: asyncio.StreamWriter) -> None:
    task = asyncio.current_task()
    if task is not None and task.cancelling():  # the timeout ran out: waiting on the peer would overrun it
        writer.transport.abort()
        return
    writer.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(writer.wait_closed(), 0.5)


async def _tcp(target: Target, state: _Probe) -> Result:
    settings = target.tcp or config.TcpSettings()
    reader, writer = await _connect(target, state, "tcp")
    try:
        if settings.send is not None:
            writer.write(settings.send.encode())
            await writer.drain()
        if settings.expect is None:
            return state.result(OK, None, "connected")
        reply = await state.timed("reply", _read_until(reader, re.compile(settings.expect), settings.max_reply))
        return state.result(OK, None, f"connected; the reply matches {settings.expect!r} ({len(reply)} bytes)")
    finally:
        await _close(writer)


async def _read_until(reader: asyncio.StreamReader, pattern: re.Pattern[str], limit: int) -> bytes:
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
            raise _Found(TCP_UNEXPECTED_REPLY, f"the peer closed the connection without a reply matching "
                         f"{pattern.pattern!r} ({len(reply)} bytes)", _shown(bytes(reply)))
        reply += chunk
        if (len(reply) <= SEARCH_EACH_CHUNK or len(reply) - searched >= searched // 8) and matches():
            return bytes(reply)
    if len(reply) > searched and matches():
        return bytes(reply)
    raise _Found(TCP_UNEXPECTED_REPLY, f"no reply matching {pattern.pattern!r} in the first {limit} bytes",
                 _shown(bytes(reply)))


def _shown(data: bytes) -> str:
    """A reply, as the excerpt may quote it: the target's bytes, bounded, never in ``detail``."""
    text = data[:EXCERPT_BYTES].decode("utf-8", "replace")
    more = f" [... {len(data) - EXCERPT_BYTES} more bytes]" if len(data) > EXCERPT_BYTES else ""
    return f"reply: {text!r}{more}"


async def _tls(target: Target, state: _Probe) -> Result:
    settings = target.tls or config.TlsSettings()
    host = config.host_port(target.url, "tls")[0].strip("[]")
    name = settings.server_name or host
    context = checks.tls_context(target.verify_tls, target.ca_file if target.verify_tls else None)
    reader, writer = await _connect(target, state, "tls")
    try:
        try:
            await state.timed("tls", writer.start_tls(context, server_hostname=name))
        except ssl.SSLCertVerificationError as exc:
            raise _Found(*_verification_failure(exc, name)) from None
        except ssl.SSLError as exc:
            raise _Found(checks.TLS, f"TLS handshake failed: {exc.reason or exc}") from None
        ssl_object = writer.get_extra_info("ssl_object")
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        state.cert = not_after(der) if der else None
        return _judge_expiry(target, state, name)
    finally:
        await _close(writer)


def _verification_failure(exc: ssl.SSLCertVerificationError, name: str) -> tuple[str, str]:
    code, message = exc.verify_code, exc.verify_message or exc.reason or str(exc)
    if code in EXPIRED_CODES:
        return CERT_EXPIRED, f"the certificate is not valid now: {message}"
    if code in MISMATCH_CODES:
        return CERT_MISMATCH, f"the certificate does not name {name}: {message}"
    return CERT_UNTRUSTED, f"the certificate chain is not trusted: {message}"


def _judge_expiry(target: Target, state: _Probe, name: str) -> Result:
    verified = "chain and name verified" if target.verify_tls else "not verified (verify_tls: false)"
    if state.cert is None:
        return state.result(OK, None, f"TLS handshake with {name} done; {verified}; expiry unknown")
    days = (state.cert - state.began) / 86400
    if days <= 0:
        return state.result(CRITICAL, CERT_EXPIRED, f"the certificate expired {-days:.1f} days ago")
    minimum = target.expect.cert_min_days
    minimum = DEFAULT_CERT_MIN_DAYS if minimum is None else minimum
    detail = f"certificate for {name} expires in {days:.1f} days"
    if days < minimum:
        return state.result(WARNING, CERT_EXPIRING, f"{detail} (minimum {minimum:g}); {verified}")
    return state.result(OK, None, f"{detail}; {verified}")


def not_after(der: bytes) -> float | None:
    """The end of an X.509 certificate's validity (Unix time), read from its DER; None if unreadable."""
    try:
        certificate = _children(_children(der)[0][1])  # tbsCertificate, signatureAlgorithm, signature
        tbs = _children(certificate[0][1])
        fields = tbs[1:] if tbs[0][0] == 0xA0 else tbs  # [0] version is optional
        validity = _children(fields[3][1])
        tag, value = validity[1]
        text = value.decode("ascii")
        stamp = time.strptime(text, "%y%m%d%H%M%SZ" if tag == 0x17 else "%Y%m%d%H%M%SZ")
        return float(calendar.timegm(stamp))
    except (IndexError, ValueError, UnicodeDecodeError):
        return None


def _children(data: bytes) -> list[tuple[int, bytes]]:
    """The (tag, content) elements of a DER SEQUENCE's content (or of a whole DER blob)."""
    out, at = [], 0
    while at < len(data):
        tag, length = data[at], data[at + 1]
        at += 2
        if length & 0x80:
            count = length & 0x7F
            length = int.from_bytes(data[at:at + count], "big")
            at += count
        if at + length > len(data):
            raise ValueError("truncated DER")
        out.append((tag, data[at:at + length]))
        at += length
    return out


async def _dns(target: Target, state: _Probe) -> Result:
    import dns.message
    import dns.rcode
    import dns.rdatatype

    settings = target.dns or config.DnsSettings()
    name, rdtype = config.dns_question(target.url)
    server, port = config.dns_server(settings.server) if settings.server else system_resolver()
    query = dns.message.make_query(name, rdtype)
    response = await state.timed("resolve", _ask(query, server, port, settings.protocol, target.timeout))
    rcode = response.rcode()
    if rcode == dns.rcode.NXDOMAIN:
        if settings.nxdomain:
            return state.result(OK, None, f"{name} does not exist (NXDOMAIN), as expected")
        raise _Found(DNS_NXDOMAIN, f"{name} does not exist (NXDOMAIN from {server})")
    if rcode == dns.rcode.SERVFAIL:
        raise _Found(DNS_SERVFAIL, f"the server {server} could not answer for {name} (SERVFAIL)")
    if rcode != dns.rcode.NOERROR:
        raise _Found(DNS_ERROR, f"the server {server} answered {dns.rcode.to_text(rcode)} for {name}")
    wanted = dns.rdatatype.from_text(rdtype)
    answers = sorted(_answer(rdata) for rrset in response.answer if rrset.rdtype == wanted for rdata in rrset)
    return _judge_answers(state, settings, name, rdtype, answers)


async def _ask(query: Any, server: str, port: int, protocol: str, timeout: float) -> Any:
    import dns.asyncquery
    import dns.flags

    if protocol == "udp":
        # Junk, or a reply to another query (a wrong ID: spoofed, or late), is not the answer: wait on, as dig does.
        response = await dns.asyncquery.udp(query, server, timeout=timeout, port=port, ignore_unexpected=True,
                                            ignore_errors=True)
        if not response.flags & dns.flags.TC:
            return response
    return await dns.asyncquery.tcp(query, server, timeout=timeout, port=port)


def _answer(rdata: Any) -> str:
    strings = getattr(rdata, "strings", None)
    text = b"".join(strings).decode("utf-8", "replace") if strings is not None else rdata.to_text()
    return text


def _same(answer: str) -> str:
    return answer.lower().rstrip(".")


def _judge_answers(state: _Probe, settings: config.DnsSettings, name: str, rdtype: str, answers: list[str]) -> Result:
    listed = f"answers: {', '.join(answers[:20])}" if answers else "no answers"
    if settings.nxdomain:
        raise _Found(DNS_UNEXPECTED, f"{name} exists (expected NXDOMAIN)", listed)
    if not answers:
        raise _Found(DNS_UNEXPECTED, f"{name} has no {rdtype} records")
    have = {_same(a) for a in answers}
    missing = [want for want in settings.contains if _same(want) not in have]
    if missing:
        raise _Found(DNS_UNEXPECTED, f"the {rdtype} answers lack {', '.join(missing[:5])}", listed)
    if settings.equals is not None and have != {_same(want) for want in settings.equals}:
        raise _Found(DNS_UNEXPECTED, f"the {rdtype} answers are not exactly {', '.join(settings.equals[:5])}", listed)
    return state.result(OK, None, f"{len(answers)} {rdtype} record(s) for {name}", None)


_RESOLVER: tuple[str, int] | None = None


def system_resolver() -> tuple[str, int]:
    """The system's first name server (``/etc/resolv.conf``), read once; 127.0.0.1 when none is set."""
    global _RESOLVER
    if _RESOLVER is None:
        import dns.resolver

        try:
            servers = dns.resolver.Resolver().nameservers
        except (dns.resolver.NoResolverConfiguration, OSError):
            servers = []
        _RESOLVER = (str(servers[0]) if servers else "127.0.0.1", 53)
    return _RESOLVER
