"""``monitor import blackbox``: blackbox_exporter's own example.yml, with a prometheus.yml in its README's style."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor import config
from monitor.importers import Unreadable, blackbox

FIXTURES = Path(__file__).parent / "fixtures" / "blackbox"


def test_the_upstream_example_modules_and_the_probe_jobs_convert_and_validate() -> None:
    imported = blackbox.read(FIXTURES / "example.yml", FIXTURES / "prometheus.yml")
    cfg = config.parse(imported.yaml())
    assert {"http_2xx_example", "http_post_2xx", "tcp_connect_example", "icmp_example", "dns_udp_example"} <= set(cfg.probe.modules)
    assert cfg.probe.modules["tls_connect"].prober == "tls"  # blackbox's tcp with tls: true
    assert cfg.probe.modules["dns_tcp_example"].dns.protocol == "tcp"  # type: ignore[union-attr]
    by_url = {t.url: t for t in cfg.targets}
    assert sorted(by_url) == [
        "dns:www.prometheus.io/A", "http://example.com:8080", "http://prometheus.io", "https://api.example.com/v1/orders",
        "https://prometheus.io", "icmp://gateway.example.com", "tcp://db.example.com:5432",
    ]  # fmt: skip
    web = by_url["http://prometheus.io"]
    assert web.expect.body_not_contains == "Could not connect to database" and web.headers["Origin"] == "example.com"
    assert web.labels == {"team": "web", "job": "blackbox", "module": "http_2xx_example"} and web.interval == 30
    assert web.timeout == 5
    orders = by_url["https://api.example.com/v1/orders"]  # from the file_sd file
    assert orders.method == "POST" and orders.body == "{}" and orders.labels["team"] == "orders"
    assert by_url["tcp://db.example.com:5432"].interval == 60  # the job's own scrape_interval
    dns = by_url["dns:www.prometheus.io/A"]
    assert dns.dns is not None and dns.dns.server == "8.8.8.8"
    assert cfg.probe.allows("http://prometheus.io/") and not cfg.probe.allows("http://other.example/")
    reported = imported.report()
    for expected in (
        "modules.http_with_proxy.http.proxy_url",
        "modules.smtp_starttls.tcp.query_response",
        "modules.unix_socket_ping: the unix prober",
        "modules.websocket_example_basic_auth: the websocket prober",
        "modules.dns_udp_example.dns.validate_answer_rrs",
        "scrape_configs[5] (blackbox_all).dns_sd_configs",
        "scrape_configs[6] (blackbox_exporter): not a probe job",
    ):
        assert expected in reported


def test_a_missing_or_foreign_file_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "p.yml").write_text("scrape_configs: []\n")
    with pytest.raises(Unreadable, match="not a blackbox_exporter config"):
        blackbox.read(tmp_path / "p.yml", tmp_path / "p.yml")
    with pytest.raises(Unreadable):
        blackbox.read(tmp_path / "none.yml", tmp_path / "p.yml")


def test_a_literal_dollar_brace_in_a_module_or_a_target_stays_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither blackbox_exporter nor Prometheus substitutes ${...}: it is written $${...}, and the report says where."""
    (tmp_path / "blackbox.yml").write_text(
        "modules:\n  http_trace:\n    prober: http\n    http:\n      method: POST\n      body: '${PATH}'\n"
        "      headers: {X-Trace: '${AWS_SECRET_ACCESS_KEY}'}\n"
    )
    (tmp_path / "prometheus.yml").write_text(
        "scrape_configs:\n  - job_name: trace\n    metrics_path: /probe\n    params: {module: [http_trace]}\n"
        "    static_configs:\n      - targets: ['http://app.example.test/q?q=${MONITOR_WEB_TOKEN}']\n"
    )
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-of-the-daemon")
    monkeypatch.setenv("MONITOR_WEB_TOKEN", "web-token-of-the-daemon")
    imported = blackbox.read(tmp_path / "blackbox.yml", tmp_path / "prometheus.yml")
    cfg = config.parse(imported.yaml())
    module = cfg.probe.modules["http_trace"]
    assert module.headers == {"X-Trace": "${AWS_SECRET_ACCESS_KEY}"} and module.body == "${PATH}"
    [target] = cfg.targets
    assert target.url == "http://app.example.test/q?q=${MONITOR_WEB_TOKEN}" and target.body == "${PATH}"
    assert target.headers == {"X-Trace": "${AWS_SECRET_ACCESS_KEY}"}
    report = imported.report()
    assert "does not substitute ${...}" in report and "probe.modules.http_trace.headers.X-Trace" in report


def test_answer_validation_carries_as_gatus_dns_conditions_do_and_rule_files_are_named(tmp_path: Path) -> None:
    """issue 43: validate_answer_rrs was dropped and rule_files ignored without a word."""
    imported = blackbox.read(FIXTURES / "example.yml", FIXTURES / "prometheus.yml")
    dns = config.parse(imported.yaml()).probe.modules["dns_udp_example"].dns
    assert dns is not None and dns.contains == ["127.0.0.1"] and dns.equals == ["127.0.0.1"]  # none matches / not matches
    report = imported.report()
    assert "dns_udp_example.dns.validate_answer_rrs.fail_if_matches_regexp: a dns check here names answers that must" in report
    assert "dns_udp_example.dns.validate_answer_rrs.fail_if_none_matches_regexp" not in report
    (tmp_path / "prometheus.yml").write_text("rule_files: [rules/*.yml]\nscrape_configs: []\n")
    ruled = blackbox.read(FIXTURES / "example.yml", tmp_path / "prometheus.yml").report()
    assert "not carried: rule_files: Prometheus' alerting and recording rules are not read" in ruled
