"""Issue #33, item 2: /probe's allow patterns shaped like addresses match only addresses, and the address a probe
connects to, after DNS, is checked against the list: a name resolving to loopback or link-local is refused unless
a pattern names that address. Names are resolved by a DNS server on loopback (the eval's)."""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable, Iterator

import pytest
from prometheus_client import CollectorRegistry
from servers import Misbehaving, TcpServer
from test_probe import get, series

from monitor.config import parse
from monitor.config.probe import ProbeConfig
from monitor.eval.servers import DnsServer
from monitor.listener import MetricsServer
from monitor.listener.probe import Prober
from monitor.metrics import Metrics

RECORDS = {
    ("loop.attacker.test.", "A"): ["127.0.0.1"],
    ("meta.attacker.test.", "A"): ["169.254.169.254"],
    ("v6.attacker.test.", "A"): ["0.0.0.0"],
    ("public.attacker.test.", "A"): ["192.0.2.10"],
}


def resolver(server: DnsServer) -> Callable[[str, int], Awaitable[list[str]]]:
    """Resolve names by asking ``server``, as the system's resolver would ask its name server."""

    async def resolve(host: str, port: int) -> list[str]:
        import dns.asyncquery
        import dns.message

        answer = await dns.asyncquery.udp(dns.message.make_query(host, "A"), "127.0.0.1", port=server.port, timeout=2)
        found = [record.address for rrset in answer.answer for record in rrset]
        if not found:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return found

    return resolve


@pytest.fixture(scope="module")
def names() -> Iterator[DnsServer]:
    with DnsServer(RECORDS) as server:
        yield server


def listener(allow: list[str], names: DnsServer) -> MetricsServer:
    config = parse(f"targets: []\nprobe: {{allow: {allow}}}\n")
    prober = Prober(lambda: config.probe, resolve=resolver(names))
    return MetricsServer(Metrics(CollectorRegistry()), "127.0.0.1", 0, 60, prober=prober).start()


def test_an_address_pattern_matches_addresses_only() -> None:
    config = ProbeConfig(allow=["tcp://10.0.0.*:5432", "http://127.0.0.*:*/*", "tcp://[fd00::*]:22", "icmp://*"])
    assert config.allows("tcp://10.0.0.7:5432") and config.allows("http://127.0.0.1:8080/x")
    assert config.allows("tcp://[fd00::1]:22") and config.allows("icmp://anything.example")
    for name in (
        "tcp://10.0.0.1.attacker.com:5432",
        "http://127.0.0.1.attacker.test:8080/",
        "tcp://10.0.0.1x:5432",
        "http://127.0.0.1.nip.io:80/",
    ):
        assert not config.allows(name), name


def test_a_name_shaped_like_an_allowed_address_is_refused_by_probe(names: DnsServer) -> None:
    with TcpServer() as tcp:
        port = tcp.server_address[1]
        running = listener([f"tcp://127.0.0.*:{port}"], names)
        try:
            assert get(running, target=f"127.0.0.1.attacker.test:{port}", module="tcp_connect")[0] == 403
            status, text = get(running, target=f"127.0.0.1:{port}", module="tcp_connect")
        finally:
            running.stop()
    assert status == 200 and series(text)["probe_success"] == 1


def test_a_name_that_resolves_to_loopback_or_link_local_is_not_connected_to(names: DnsServer, web: Misbehaving) -> None:
    with TcpServer() as tcp:
        port = tcp.server_address[1]
        web_port = web.base.rsplit(":", 1)[1]
        running = listener(["tcp://*.attacker.test:*", "http://*.attacker.test:*/*"], names)
        hits = len(web.hits)
        try:
            answers = [
                get(running, target=f"{name}.attacker.test:{port}", module="tcp_connect", debug="true") for name in ("loop", "meta", "v6")
            ]
            answers.append(get(running, target=f"http://loop.attacker.test:{web_port}/healthy", module="http_2xx", debug="true"))
        finally:
            running.stop()
        assert len(web.hits) == hits  # the web server was never asked
        for status, text in answers:
            assert status == 200 and text.startswith("critical: address_refused: ") and "probe_success 0.0" in text
        assert "loop.attacker.test is 127.0.0.1: no address this check may connect to" in answers[0][1]
        # an address the list names stays reachable by name
        running = listener(["tcp://*.attacker.test:*", f"tcp://127.0.0.1:{port}"], names)
        try:
            status, text = get(running, target=f"loop.attacker.test:{port}", module="tcp_connect")
        finally:
            running.stop()
    assert status == 200 and series(text)["probe_success"] == 1


def test_a_public_address_is_reachable_by_name_and_loopback_or_link_local_is_not() -> None:
    config = ProbeConfig(allow=["tcp://*.attacker.test:*"])
    assert config.reaches("tcp", "192.0.2.10", 443) and not config.reaches("tcp", "127.0.0.1", 443)
    assert not config.reaches("tcp", "::ffff:127.0.0.1", 443) and not config.reaches("tcp", "fe80::1", 443)
    assert not config.reaches("http", "169.254.169.254", 80)
