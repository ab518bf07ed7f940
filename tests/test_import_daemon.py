"""Each importer's output runs: the daemon checks the converted upstream examples against loopback servers standing in
for their URLs, and the same targets pass and fail as the source tool's conditions say they should."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import kuma
import pytest
from past import known
from prometheus_client import CollectorRegistry
from servers import free_port, wait_for

from monitor.config import Config
from monitor.daemon import Daemon
from monitor.eval.servers import DnsServer
from monitor.importers import Import, blackbox, gatus, uptime_kuma

FIXTURES = Path(__file__).parent / "fixtures"


class Routes(ThreadingHTTPServer):
    """Answers each path with the (status, body) ``routes`` says at the time; a test changes them while it runs."""

    daemon_threads = True

    def __init__(self, routes: dict[str, tuple[int, bytes]], context: ssl.SSLContext | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.routes = routes
        if context is not None:
            self.socket = context.wrap_socket(self.socket, server_side=True)
        self.scheme = "https" if context else "http"
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server_address[1]}{path}"


class _Handler(BaseHTTPRequestHandler):
    server: Routes

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, body = self.server.routes.get(self.path, (404, b"not found"))
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET


@pytest.fixture
def https(pki: Path) -> Iterator[Routes]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.pem", pki / "server.key")  # expires in 5 days: more than Gatus' 48h
    server = Routes({}, context)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def http() -> Iterator[Routes]:
    server = Routes({})
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def dns() -> Iterator[DnsServer]:
    with DnsServer({("example.com.", "A"): ["192.0.2.1"], ("www.prometheus.io.", "A"): ["192.0.2.2"]}) as server:
        yield server


def running(imported: Import, db_path: str, keep: set[str], **rewrite: dict[str, Any]) -> Daemon:
    """The daemon on the converted config: the targets named in ``keep``, each with the fields in ``rewrite`` (its
    address on loopback), checked every second; alert receivers left out (they are the world's), and the status pages
    with the listener the import gives them (a fixed port, 8080, which another test or program may hold)."""
    left_out = ("alerts", "status_pages", "maintenance", "web")
    document = {key: value for key, value in imported.config.items() if key not in left_out}
    targets = []
    for target in document["targets"]:
        if target["name"] in keep:
            fields = {key: value for key, value in target.items() if key != "alerts"}
            # 5 s: on a loaded machine nas's first check failed once with 2 s (most likely its TLS handshake)
            targets.append({**fields, **rewrite.get(target["name"], {}), "interval": "1s", "timeout": "5s"})
    document |= {"targets": targets, "database": db_path, "model": {"id": "builtin"}, "agent": {"mode": "off"}}
    document |= {"metrics": {"port": 0}}
    daemon = Daemon(Config.model_validate(document), registry=CollectorRegistry())
    daemon.start()
    return daemon


def verdicts(daemon: Daemon, names: set[str], after: int = 0) -> dict[str, bool]:
    """Each target's latest verdict, once each has more than ``after`` results."""
    wait_for(lambda: all(daemon.store.results.count_results(name) > after for name in names), timeout=20)
    return {name: bool(known(daemon.store.results.latest_result(name)).ok) for name in names}


def test_gatus_example_checks_pass_and_fail_as_its_conditions_say(https: Routes, dns: DnsServer, pki: Path, db_path: str) -> None:
    imported = gatus.read(FIXTURES / "gatus" / "config.yaml")
    https.routes.update({"/health": (200, b'{"status": "UP"}'), "/ok": (200, b"ok"), "/500": (500, b"")})
    trusted = {"ca_file": str(pki / "ca.pem")}
    rewrite: dict[str, dict[str, Any]] = {
        "front-end": {"url": https.url("/health"), **trusted},  # [STATUS] == 200, [BODY].status == UP, fast
        "back-end": {"url": https.url("/ok"), **trusted},  # [CERTIFICATE_EXPIRATION] > 48h: 5 days left
        "monitoring": {"url": https.url("/500"), **trusted},  # [STATUS] == 200: fails
        "nas": {"url": https.url("/ok"), **trusted},
        "check-domain-expiration": {"url": https.url("/500"), **trusted},  # its one condition not carried: any status
        "example-dns-query": {"dns": {"server": f"127.0.0.1:{dns.port}"}},
    }
    daemon = running(imported, db_path, set(rewrite), **rewrite)
    try:
        first = verdicts(daemon, set(rewrite))
        https.routes["/health"] = (200, b'{"status": "DOWN"}')  # Gatus: [BODY].status == UP fails
        seen = daemon.store.results.count_results("front-end")
        wait_for(lambda: daemon.store.results.count_results("front-end") > seen + 1, timeout=20)
        later = daemon.store.results.latest_result("front-end")
    finally:
        daemon.stop()
    assert first == {
        "front-end": True, "back-end": True, "monitoring": False, "nas": True, "check-domain-expiration": True,
        "example-dns-query": True,
    }  # fmt: skip
    assert later is not None and not later.ok and "[BODY].status == UP" in str(later.detail)


def test_uptime_kuma_monitors_pass_and_fail_as_kuma_would(tmp_path: Path, http: Routes, dns: DnsServer, db_path: str) -> None:
    path = tmp_path / "kuma.db"
    db = kuma.create(path, "2.x")
    kuma.fill(db, base=f"http://127.0.0.1:{http.server_address[1]}")
    db.close()
    shop = b"<button>Add to cart</button>"
    http.routes.update({"/ok": (200, b"ok"), "/shop": (200, shop), "/api": (200, b'{"status": "UP"}'), "/teapot": (418, b"")})
    keep = {"Web-site", "Shop", "Not-in-maintenance", "API", "Teapot", "Postgres", "DNS"}
    closed = free_port()
    rewrite: dict[str, dict[str, Any]] = {
        "DNS": {"dns": {"server": f"127.0.0.1:{dns.port}"}},
        "Postgres": {"url": f"tcp://127.0.0.1:{closed}"},
    }
    daemon = running(uptime_kuma.read(path), db_path, keep, **rewrite)
    try:
        first = verdicts(daemon, keep)
        http.routes["/shop"] = (200, b"Down for maintenance")  # Kuma: the keyword is gone; the inverted one is there
        http.routes["/api"] = (200, b'{"status": "DOWN"}')
        counts = {name: daemon.store.results.count_results(name) for name in ("Shop", "Not-in-maintenance", "API")}
        wait_for(lambda: all(daemon.store.results.count_results(n) > c + 1 for n, c in counts.items()), timeout=20)
        later = {name: bool(known(daemon.store.results.latest_result(name)).ok) for name in counts}
    finally:
        daemon.stop()
    assert first == {name: name != "Postgres" for name in keep}  # a closed port is down; a 418 accepted is up
    assert later == {"Shop": False, "Not-in-maintenance": False, "API": False}


def test_blackbox_example_modules_probe_as_blackbox_would(tmp_path: Path, http: Routes, dns: DnsServer, db_path: str) -> None:
    http.routes.update({"/good": (200, b"Download the latest version here"), "/dberror": (200, b"Could not connect to database")})
    http.routes["/"] = (200, b"{}")
    port, closed = http.server_address[1], free_port()
    jobs = [
        ("web", "http_2xx_example", [f"http://127.0.0.1:{port}/good", f"http://127.0.0.1:{port}/dberror"]),
        ("post", "http_post_2xx", [f"http://127.0.0.1:{port}/"]),
        ("tcp", "tcp_connect_example", [f"127.0.0.1:{port}", f"127.0.0.1:{closed}"]),
        ("dns", "dns_udp_example", [f"127.0.0.1:{dns.port}"]),
    ]
    scrape = [
        {"job_name": job, "metrics_path": "/probe", "params": {"module": [module]}, "static_configs": [{"targets": targets}]}
        for job, module, targets in jobs
    ]
    (tmp_path / "prometheus.yml").write_text(json.dumps({"scrape_configs": scrape}))
    imported = blackbox.read(FIXTURES / "blackbox" / "example.yml", tmp_path / "prometheus.yml")
    names = {target["name"] for target in imported.targets}
    daemon = running(imported, db_path, names)
    try:
        seen = verdicts(daemon, names)
    finally:
        daemon.stop()
    assert seen == {
        f"web-127.0.0.1:{port}/good": True,  # status 2xx, the body has what it must and not what it must not
        f"web-127.0.0.1:{port}/dberror": False,  # fail_if_body_matches_regexp
        f"post-127.0.0.1:{port}/": True,
        f"tcp-127.0.0.1:{port}": True,
        f"tcp-127.0.0.1:{closed}": False,
        f"dns-127.0.0.1:{dns.port}": False,  # validate_answer_rrs: the answer must be 127.0.0.1, it is 192.0.2.2
    }
