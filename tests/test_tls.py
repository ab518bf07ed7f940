"""TLS targets: verification errors, private CAs, certificate expiry as a WARNING."""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from monitor.checks.engine import Checker
from monitor.config import ConfigError, Target, parse
from monitor.core import errors


class _Ok(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


@pytest.fixture(scope="module")
def https_url(pki: Path) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.pem", pki / "server.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def test_an_untrusted_certificate_is_a_tls_error(https_url: str) -> None:
    [result] = Checker().run([Target(name="s", url=https_url, timeout=2)])
    assert result.error == errors.TLS and "certificate verify failed" in result.detail


def test_a_private_ca_verifies_and_the_expiry_is_known(https_url: str, pki: Path) -> None:
    [result] = Checker().run([Target(name="s", url=https_url, timeout=2, ca_file=str(pki / "ca.pem"))])
    assert result.ok and result.cert_expires_at is not None
    assert 4 < (result.cert_expires_at - time.time()) / 86400 <= 5


def test_a_certificate_that_expires_soon_is_a_warning(https_url: str, pki: Path) -> None:
    target = Target.model_validate(
        {"name": "s", "url": https_url, "timeout": 2, "ca_file": str(pki / "ca.pem"), "expect": {"cert_min_days": 14}}
    )
    [result] = Checker().run([target])
    assert (result.severity, result.error) == ("warning", errors.CONDITION)
    assert "certificate expires in 5.0 days (minimum 14)" in result.detail


def test_verification_off_accepts_the_certificate(https_url: str) -> None:
    [result] = Checker().run([Target(name="s", url=https_url, timeout=2, verify_tls=False)])
    assert result.ok


def test_a_missing_ca_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"targets\[0\].ca_file: '/nope.pem' is not a file"):
        parse("targets:\n- {name: a, url: 'https://a/', ca_file: /nope.pem}\n")


class _OkStaysOpen(BaseHTTPRequestHandler):
    """Answers ``Connection: close`` and then holds the connection open: no TLS close_notify, no FIN, for 3 s."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"ok")
        self.wfile.flush()
        self.server.stopping.wait(3)  # type: ignore[attr-defined]


def test_a_one_shot_check_of_a_tls_peer_that_never_closes_leaves_no_socket_open(pki: Path) -> None:
    """Closing a TLS connection politely waits for the peer's close_notify; a one-shot check's event loop
    (``Checker.run``, as ``monitor check`` runs it) ends first, and the socket under it was left open
    (a ResourceWarning at the garbage collector: this test failed at its teardown)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OkStaysOpen)
    server.daemon_threads = True
    server.stopping = threading.Event()  # type: ignore[attr-defined]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.pem", pki / "server.key")
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"https://127.0.0.1:{server.server_address[1]}/"
        [result] = Checker().run([Target(name="s", url=url, timeout=2, ca_file=str(pki / "ca.pem"))])
        assert result.ok
    finally:
        server.stopping.set()  # type: ignore[attr-defined]
        server.shutdown()
        server.server_close()
