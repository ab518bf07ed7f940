"""The dns check kind: one question to a name server, and its answer judged by ``dns``.

Error kinds (besides those of :mod:`monitor.checks.probing`)::

    dns_nxdomain            the name does not exist (unless ``dns.nxdomain`` expects that)
    dns_servfail            the server could not answer (SERVFAIL)
    dns_timeout             no answer within the timeout (junk and replies to other queries are ignored)
    dns_unexpected_answer   an answer, but not the expected one (none, missing records, or the name exists)
    dns_error               any other failure: REFUSED, a closed port, a malformed or cut-short TCP answer
"""

from __future__ import annotations

from typing import Any

import dns.exception

from monitor import config
from monitor.checks import probing
from monitor.checks.context import Context
from monitor.checks.probing import Found, Probe
from monitor.config import Target
from monitor.core import errors, kinds
from monitor.core.results import OK, Result


def _rename(kind: str, detail: str) -> tuple[str, str]:
    return (kind, detail) if kind == errors.DNS else (errors.DNS_ERROR, f"asking the server failed: {detail}")


SPEC = probing.Spec(("resolve",), "DNS answer", errors.DNS_TIMEOUT, _rename)


class Dns:
    """The dns kind: keeps nothing between checks."""

    def __init__(self, context: Context) -> None:
        self.clock = context.clock

    async def check(self, target: Target, *, worker: int = 0) -> Result:
        return await probing.run(target, SPEC, _answered, self.clock)

    async def aclose(self) -> None:
        return None


async def _answered(target: Target, state: Probe) -> Result:
    """The check, with dnspython's failures named."""
    try:
        return await _dns(target, state)
    except dns.exception.Timeout:
        raise Found(errors.DNS_TIMEOUT, f"no DNS answer within {target.timeout:g}s") from None
    except dns.exception.DNSException as exc:
        raise Found(errors.DNS_ERROR, f"the DNS answer is unusable: {type(exc).__name__}") from None
    except EOFError:  # dnspython's word for a TCP answer cut short
        raise Found(errors.DNS_ERROR, "the server closed the connection before its answer was complete") from None


async def _dns(target: Target, state: Probe) -> Result:
    import dns.message
    import dns.rcode
    import dns.rdatatype

    settings = target.dns or config.DnsSettings()
    name, rdtype = config.dns_question(target.url)
    server, port = config.dns_server(settings.server) if settings.server else system_resolver()
    state.address = server  # the server asked: the address /probe's probe_ip_protocol names the version of
    query = dns.message.make_query(name, rdtype)
    response = await state.timed("resolve", _ask(query, server, port, settings.protocol, target.timeout))
    rcode = response.rcode()
    if rcode == dns.rcode.NXDOMAIN:
        if settings.nxdomain:
            return state.result(OK, None, f"{name} does not exist (NXDOMAIN), as expected")
        raise Found(errors.DNS_NXDOMAIN, f"{name} does not exist (NXDOMAIN from {server})")
    if rcode == dns.rcode.SERVFAIL:
        raise Found(errors.DNS_SERVFAIL, f"the server {server} could not answer for {name} (SERVFAIL)")
    if rcode != dns.rcode.NOERROR:
        raise Found(errors.DNS_ERROR, f"the server {server} answered {dns.rcode.to_text(rcode)} for {name}")
    wanted = dns.rdatatype.from_text(rdtype)
    answers = sorted(_answer(rdata) for rrset in response.answer if rrset.rdtype == wanted for rdata in rrset)
    return _judge_answers(state, settings, name, rdtype, answers)


async def _ask(query: Any, server: str, port: int, protocol: str, timeout: float) -> Any:
    import dns.asyncquery
    import dns.flags

    if protocol == "udp":
        # Junk, or a reply to another query (a wrong ID: spoofed, or late), is not the answer: wait on, as dig does.
        response = await dns.asyncquery.udp(query, server, timeout=timeout, port=port, ignore_unexpected=True, ignore_errors=True)
        if not response.flags & dns.flags.TC:
            return response
    return await dns.asyncquery.tcp(query, server, timeout=timeout, port=port)


def _answer(rdata: Any) -> str:
    strings = getattr(rdata, "strings", None)
    text: str = b"".join(strings).decode("utf-8", "replace") if strings is not None else rdata.to_text()
    return text


def _same(answer: str) -> str:
    return answer.lower().rstrip(".")


def _judge_answers(state: Probe, settings: config.DnsSettings, name: str, rdtype: str, answers: list[str]) -> Result:
    listed = f"answers: {', '.join(answers[:20])}" if answers else "no answers"
    if settings.nxdomain:
        raise Found(errors.DNS_UNEXPECTED, f"{name} exists (expected NXDOMAIN)", listed)
    if not answers:
        raise Found(errors.DNS_UNEXPECTED, f"{name} has no {rdtype} records")
    have = {_same(a) for a in answers}
    missing = [want for want in settings.contains if _same(want) not in have]
    if missing:
        raise Found(errors.DNS_UNEXPECTED, f"the {rdtype} answers lack {', '.join(missing[:5])}", listed)
    if settings.equals is not None and have != {_same(want) for want in settings.equals}:
        raise Found(errors.DNS_UNEXPECTED, f"the {rdtype} answers are not exactly {', '.join(settings.equals[:5])}", listed)
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


def _asked(address: str) -> str | None:
    """``dns:NAME/TYPE``: the name it looks up."""
    return address.split(":", 1)[1].removeprefix("//").split("/")[0] or None


KIND = kinds.declare(kinds.Kind("dns", ("dns",), host=_asked, probe=kinds.Probe("dns://127.0.0.1"), check=Dns))
