"""Hostile input, round three: slow clients, a locked database and a crowd of half-sent requests leave both
listeners answering, with descriptors bounded (real sockets on loopback)."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from past import known
from prometheus_client import CollectorRegistry
from servers import wait_for

from monitor.checks.heartbeat import Heartbeats
from monitor.config import Config, Target
from monitor.listener import MAX_PING_BODY, MetricsServer
from monitor.metrics import Metrics
from monitor.store import Store
from monitor.web.app import create_app
from monitor.web.guard import Guard
from monitor.web.server import WebServer, _listener

TOKEN = "T" * 20 + "ok_-token-of-test-0123456789"


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def ask(url: str, request: bytes, timeout: float = 5.0) -> tuple[int, float]:
    """The status of a raw ``request`` and how long the answer took (0 for a connection closed unanswered)."""
    started = time.monotonic()
    with socket.create_connection(address(url), timeout=timeout) as sock:
        sock.sendall(request)
        answer = b""
        while b"\r\n" not in answer and (chunk := sock.recv(4096)):
            answer += chunk
    status = int(answer.split()[1]) if answer.startswith(b"HTTP/") else 0
    return status, time.monotonic() - started


def healthz(url: str, timeout: float = 5.0) -> float:
    """Seconds /healthz took to answer (200 or 503: the daemon's verdict, not the listener's)."""
    status, took = ask(url, b"GET /healthz HTTP/1.0\r\n\r\n", timeout)
    assert status in (200, 503)
    return took


def slow_head(url: str, path: str = "/metrics") -> socket.socket:
    """A connection that sent part of its request line, as a slowloris does, and then nothing."""
    sock = socket.create_connection(address(url))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n".encode())
    return sock


def slow_body(url: str) -> socket.socket:
    """A ping whose head is whole and whose body promises 9,000 bytes and sends one."""
    sock = socket.create_connection(address(url))
    sock.sendall(b"POST /ping/xxxxxxxx HTTP/1.1\r\nHost: x\r\nContent-Length: 9000\r\n\r\nx")
    return sock


def taken_in(server: MetricsServer) -> int:
    """Connections the server has accepted: those whose request is still arriving, and those it closed."""
    return server.connections + server.refusals.total


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
def metrics_server() -> Iterator[MetricsServer]:
    server = MetricsServer(Metrics(CollectorRegistry()), "127.0.0.1", 0, max_age=60).start()
    yield server
    server.stop()


def test_slow_ping_bodies_hold_no_worker(metrics_server: MetricsServer) -> None:
    crowd = [slow_body(metrics_server.url) for _ in range(16)]
    try:
        wait_for(lambda: taken_in(metrics_server) == len(crowd), timeout=5)
        assert max(healthz(metrics_server.url) for _ in range(5)) < 1.0
    finally:
        for sock in crowd:
            sock.close()


def test_200_slow_connections_leave_healthz_answering_with_descriptors_bounded(metrics_server: MetricsServer) -> None:
    before = descriptors()
    crowd = [slow_head(metrics_server.url) for _ in range(100)] + [slow_body(metrics_server.url) for _ in range(100)]
    try:
        wait_for(lambda: taken_in(metrics_server) == len(crowd), timeout=5)
        assert max(healthz(metrics_server.url) for _ in range(5)) < 1.0
        held_by_server = descriptors() - before - len(crowd)
        assert held_by_server <= metrics_server.max_connections + 4, held_by_server
    finally:
        for sock in crowd:
            sock.close()


def test_pings_during_a_database_lock_get_503_within_seconds_and_healthz_never_waits(db_path: str, write_lock: Any) -> None:
    store = Store(db_path)  # the production busy timeout: 30 s
    beats = Heartbeats(
        store, [Target.model_validate({"name": "backup", "kind": "heartbeat", "heartbeat": {"token": TOKEN, "period": "60s"}})]
    )
    server = MetricsServer(Metrics(CollectorRegistry()), "127.0.0.1", 0, 60, pings=beats.record).start()
    answers: list[tuple[int, float]] = []
    ping = f"POST /ping/{TOKEN} HTTP/1.0\r\nContent-Length: 2\r\n\r\nok".encode()
    try:
        with write_lock(db_path):
            jobs = [threading.Thread(target=lambda: answers.append(ask(server.url, ping, timeout=8))) for _ in range(5)]
            for job in jobs:
                job.start()
            time.sleep(0.3)
            assert max(healthz(server.url, timeout=3) for _ in range(3)) < 1.0
            for job in jobs:
                job.join(10)
        assert [status for status, _ in answers] == [503] * 5
        assert max(took for _, took in answers) < 5.0  # curl -m 10 sees the 503, not a timeout
        assert ask(server.url, ping)[0] == 200  # and the retry, once the lock is gone, is taken
    finally:
        server.stop()
        store.close()


def chunked(body: bytes, size: int = 1000) -> bytes:
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def test_a_chunked_ping_body_is_taken_up_to_the_cap(db_path: str) -> None:
    store = Store(db_path)
    beats = Heartbeats(
        store, [Target.model_validate({"name": "backup", "kind": "heartbeat", "heartbeat": {"token": TOKEN, "period": "60s"}})]
    )
    server = MetricsServer(Metrics(CollectorRegistry()), "127.0.0.1", 0, 60, pings=beats.record).start()
    head = f"POST /ping/{TOKEN} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
    try:
        assert ask(server.url, head + chunked(b"x" * MAX_PING_BODY))[0] == 200
        assert known(store.results.heartbeat("backup"))["last_ping"] is not None
        assert ask(server.url, head + chunked(b"x" * (MAX_PING_BODY + 1)))[0] == 413
        assert ask(server.url, head + b"zz\r\nxx\r\n0\r\n\r\n")[0] == 400
    finally:
        server.stop()
        store.close()


def test_a_port_in_use_is_named_with_its_listener() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"metrics listener cannot listen on 127.0.0.1:{port}: Address already in use"):
            MetricsServer(Metrics(CollectorRegistry()), "127.0.0.1", port, 60)
        with pytest.raises(OSError, match=f"web UI cannot listen on 127.0.0.1:{port}: Address already in use"):
            _listener("127.0.0.1", port)


def test_connections_closed_unanswered_are_one_log_line(metrics_server: MetricsServer, caplog: pytest.LogCaptureFixture) -> None:
    metrics_server.max_connections = 4
    with caplog.at_level(logging.WARNING, logger="monitor.metrics"):
        crowd = [slow_head(metrics_server.url) for _ in range(50)]
        wait_for(lambda: taken_in(metrics_server) == len(crowd), timeout=5)
        for sock in crowd:
            sock.close()
    lines = [r.getMessage() for r in caplog.records if "closed connections unanswered" in r.getMessage()]
    assert len(lines) == 1 and "made room for a newer connection" in lines[0]


# -- the web UI's listener -----------------------------------------------------------------------------


@pytest.fixture
def web(db_path: str) -> Iterator[WebServer]:
    store = Store(db_path)
    server = WebServer(create_app(store, Config()), "127.0.0.1", 0, guard=Guard(max_connections=20, read_timeout=1.0)).start()
    yield server
    server.stop()
    store.close()


def test_a_web_client_dripping_its_head_is_closed_at_the_read_deadline(web: WebServer) -> None:
    sock = slow_head(web.url, "/")
    sock.settimeout(0.3)
    started, closed = time.monotonic(), False
    try:
        while not closed and time.monotonic() - started < 4:
            try:
                sock.sendall(b"X-Drip: 1\r\n")  # a header line now and then: a keep-alive timer is reset by each
                closed = sock.recv(100) == b""
            except TimeoutError:
                continue
            except OSError:
                closed = True
        assert closed and time.monotonic() - started < 2.5
    finally:
        sock.close()


def test_200_half_sent_requests_leave_the_web_ui_answering_with_descriptors_bounded(
    web: WebServer, caplog: pytest.LogCaptureFixture
) -> None:
    before = descriptors()
    with caplog.at_level(logging.WARNING, logger="monitor.web"):
        crowd = [slow_head(web.url, "/") for _ in range(100)] + [slow_body(web.url) for _ in range(100)]
        try:
            wait_for(lambda: len(web.guard.open) + web.guard.refusals.total == len(crowd), timeout=5)
            held_by_server = descriptors() - before - len(crowd)
            assert held_by_server <= web.guard.max_connections + 4, held_by_server
            status, took = ask(web.url, b"GET /api/v1/targets HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert status == 200 and took < 1.0
        finally:
            for sock in crowd:
                sock.close()
    assert len([r for r in caplog.records if "closed connections unanswered" in r.getMessage()]) == 1
