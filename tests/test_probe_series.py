"""/probe's series that blackbox_exporter users graph and alert on besides success: ``probe_http_content_length``,
``probe_http_version`` and ``probe_ip_protocol``, with blackbox's meanings, read off real loopback servers."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from servers import TcpServer
from test_probe import get, listener, promtool, series

from monitor.listener import MetricsServer

BODY = b"hello, probe"
ALLOW = '["http://127.0.0.1:*/*", "http://[::1]:*/*", "tcp://127.0.0.1:*", "tcp://[::1]:*"]'


class _Versions(BaseHTTPRequestHandler):
    """``/old``: an HTTP/1.0 answer with its Content-Length; ``/chunked``: HTTP/1.1 with none (chunked)."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/chunked":
            self.protocol_version = "HTTP/1.1"
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(BODY), BODY))
            return
        self.protocol_version = "HTTP/1.0"
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


class _V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def serving(server: ThreadingHTTPServer) -> Iterator[str]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    assert isinstance(host, str)  # an AF_INET or AF_INET6 address: (host, port, ...)
    yield f"http://{f'[{host}]' if ':' in str(host) else host}:{port}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def site() -> Iterator[str]:
    yield from serving(ThreadingHTTPServer(("127.0.0.1", 0), _Versions))


@pytest.fixture
def site_v6() -> Iterator[str]:
    try:
        server = _V6Server(("::1", 0), _Versions)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    yield from serving(server)


@pytest.fixture
def prober() -> Iterator[MetricsServer]:
    running = listener(f"{{allow: {ALLOW}}}")
    yield running
    running.stop()


def probed(prober: MetricsServer, target: str, module: str = "http_2xx") -> dict[str, float]:
    status, text = get(prober, target=target, module=module)
    assert status == 200, text
    return series(text)


def test_an_http_10_answer_with_its_length(prober: MetricsServer, site: str) -> None:
    status, text = get(prober, target=f"{site}/old", module="http_2xx")
    assert status == 200, text
    promtool(text)
    found = series(text)
    assert found["probe_success"] == 1
    assert found["probe_http_version"] == 1.0
    assert found["probe_http_content_length"] == len(BODY)
    assert found["probe_ip_protocol"] == 4


def test_a_chunked_answer_has_no_length_as_blackbox_says_it(prober: MetricsServer, site: str) -> None:
    found = probed(prober, f"{site}/chunked")
    assert found["probe_success"] == 1
    assert (found["probe_http_version"], found["probe_http_content_length"]) == (1.1, -1)


def test_no_answer_is_version_0_and_length_0(prober: MetricsServer) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, not listening: refused
        found = probed(prober, f"http://127.0.0.1:{port}/")
    assert found["probe_success"] == 0
    assert (found["probe_http_version"], found["probe_http_content_length"]) == (0, 0)
    assert found["probe_ip_protocol"] == 4  # resolved, then refused: blackbox names the protocol all the same


def test_the_ip_protocol_is_6_over_ipv6(prober: MetricsServer, site_v6: str) -> None:
    found = probed(prober, f"{site_v6}/old")
    assert found["probe_success"] == 1 and found["probe_ip_protocol"] == 6


def test_a_tcp_probe_names_its_ip_protocol_too(prober: MetricsServer) -> None:
    with TcpServer() as tcp:
        found = probed(prober, f"127.0.0.1:{tcp.server_address[1]}", module="tcp_connect")
    assert found["probe_success"] == 1 and found["probe_ip_protocol"] == 4
    assert "probe_http_version" not in found  # http's own series stay http's
