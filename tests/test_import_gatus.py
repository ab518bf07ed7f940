"""``monitor import gatus``: Gatus' own example configs, converted, validated, and every field left behind reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor import config
from monitor.importers import Unreadable, gatus
from monitor.importers.report import Import

FIXTURES = Path(__file__).parent / "fixtures" / "gatus"


def converted(name: str) -> tuple[Import, config.Config]:
    imported = gatus.read(FIXTURES / name)
    return imported, config.parse(imported.yaml(), name)


def test_the_upstream_config_converts_validates_and_reports_what_it_could_not_carry() -> None:
    imported, cfg = converted("config.yaml")
    assert [t.name for t in cfg.targets] == [
        "front-end", "back-end", "monitoring", "nas", "example-dns-query", "icmp-ping", "check-domain-expiration",
    ]  # fmt: skip
    front = cfg.target("front-end")
    assert front.group == "core" and front.interval == 300
    assert [str(c) for c in front.conditions] == ["[STATUS] == 200", "[BODY].status == UP", "[RESPONSE_TIME] < 150"]
    dns = cfg.target("example-dns-query")
    assert dns.kind == "dns" and dns.url == "dns:example.com/A" and dns.dns is not None and dns.dns.server == "8.8.8.8"
    assert cfg.target("icmp-ping").kind == "icmp"
    assert [str(item) for item in imported.skipped] == [
        "endpoints[4] (example-dns-query).conditions[0]: [BODY] == pat(*.*.*.*): a dns target's answers are compared "
        "exactly (dns.contains), not by pattern; any answer passes",
        "endpoints[6] (check-domain-expiration).conditions[0]: [DOMAIN_EXPIRATION] > 720h: domain registration expiry "
        "is not checked here (certificate expiry is: [CERTIFICATE_EXPIRATION])",
    ]
    # Gatus judges a status only when a condition names it: a target left with none accepts any status
    assert cfg.target("check-domain-expiration").expect.status == frozenset(range(100, 600))
    page = cfg.status_pages[0]
    assert [(g.name, g.targets) for g in page.groups][:2] == [("core", ["front-end", "back-end"]), ("internal", ["monitoring", "nas"])]


def test_alerts_thresholds_external_endpoints_maintenance_and_ui() -> None:
    imported, cfg = converted("readme-examples.yaml")
    endpoint = cfg.target("endpoint-1")  # slack's default-alert: 5 failures, 5 successes, send on resolved
    assert endpoint.detectors is not None and (endpoint.detectors.consecutive, endpoint.detectors.recover_after) == (5, 5)
    assert endpoint.alerts is not None and endpoint.alerts.receivers == ["apprise"] and endpoint.alerts.send_resolved
    assert cfg.alerts.notify == ["https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"]
    assert cfg.target("example").alerts.receivers == ["apprise", "custom"]  # type: ignore[union-attr]
    example = cfg.target("example")  # slack 5/5 and custom 3/2: opens at 3 failures, slack hears at the 5th
    assert example.detectors is not None and (example.detectors.consecutive, example.detectors.recover_after) == (3, 5)
    assert not example.detectors.window and not example.detectors.flapping
    assert example.alerts is not None and example.alerts.per_receiver["apprise"].failures == 5
    assert example.alerts.per_receiver["custom"].successes == 2  # resolved to custom at 2 passes, to slack at 5
    custom = cfg.alerts.webhooks[0]
    assert custom.method == "POST" and custom.body is not None
    assert custom.body.strip() == '{"text": "{{ "RESOLVED" if resolved else "TRIGGERED" }}: {{ target }} - {{ description }}"}'
    assert cfg.target("redis").alerts.receivers == []  # type: ignore[union-attr]  # no alerts in Gatus: pages nobody
    graphql = cfg.target("graphql")
    assert graphql.method == "POST" and graphql.body is not None and graphql.body.startswith('{"query": "{\\n  user(id: 0)')
    assert cfg.target("example-dns-query").dns.contains == ["93.184.215.14"]  # type: ignore[union-attr]
    beat = cfg.target("ext-ep-test")
    assert beat.kind == "heartbeat" and beat.heartbeat is not None and beat.heartbeat.period == 1800
    weekly, morning = cfg.maintenance
    assert weekly.rrule == "FREQ=WEEKLY;BYDAY=MO,TH;BYHOUR=23;BYMINUTE=0;BYSECOND=0" and weekly.duration == 3600
    assert weekly.timezone == "Europe/Amsterdam" and len(weekly.targets) == len(cfg.targets)
    assert morning.targets == ["example"] and morning.duration == 2400
    assert cfg.status_pages[0].title == "Health Dashboard | Example"
    reported = "\n".join(map(str, imported.skipped))
    for expected in (
        "alerting.pagerduty: no Apprise service",
        "endpoints[1] (example).alerts[1]: a second alert to the apprise receiver: its first alert's thresholds (5/5)",
        "endpoints[6] (ssh-example).url: ssh checks have no counterpart",
        "endpoints[7] (udp-example).url: udp checks",
        "external-endpoints[0] (ext-ep-test).token: too short",
        "ui.buttons:",
    ):
        assert expected in reported
    assert any(beat.heartbeat.token.get_secret_value() in note for note in imported.notes)


def test_the_mattermost_example_becomes_an_apprise_receiver() -> None:
    imported, cfg = converted("mattermost.yaml")
    assert cfg.alerts.notify == ["mmost://mattermost:8065/tokengoeshere"]
    assert cfg.targets[0].alerts is not None and cfg.targets[0].alerts.send_resolved
    assert "alerting.mattermost.insecure" in imported.report()


def test_a_file_that_is_not_a_gatus_config_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text("targets: []\n")
    with pytest.raises(Unreadable, match="not a Gatus config"):
        gatus.read(tmp_path / "x.yaml")
    with pytest.raises(Unreadable):
        gatus.read(tmp_path / "missing.yaml")


def test_a_tcp_endpoint_sends_its_body_and_judges_the_reply() -> None:
    from servers import TcpServer

    from monitor.checks.engine import Checker

    with TcpServer("echo") as server:  # answers what it reads, upper-cased
        address = f"tcp://127.0.0.1:{server.server_address[1]}"
        endpoints = [
            {"name": "echo", "url": address, "body": "ping", "conditions": ["[BODY] == PING", "[CONNECTED] == true"]},
            {"name": "pong", "url": address, "body": "ping", "conditions": ["[BODY] == pat(PONG*)"]},
        ]
        imported = gatus.convert({"endpoints": endpoints})
        cfg = config.parse(imported.yaml())
        results = {r.name: r.ok for r in Checker().run(cfg.targets)}
    assert imported.skipped == []
    assert results == {"echo": True, "pong": False}


def test_gatus_variables_are_read_from_the_environment_as_gatus_reads_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gatus expands $VAR and ${VAR} (and $$ is a literal $): the same here, each variable named in the report."""
    source = tmp_path / "config.yaml"
    source.write_text(
        "endpoints:\n"
        "  - name: api\n"
        '    url: "https://api.example.test/health?key=${API_KEY}&v=$VERSION"\n'
        '    headers: {X-Price: "$$5 and $${NOT_A_VAR}"}\n'
        '    conditions: ["[STATUS] == ${EXPECTED_STATUS:-200}", "[BODY].price == $$$$"]\n'
    )
    imported = gatus.read(source)
    [target] = imported.config["targets"]
    assert target["url"] == "https://api.example.test/health?key=${API_KEY}&v=${VERSION}"
    assert target["headers"] == {"X-Price": "$5 and $${NOT_A_VAR}"}
    assert target["conditions"] == ["[STATUS] == ${EXPECTED_STATUS:-200}", "[BODY].price == $$"]
    report = imported.report()
    assert "Gatus reads $VAR and ${VAR} from its environment" in report
    for name, field in (("API_KEY", "url"), ("VERSION", "url"), ("EXPECTED_STATUS", "conditions[0]")):
        assert f"{name} (endpoints[0] (api).{field})" in report
    monkeypatch.setenv("API_KEY", "k-1")
    monkeypatch.setenv("VERSION", "3")
    loaded = config.parse(imported.yaml()).target("api")
    assert loaded.url == "https://api.example.test/health?key=k-1&v=3" and loaded.headers == {"X-Price": "$5 and ${NOT_A_VAR}"}
    assert [str(c) for c in loaded.conditions] == ["[STATUS] == 200", "[BODY].price == $$"]


def test_an_endpoint_without_its_address_or_disabled_is_skipped_and_said_why() -> None:
    imported = gatus.convert(
        {
            "endpoints": [{"name": "no-url"}, {"name": "off", "url": "https://example.com", "enabled": False}],
            "external-endpoints": [{"token": "x"}, {"name": "job", "enabled": False}],
        }
    )
    assert imported.targets == []
    assert [(item.where, item.why) for item in imported.skipped] == [
        ("endpoints[0]", "an endpoint needs a name and a url"),
        ("endpoints[1]", "off: disabled in Gatus, so not checked"),
        ("external-endpoints[0]", "an external endpoint needs a name"),
        ("external-endpoints[1]", "job: disabled in Gatus, so not checked"),
    ]
