"""tcp://, tls:// and dns: targets against real loopback servers: the happy path, each error kind, timeouts."""

from __future__ import annotations

import re
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import TcpServer, free_port, openssl, wait_for

from monitor.checks import probing, tcp
from monitor.checks.engine import Checker, Result
from monitor.config import ConfigError, Target, parse
from monitor.core import errors
from monitor.eval.servers import DnsServer


def check(**fields: Any) -> Result:
    [result] = Checker().run([Target.model_validate({"name": "t", "timeout": 2, **fields})])
    return result


# -- tcp -------------------------------------------------------------------------------------------


def test_a_listening_port_passes_and_its_latency_is_the_connect_time() -> None:
    with TcpServer("echo") as server:
        result = check(url=f"tcp://{server.address}")
    assert (result.ok, result.kind, result.error, result.detail) == (True, "tcp", None, "connected")
    assert result.phases is not None and result.phases["connect"] > 0
    assert result.latency_ms == pytest.approx(result.phases["dns"] + result.phases["connect"], abs=0.01)


def test_a_reply_that_matches_passes() -> None:
    with TcpServer("echo") as server:
        result = check(url=f"tcp://{server.address}", tcp={"send": "ping\r\n", "expect": "^PING"})
    assert result.ok and "the reply matches '^PING'" in result.detail
    assert result.phases is not None and result.phases["reply"] > 0


def test_a_reply_that_does_not_match_is_an_unexpected_reply_quoted_in_the_excerpt() -> None:
    with TcpServer("echo") as server:
        result = check(url=f"tcp://{server.address}", tcp={"send": "hello", "expect": "^\\+PONG"})
    assert (result.severity, result.error) == ("critical", errors.TCP_UNEXPECTED_REPLY)
    assert "HELLO" not in result.detail and result.excerpt == "reply: 'HELLO'"


def test_nothing_listening_is_tcp_refused() -> None:
    result = check(url=f"tcp://127.0.0.1:{free_port()}")
    assert (result.severity, result.error, result.detail) == ("critical", errors.TCP_REFUSED, "connection refused")


def test_a_host_that_does_not_resolve_is_dns_and_an_ipv6_address_connects() -> None:
    result = check(url="tcp://no-such-host.invalid:5432")
    assert (result.error, result.severity) == ("dns", "critical") and result.phases is not None
    import socket

    try:
        with socket.create_server(("::1", 0), family=socket.AF_INET6) as server:
            port = server.getsockname()[1]
            assert check(url=f"tcp://[::1]:{port}").ok
    except OSError:
        pytest.skip("no IPv6 loopback here")


def test_a_peer_that_never_answers_times_out_within_the_target_timeout() -> None:
    with TcpServer("silent") as server:
        started = time.monotonic()
        result = check(url=f"tcp://{server.address}", timeout="300ms", tcp={"send": "x", "expect": "y"})
    assert time.monotonic() - started < 2
    assert (result.error, result.detail) == (errors.TCP_TIMEOUT, "no connection and reply within 0.3s")


def test_a_peer_that_resets_is_connection_reset() -> None:
    with TcpServer("reset") as server:
        result = check(url=f"tcp://{server.address}", tcp={"send": "x", "expect": "y"})
    assert result.error in ("connection_reset", errors.TCP_UNEXPECTED_REPLY)
    assert result.error == "connection_reset" or "closed" in result.detail


def test_a_peer_that_closes_without_a_word_is_an_unexpected_reply() -> None:
    with TcpServer("close") as server:
        result = check(url=f"tcp://{server.address}", tcp={"expect": "SSH-"})
    assert result.error == errors.TCP_UNEXPECTED_REPLY and "closed the connection" in result.detail


def test_a_slow_connect_over_max_latency_is_a_warning() -> None:
    with TcpServer("echo") as server:
        result = check(url=f"tcp://{server.address}", tcp={"send": "x", "expect": "X"}, expect={"max_latency": "1ms"}, timeout=2)
    if result.latency_ms > 1:  # loopback can be faster than a millisecond: then there is nothing to judge
        assert (result.severity, result.error) == ("warning", "condition_failed")


# -- config ----------------------------------------------------------------------------------------


def test_each_kind_is_read_off_the_url_and_bad_fields_name_the_kind() -> None:
    config = parse(
        "targets:\n- {name: a, url: 'tcp://db:5432'}\n- {name: b, url: 'tls://example.com:443'}\n"
        "- {name: c, url: 'dns:example.com/MX'}\n- {name: d, url: 'https://example.com/'}\n"
    )
    assert [t.kind for t in config.targets] == ["tcp", "tls", "dns", "http"]
    with pytest.raises(ConfigError) as caught:
        parse(
            "targets:\n- {name: a, url: 'tcp://db'}\n- {name: b, url: 'tls://x:443', dns: {}}\n"
            "- {name: c, url: 'dns:example.com/BOGUS'}\n- {name: d, kind: tcp, url: 'https://x/'}\n"
            "- {name: e, url: 'tcp://db:1', tcp: {expect: '('}}\n"
        )
    message = str(caught.value)
    assert "<config>:2: targets[0].url: 'tcp://db' is not a tcp address: write it tcp://host:port" in message
    assert "<config>:3: targets[1]: a tls target takes no dns: settings" in message
    assert "<config>:4: targets[2].url: dns record type 'BOGUS' is not one of A, AAAA" in message
    assert "<config>:5: targets[3]: kind tcp does not match the url 'https://x/', which names a http check" in message
    assert "<config>:6: targets[4].tcp.expect: tcp expect '(' is not a regular expression" in message


def test_fields_another_kind_would_ignore_are_errors_that_name_the_kind() -> None:
    with pytest.raises(ConfigError) as caught:
        parse(
            "defaults: {headers: {X-A: b}, expect: {status: [200]}}\ntargets:\n"
            "- {name: a, url: 'dns:example.com', expect: {status: [200]}}\n- {name: b, url: 'tcp://db:5432', method: POST}\n"
            "- {name: c, url: 'tls://x:443', headers: {X: y}}\n- {name: d, url: 'dns:example.com', verify_tls: false}\n"
        )
    message = str(caught.value)
    assert "<config>:3: targets[0].expect.status: a dns target takes no expect.status (it is for http targets)" in message
    assert "<config>:4: targets[1].method: a tcp target takes no method (it is for http targets)" in message
    assert "<config>:5: targets[2].headers: a tls target takes no headers" in message
    assert "<config>:6: targets[3].verify_tls: a dns target takes no verify_tls (it is for tls and https targets)" in message
    config = parse(
        "defaults: {headers: {X-A: b}, expect: {status: [200]}}\ntargets:\n- {name: a, url: 'dns:example.com'}\n"
        "- {name: b, url: 'tls://x:443', verify_tls: false, expect: {cert_min_days: 3, max_latency: 1s}}\n"
    )
    assert [t.kind for t in config.targets] == ["dns", "tls"]  # defaults hold fields for the http targets


def test_a_host_or_server_name_no_resolver_could_encode_is_a_config_error() -> None:
    long = "x" * 64  # a label is at most 63 characters: the IDNA codec raised UnicodeError mid-cycle
    with pytest.raises(ConfigError) as caught:
        parse(
            f"targets:\n- {{name: a, url: 'tcp://a..b:5432'}}\n- {{name: b, url: 'tls://{long}.com:443'}}\n"
            "- {name: c, url: 'tls://x.com:443', tls: {server_name: .example.com}}\n"
            f"- {{name: d, url: 'dns:{long}.com'}}\n"
        )
    message = str(caught.value)
    assert "<config>:2: targets[0].url: 'tcp://a..b:5432' is not a tcp address" in message
    assert "<config>:3: targets[1].url: 'tls://xxx" in message and "is not a tls address" in message
    assert "<config>:4: targets[2].tls.server_name: '.example.com' is not a host name" in message
    assert "<config>:5: targets[3].url: 'dns:xxx" in message and "is not a dns address" in message
    assert parse("targets:\n- {name: a, url: 'tls://[::1]:443', tls: {server_name: _x.example.com.}}\n").targets


# -- dns -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dns_server() -> Iterator[DnsServer]:
    records = {("api.test.", "A"): ["192.0.2.1", "192.0.2.2"], ("test.", "MX"): ["10 mail.test."], ("test.", "TXT"): ['"v=spf1 -all"']}
    with DnsServer(records, servfail=("broken.test.",), silent=("silent.test.",)) as server:
        yield server


def dns(url: str, server: DnsServer, **settings: Any) -> Result:
    return check(url=url, dns={"server": server.address, **settings})


def test_a_name_that_resolves_passes(dns_server: DnsServer) -> None:
    result = dns("dns:api.test", dns_server, contains=["192.0.2.2"])
    assert (result.ok, result.kind, result.detail) == (True, "dns", "2 A record(s) for api.test")
    assert result.phases is not None and result.latency_ms == result.phases["resolve"] > 0


def test_answers_equal_and_other_types(dns_server: DnsServer) -> None:
    assert dns("dns:api.test/A", dns_server, equals=["192.0.2.2", "192.0.2.1"]).ok
    assert dns("dns:test/MX", dns_server, contains=["10 mail.test"]).ok
    assert dns("dns:test/TXT", dns_server, contains=["v=spf1 -all"]).ok
    assert dns("dns:api.test", dns_server, protocol="tcp", contains=["192.0.2.1"]).ok


def test_an_unexpected_answer_names_what_is_missing(dns_server: DnsServer) -> None:
    result = dns("dns:api.test", dns_server, contains=["192.0.2.9"])
    assert (result.error, result.detail) == (errors.DNS_UNEXPECTED, "the A answers lack 192.0.2.9")
    assert result.excerpt == "answers: 192.0.2.1, 192.0.2.2"
    assert dns("dns:api.test", dns_server, equals=["192.0.2.1"]).error == errors.DNS_UNEXPECTED
    assert dns("dns:api.test/AAAA", dns_server).detail == "api.test has no AAAA records"


def test_nxdomain_is_a_failure_unless_expected(dns_server: DnsServer) -> None:
    result = dns("dns:gone.test", dns_server)
    assert (result.error, result.severity) == (errors.DNS_NXDOMAIN, "critical")
    assert "gone.test does not exist (NXDOMAIN" in result.detail
    assert dns("dns:gone.test", dns_server, nxdomain=True).ok
    assert dns("dns:api.test", dns_server, nxdomain=True).error == errors.DNS_UNEXPECTED


def test_servfail(dns_server: DnsServer) -> None:
    result = dns("dns:broken.test", dns_server)
    assert (result.error, result.detail) == (errors.DNS_SERVFAIL, "the server 127.0.0.1 could not answer for broken.test (SERVFAIL)")


def test_a_server_that_never_answers_times_out_within_the_target_timeout(dns_server: DnsServer) -> None:
    started = time.monotonic()
    result = check(url="dns:silent.test", timeout="300ms", dns={"server": dns_server.address})
    assert time.monotonic() - started < 2
    assert (result.error, result.severity) == (errors.DNS_TIMEOUT, "critical")


def serve_once(kind: int, reply: Callable[[bytes], list[bytes]]) -> tuple[Any, int]:
    """A loopback socket (SOCK_STREAM or SOCK_DGRAM) that answers its first query with ``reply(query)``, then closes."""
    import socket

    sock = socket.socket(socket.AF_INET, kind)
    sock.bind(("127.0.0.1", 0))

    def serve() -> None:
        if kind == socket.SOCK_STREAM:
            sock.listen(1)
            conn, _ = sock.accept()
            with conn:
                for data in reply(conn.recv(65536)[2:]):
                    conn.sendall(data)
        else:
            query, peer = sock.recvfrom(65536)
            for data in reply(query):
                sock.sendto(data, peer)

    threading.Thread(target=serve, daemon=True).start()
    return sock, sock.getsockname()[1]


def test_a_dns_server_that_closes_mid_answer_is_a_dns_error_and_the_other_targets_still_get_checked() -> None:
    import socket

    sock, port = serve_once(socket.SOCK_STREAM, lambda query: [b"\x00\x40" + query[:2] + b"\x81"])
    with sock, TcpServer("echo") as server:
        results = Checker().run(
            [
                Target.model_validate(
                    {"name": "d", "url": "dns:api.test", "timeout": 2, "dns": {"server": f"127.0.0.1:{port}", "protocol": "tcp"}}
                ),
                Target.model_validate({"name": "t", "url": f"tcp://{server.address}"}),
            ]
        )
    assert [(r.name, r.error) for r in results] == [("d", errors.DNS_ERROR), ("t", None)]
    assert "closed the connection" in results[0].detail


def test_junk_and_replies_to_another_query_are_ignored_until_the_answer(dns_server: DnsServer) -> None:
    import socket

    import dns.message
    import dns.rrset

    def spoofed_first(query: bytes) -> list[bytes]:
        real = dns.message.from_wire(query)
        wrong_id = dns.message.make_response(real)
        wrong_id.id = (real.id + 1) % 65536
        answer = dns.message.make_response(real)
        answer.answer.append(dns.rrset.from_text("api.test.", 60, "IN", "A", "192.0.2.7"))
        return [b"junk", wrong_id.to_wire(), answer.to_wire()]

    sock, port = serve_once(socket.SOCK_DGRAM, spoofed_first)
    with sock:
        result = check(url="dns:api.test", dns={"server": f"127.0.0.1:{port}", "contains": ["192.0.2.7"]})
    assert (result.ok, result.error) == (True, None), result.detail


# -- tls -------------------------------------------------------------------------------------------


class TlsServer:
    """Accepts TLS connections on loopback with ``cert``, completes the handshake, closes."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(cert, key)
        import socket

        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.stopping = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                conn.settimeout(2)
                with self.context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except OSError:
                conn.close()

    def close(self) -> None:
        self.stopping.set()
        self.sock.close()


@pytest.fixture(scope="module")
def tls_port(pki: Path) -> Iterator[int]:
    server = TlsServer(pki / "server.pem", pki / "server.key")
    yield server.port
    server.close()


def test_a_trusted_certificate_reports_days_to_expiry_and_warns_under_cert_min_days(tls_port: int, pki: Path) -> None:
    ca = str(pki / "ca.pem")
    result = check(url=f"tls://127.0.0.1:{tls_port}", ca_file=ca, expect={"cert_min_days": 3})
    assert (result.ok, result.kind) == (True, "tls")
    assert result.detail == "certificate for 127.0.0.1 expires in 5.0 days; chain and name verified"
    assert result.cert_expires_at is not None and 4.9 < (result.cert_expires_at - time.time()) / 86400 <= 5
    assert result.phases is not None and result.phases["tls"] > 0
    expiring = check(url=f"tls://127.0.0.1:{tls_port}", ca_file=ca)  # 14 days unless expect.cert_min_days says
    assert (expiring.severity, expiring.error) == ("warning", errors.CERT_EXPIRING)
    assert "expires in 5.0 days (minimum 14)" in expiring.detail


def test_an_untrusted_chain_and_a_wrong_name(tls_port: int, pki: Path) -> None:
    untrusted = check(url=f"tls://127.0.0.1:{tls_port}")
    assert (untrusted.severity, untrusted.error) == ("critical", errors.CERT_UNTRUSTED)
    mismatch = check(url=f"tls://127.0.0.1:{tls_port}", ca_file=str(pki / "ca.pem"), tls={"server_name": "example.org"})
    assert (mismatch.error, mismatch.detail.split(":")[0]) == (errors.CERT_MISMATCH, "the certificate does not name example.org")
    assert check(url=f"tls://localhost:{tls_port}", ca_file=str(pki / "ca.pem"), expect={"cert_min_days": 1}).ok


def test_verification_off_still_reads_the_expiry(tls_port: int) -> None:
    result = check(url=f"tls://127.0.0.1:{tls_port}", verify_tls=False, expect={"cert_min_days": 1})
    assert result.ok and result.detail.endswith("not verified (verify_tls: false)")
    assert result.cert_expires_at is not None


def test_an_expired_certificate(pki: Path, tmp_path: Path) -> None:
    openssl(
        "x509",
        "-req",
        "-in",
        str(pki / "server.csr"),
        "-CA",
        str(pki / "ca.pem"),
        "-CAkey",
        str(pki / "ca.key"),
        "-CAcreateserial",
        "-out",
        "old.pem",
        "-days",
        "0",
        "-extfile",
        str(pki / "san.cnf"),
        cwd=tmp_path,
    )
    server = TlsServer(tmp_path / "old.pem", pki / "server.key")
    try:
        # a certificate valid for 0 days expires within the second it was made
        address, ca = f"tls://127.0.0.1:{server.port}", str(pki / "ca.pem")
        result = wait_for(lambda: r if (r := check(url=address, ca_file=ca)).error == errors.CERT_EXPIRED else None, timeout=5, every=0.2)
    finally:
        server.close()
    assert (result.severity, result.error) == ("critical", errors.CERT_EXPIRED)


def test_a_port_that_speaks_no_tls_is_a_tls_error_and_nothing_listening_is_refused() -> None:
    with TcpServer("echo") as server:  # answers the ClientHello with bytes that are no TLS
        garbled = check(url=f"tls://{server.address}")
    assert (garbled.error, garbled.detail.split(":")[0]) == ("tls", "TLS handshake failed")
    with TcpServer("close") as server:
        assert check(url=f"tls://{server.address}").error == "connection_reset"
    assert check(url=f"tls://127.0.0.1:{free_port()}").error == "connection_refused"


def test_a_handshake_that_never_finishes_ends_at_the_target_timeout() -> None:
    with TcpServer("silent") as server:  # takes the ClientHello, never answers
        started = time.monotonic()
        result = check(url=f"tls://{server.address}", timeout="300ms")
        took = time.monotonic() - started
    assert (result.error, result.detail) == ("timeout", "no TLS handshake within 0.3s")
    assert took < 0.7  # not the timeout plus half a second spent waiting for the peer to close


# -- the command line ------------------------------------------------------------------------------


def monitor_check(*args: str) -> tuple[int, str]:
    import sys

    done = subprocess.run([sys.executable, "-m", "monitor", "check", *args], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr


def test_monitor_check_takes_tcp_tls_and_dns_addresses_with_nagios_exit_codes(dns_server: DnsServer, tls_port: int, pki: Path) -> None:
    with TcpServer("echo") as server:
        code, out = monitor_check(f"tcp://{server.address}", "dns:api.test/A", "--dns-server", dns_server.address)
    assert code == 0, out
    assert f"OK       tcp://{server.address} - " in out and "OK       dns:api.test/A - " in out
    code, out = monitor_check(f"tls://localhost:{tls_port}", "--timeout", "2s")
    assert code == 2 and "cert_untrusted" in out
    code, out = monitor_check("dns:gone.test", "--dns-server", dns_server.address, "--json")
    assert code == 2 and '"error": "dns_nxdomain"' in out and '"kind": "dns"' in out
    code, out = monitor_check("tcp://db")
    assert code == 3 and "'tcp://db' is not a tcp address" in out


def test_monitor_check_refuses_http_options_that_no_address_given_would_use() -> None:
    code, out = monitor_check(f"tcp://127.0.0.1:{free_port()}", "dns:example.com", "--expect-status", "200")
    assert code == 3 and "--expect-status is for http(s):// URLs; these are dns, tcp checks" in out


def test_the_docs_example_of_every_kind_is_a_valid_config(monkeypatch: pytest.MonkeyPatch) -> None:
    page = (Path(__file__).parent.parent / "docs" / "checks.md").read_text()
    example = page.split('```yaml title="monitor.yaml"\n', 1)[1].split("```", 1)[0]
    monkeypatch.setenv("BACKUP_PING_TOKEN", "B" * 20 + "0123456789abcdefghijklm")
    config = parse(example)
    assert [t.kind for t in config.targets] == ["http", "tcp", "tcp", "tls", "dns", "icmp", "heartbeat"]
    assert config.targets[2].tcp is not None and config.targets[2].tcp.send == "PING\r\n"


class _Counting:
    """A compiled pattern that counts its searches and the characters they scanned."""

    def __init__(self, pattern: str) -> None:
        self.compiled = re.compile(pattern)
        self.pattern = pattern
        self.searches = self.scanned = 0

    def search(self, text: str) -> re.Match[str] | None:
        self.searches += 1
        self.scanned += len(text)
        return self.compiled.search(text)


def drip(data: bytes, *, pause_after: int | None = None, close: bool = False) -> Any:
    """A reader fed one byte at a time (the loop runs between bytes), optionally pausing 0.2 s after
    ``pause_after`` bytes, and closing at the end."""
    import asyncio

    async def run(pattern: _Counting, limit: int = 65536) -> bytes:
        reader = asyncio.StreamReader()

        async def feed() -> None:
            for i in range(len(data)):
                reader.feed_data(data[i : i + 1])
                await asyncio.sleep(0.2 if i + 1 == pause_after else 0)
            if close:
                reader.feed_eof()

        feeder = asyncio.ensure_future(feed())
        try:
            return await asyncio.wait_for(tcp.read_until(reader, pattern, limit), 5)  # type: ignore[arg-type]
        finally:
            feeder.cancel()

    return run


def test_a_reply_written_a_byte_at_a_time_is_not_searched_again_at_every_byte() -> None:
    """A peer writing its 64 KiB reply a byte at a time made 65,536 searches over up to 64 KiB each (2 billion
    characters, seconds of CPU per check); now a reply is searched as it doubles, and when the peer pauses."""
    import asyncio

    pattern = _Counting("READY")
    reply = asyncio.run(drip(b"x" * 60_000 + b"READY")(pattern))
    assert reply.endswith(b"READY")
    assert pattern.scanned < 2_000_000, (pattern.searches, pattern.scanned)


def test_a_match_is_found_when_the_peer_pauses_or_closes_not_only_when_the_reply_grows() -> None:
    import asyncio

    paused = _Counting("220 ")
    assert asyncio.run(drip(b"y" * 5000 + b"220 ready\r\n" + b"z" * 50, pause_after=5011)(paused)).startswith(b"y")
    closed = _Counting("BYE$")
    assert asyncio.run(drip(b"q" * 3000 + b"BYE", close=True)(closed)).endswith(b"BYE")
    with pytest.raises(probing.Found):
        asyncio.run(drip(b"q" * 3000, close=True)(_Counting("BYE")))
