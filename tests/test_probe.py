"""/probe on the metrics listener: blackbox_exporter's answer (checked by promtool), its guard, its bounds."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from servers import Misbehaving, TcpServer, wait_for

from monitor.config import ConfigError, parse
from monitor.listener import MetricsServer
from monitor.listener.probe import Prober
from monitor.metrics import Metrics

ALLOW = ["http://127.0.0.1:*/*", "tcp://127.0.0.1:*", "icmp://127.0.0.1"]


class _Away(BaseHTTPRequestHandler):
    """Redirects to the same server under another name (localhost), which probe.allow does not list."""

    server: ThreadingHTTPServer

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(302)
        self.send_header("Location", f"http://localhost:{self.server.server_port}/")
        self.send_header("Content-Length", "0")
        self.end_headers()


def listener(probe: str, **options: object) -> MetricsServer:
    config = parse(f"targets: []\nprobe: {probe}\n")
    return MetricsServer(Metrics(CollectorRegistry()), "127.0.0.1", 0, 60, prober=Prober(lambda: config.probe), **options).start()  # type: ignore[arg-type]


@pytest.fixture
def server() -> Iterator[MetricsServer]:
    running = listener(f"{{allow: {ALLOW}, modules: {{slow: {{prober: http, timeout: 10s}}}}}}")
    yield running
    running.stop()


def get(server: MetricsServer, headers: dict[str, str] | None = None, **params: str) -> tuple[int, str]:
    request = urllib.request.Request(f"{server.url}/probe?{urlencode(params)}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def series(text: str) -> dict[str, float]:
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            label = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            found[f"{sample.name}{{{label}}}" if label else sample.name] = sample.value
    return found


def promtool(text: str) -> None:
    if shutil.which("promtool") is None:
        pytest.skip("promtool is not installed")
    done = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_http_probe_answers_in_blackbox_series_that_promtool_accepts(server: MetricsServer, web: Misbehaving) -> None:
    status, text = get(server, target=web.url("/healthy"), module="http_2xx")
    promtool(text)
    found = series(text)
    assert status == 200 and found["probe_success"] == 1 and found["probe_http_status_code"] == 200
    assert 0 < found["probe_duration_seconds"] < 5 and found["probe_http_ssl"] == 0
    assert {
        "probe_http_duration_seconds{phase=connect}",
        "probe_http_duration_seconds{phase=processing}",
        "probe_dns_lookup_time_seconds",
    } <= set(found)
    failed = series(get(server, target=web.url("/500"), module="http_2xx")[1])
    assert (failed["probe_success"], failed["probe_http_status_code"]) == (0, 500)


def test_tcp_and_icmp_probes(server: MetricsServer) -> None:
    with TcpServer() as tcp:
        status, text = get(server, target=f"127.0.0.1:{tcp.server_address[1]}", module="tcp_connect")
    promtool(text)
    assert status == 200 and series(text)["probe_success"] == 1
    status, text = get(server, target="127.0.0.1", module="icmp")
    promtool(text)  # answered or forbidden by the kernel, a probe is series either way
    assert status == 200 and "probe_icmp_duration_seconds{phase=rtt}" in series(text)


def test_a_certificate_expiry_is_the_earliest_cert_expiry(pki: object, tmp_path: object) -> None:
    from pathlib import Path

    assert isinstance(pki, Path)
    import ssl

    https = ThreadingHTTPServer(("127.0.0.1", 0), _Away)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.pem", pki / "server.key")
    https.socket = context.wrap_socket(https.socket, server_side=True)
    threading.Thread(target=https.serve_forever, daemon=True).start()
    running = listener(f"{{allow: ['tls://127.0.0.1:*'], modules: {{tls: {{prober: tls, ca_file: '{pki / 'ca.pem'}'}}}}}}")
    try:
        text = get(running, target=f"127.0.0.1:{https.server_address[1]}", module="tls")[1]
    finally:
        running.stop()
        https.shutdown()
        https.server_close()
    promtool(text)
    found = series(text)
    assert found["probe_success"] == 1 and 4 * 86400 < found["probe_ssl_earliest_cert_expiry"] - time.time() <= 5 * 86400


def test_probe_refuses_every_target_until_allow_lists_it(web: Misbehaving) -> None:
    closed = listener("{}")
    try:
        status, text = get(closed, target=web.url("/healthy"), module="http_2xx")
    finally:
        closed.stop()
    assert (status, text) == (403, "probe.allow is empty: /probe refuses every target until the config lists those it may probe\n")


@pytest.mark.parametrize(
    "target",
    [
        "http://example.com/",
        "example.com",
        "http://127.0.0.1@example.com/",
        "http://example.com/?http://127.0.0.1:1/",
        "http://127.0.0.1.example.com/",
    ],
)
def test_a_target_outside_allow_is_refused(server: MetricsServer, target: str) -> None:
    status, text = get(server, target=target, module="http_2xx")
    assert status == 403 and "is not in probe.allow" in text


def test_a_redirect_outside_allow_is_not_followed(server: MetricsServer) -> None:
    away = ThreadingHTTPServer(("127.0.0.1", 0), _Away)
    threading.Thread(target=away.serve_forever, daemon=True).start()
    try:
        status, text = get(server, target=f"http://127.0.0.1:{away.server_address[1]}/", module="http_2xx", debug="true")
    finally:
        away.shutdown()
        away.server_close()
    assert status == 200 and "redirect_refused" in text and "probe_success 0.0" in text


def test_bad_requests_say_what_is_wrong(server: MetricsServer) -> None:
    assert get(server, target="127.0.0.1", module="nope") == (
        400,
        "unknown module 'nope'; modules: http_2xx, http_post_2xx, icmp, slow, tcp_connect, tls_connect\n",
    )
    assert get(server, module="http_2xx")[0] == 400
    status, text = get(server, target="127.0.0.1:99999", module="tcp_connect")
    assert status in (400, 403), text


def test_the_scrape_timeout_bounds_a_probe(server: MetricsServer, web: Misbehaving) -> None:
    started = time.monotonic()
    status, text = get(server, {"X-Prometheus-Scrape-Timeout-Seconds": "1.5"}, target=web.url("/hang"), module="slow")
    assert status == 200 and series(text)["probe_success"] == 0
    assert time.monotonic() - started < 3  # the module's 10 s, cut to the scrape's 1.5 s less 0.5


def test_probes_at_once_are_bounded_and_metrics_still_answer(web: Misbehaving) -> None:
    running = listener(f"{{allow: {ALLOW}, concurrency: 1, modules: {{slow: {{prober: http, timeout: 2s}}}}}}")
    answers: list[int] = []
    try:
        threads = [
            threading.Thread(target=lambda: answers.append(get(running, target=web.url("/hang"), module="slow")[0])) for _ in range(6)
        ]
        for thread in threads:
            thread.start()
        wait_for(lambda: answers.count(503) == 3)  # the probes are in: one running, two waiting, three turned away
        # a scrape of /metrics must not wait behind them
        started = time.monotonic()
        with urllib.request.urlopen(f"{running.url}/metrics", timeout=5) as scrape:
            assert scrape.status == 200 and time.monotonic() - started < 1
        for thread in threads:
            thread.join(15)
    finally:
        running.stop()
    assert sorted(answers).count(503) == 3 and sorted(answers).count(200) == 3  # 1 running + 2 waiting


def test_probe_config_errors_have_their_line() -> None:
    with pytest.raises(ConfigError) as caught:
        parse(
            "targets: []\nprobe:\n  allow:\n    - '*'\n  modules:\n    lookup: {prober: dns}\n"
            "    web: {prober: http, conditions: ['[STATUS] = 1']}\n",
            "m.yaml",
        )
    text = str(caught.value)
    assert "m.yaml:3: probe.allow: '*' is not an address pattern" in text
    assert "m.yaml:6: probe.modules.lookup: a dns module needs query" in text
    assert "m.yaml:7: probe.modules.web.conditions[0]: '[STATUS] = 1': a condition is LEFT OP RIGHT" in text
