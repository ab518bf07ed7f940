"""/metrics and the store never block each other; the metrics server holds no thread per idle socket (issue 8, 13-14)."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from typing import Any

from prometheus_client import CollectorRegistry
from servers import wait_for

from monitor.checks.engine import Result
from monitor.config import Config
from monitor.daemon import Daemon, daemon_cycle
from monitor.listener import MetricsServer
from monitor.metrics import Metrics
from monitor.store import Store
from monitor.store.writes import IncidentWrites


def result(at: float, ok: bool = True) -> Result:
    return Result(
        "api", "http://api/", ok, "ok" if ok else "critical", 200 if ok else 500, 5.0, None if ok else "unexpected_status", "", at
    )


def config(db_path: str) -> Config:
    return Config.model_validate(
        {
            "database": db_path,
            "agent": {"mode": "off"},
            "metrics": {"enabled": False},
            "targets": [{"name": "api", "url": "http://127.0.0.1:9/", "timeout": "1s"}],
        }
    )


def held_by_another_thread(lock: Any) -> bool:
    if lock.acquire(blocking=False):
        lock.release()
        return False
    return True


def test_a_scrape_never_waits_on_a_database_writer(db_path: str, write_lock: Any) -> None:
    store = Store(db_path, timeout=20)
    daemon = Daemon(config(db_path), store=store, registry=CollectorRegistry())
    assert b"monitor_memory_incidents 0.0" in daemon.metrics.scrape()
    with write_lock(db_path):
        writer = threading.Thread(target=store.results.add_results, args=([result(1.0)],))
        writer.start()  # waits for the lock, holding the store, as a cycle does
        wait_for(lambda: held_by_another_thread(store._lock))
        scraped: list[bytes] = []
        scraper = threading.Thread(target=lambda: scraped.append(daemon.metrics.scrape()))
        started = time.monotonic()
        scraper.start()
        scraper.join(3.0)
        assert not scraper.is_alive(), "the scrape waited on the writer"
        assert time.monotonic() - started < 3.0
        assert b"monitor_db_size_bytes" in scraped[0] and b"monitor_memory_incidents 0.0" in scraped[0]
    writer.join()
    IncidentWrites(store).open_incident("api", "consecutive", "down")
    wait_for(lambda: b"monitor_memory_incidents 1.0" in daemon.metrics.scrape())  # fresh again once free
    daemon.close()


def test_a_cycle_that_meets_a_locked_database_keeps_its_results(db_path: str, write_lock: Any) -> None:
    store = Store(db_path, timeout=0.05)
    cycle = daemon_cycle(config(db_path), store, metrics=Metrics(CollectorRegistry()))
    with write_lock(db_path):
        assert cycle.after_checks([result(1.0, ok=False)]) == []
        assert cycle.after_checks([result(2.0, ok=False)]) == []
    cycle.after_checks([result(3.0, ok=False)])
    assert [r.checked_at for r in store.results.recent_results("api")] == [3.0, 2.0, 1.0]
    store.close()


def open_threads() -> int:
    return threading.active_count()


def test_idle_sockets_hold_no_threads_and_scrapes_still_answer() -> None:
    metrics = Metrics(CollectorRegistry())
    server = MetricsServer(metrics, "127.0.0.1", 0, max_age=60).start()
    host, port = server.server_address[:2]
    before = open_threads()
    idle: list[socket.socket] = []
    try:
        for _ in range(300):
            idle.append(socket.create_connection((str(host), int(port))))
        with urllib.request.urlopen(f"{server.url}/metrics", timeout=5) as answer:
            assert answer.status == 200 and b"monitor_last_cycle_timestamp_seconds" in answer.read()
        assert open_threads() - before <= 8
    finally:
        for sock in idle:
            sock.close()
        server.stop()


def connect(server: MetricsServer) -> socket.socket:
    host, port = server.server_address[:2]
    sock = socket.create_connection((str(host), int(port)))
    sock.settimeout(5)
    return sock


def test_an_idle_connection_is_closed_after_the_idle_timeout() -> None:
    server = MetricsServer(Metrics(CollectorRegistry()), "127.0.0.1", 0, max_age=60, idle_timeout=0.2).start()
    try:
        with connect(server) as sock:
            assert sock.recv(1) == b""  # closed by the server, well before our 5 s
    finally:
        server.stop()


def test_past_the_cap_the_oldest_idle_connections_are_closed() -> None:
    server = MetricsServer(Metrics(CollectorRegistry()), "127.0.0.1", 0, max_age=60, idle_timeout=60, max_connections=4).start()
    try:
        crowd = [connect(server) for _ in range(10)]
        for sock in crowd[:6]:
            assert sock.recv(1) == b""
        newest = crowd[-1]
        newest.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        assert newest.recv(100).startswith(b"HTTP/1.0 503")  # the newest are still served
        for sock in crowd:
            sock.close()
    finally:
        server.stop()


def test_results_still_kept_back_at_shutdown_are_reported(db_path: str, caplog: Any, write_lock: Any) -> None:
    daemon = Daemon(config(db_path), store=Store(db_path, timeout=0.05), registry=CollectorRegistry())
    with write_lock(db_path):
        daemon.cycle.after_checks([result(1.0), result(2.0)])
        with caplog.at_level("ERROR", logger="monitor.daemon"):
            daemon.close()
    assert "2 check results were not stored" in caplog.text


def test_clients_that_drip_their_request_hold_no_worker() -> None:
    server = MetricsServer(Metrics(CollectorRegistry()), "127.0.0.1", 0, max_age=60, workers=2).start()
    drips = [connect(server) for _ in range(8)]
    try:
        for sock in drips:
            sock.sendall(b"GET /metr")  # and never the rest
        started = time.monotonic()
        with urllib.request.urlopen(f"{server.url}/metrics", timeout=4) as answer:
            assert answer.status == 200
        assert time.monotonic() - started < 2
    finally:
        for sock in drips:
            sock.close()
        server.stop()
