"""``monitor import uptime-kuma``: a Kuma database of either schema, built from Kuma's own, read read-only."""

from __future__ import annotations

import json
import sqlite3
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import kuma
import pytest
from servers import Background

from monitor import config
from monitor.checks.engine import Checker
from monitor.importers import Unreadable, uptime_kuma


@pytest.fixture(params=["1.23", "2.x"])
def kuma_db(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "kuma.db"
    db = kuma.create(path, request.param)
    kuma.fill(db)
    db.close()
    return path


def test_every_kind_of_monitor_converts_and_validates(kuma_db: Path) -> None:
    before = kuma_db.read_bytes()
    imported = uptime_kuma.read(kuma_db)
    cfg = config.parse(imported.yaml())
    assert kuma_db.read_bytes() == before  # read-only
    names = [t.name for t in cfg.targets]
    assert names == ["Web-site", "Shop", "Not-in-maintenance", "API", "Teapot", "Postgres", "Gateway", "DNS", "Backup-job"]
    web = cfg.target("Web-site")
    assert web.group == "Production" and web.labels == {"env": "prod"} and web.interval == 30
    assert cfg.detectors_for("Web-site").consecutive == 3  # 2 retries: down at the third failure
    assert cfg.detectors_for("Shop").consecutive == 1  # no retries: down at the first
    assert cfg.target("Shop").expect.body_contains == "Add to cart"
    assert cfg.target("Not-in-maintenance").expect.body_not_contains == "maintenance"
    assert [str(c) for c in cfg.target("API").conditions] == ["[BODY].status == UP"]
    assert cfg.target("Teapot").expect.status == frozenset({418, *range(200, 300)})
    assert cfg.target("Postgres").url == "tcp://127.0.0.1:1" and cfg.target("Gateway").kind == "icmp"
    dns = cfg.target("DNS")
    assert dns.url == "dns:example.com/A" and dns.dns is not None and dns.dns.server == "1.1.1.1"
    beat = cfg.target("Backup-job")
    assert beat.kind == "heartbeat" and beat.heartbeat is not None and beat.heartbeat.period == 3600


def test_notifications_pages_and_maintenance(kuma_db: Path) -> None:
    imported = uptime_kuma.read(kuma_db)
    cfg = config.parse(imported.yaml())
    assert cfg.alerts.notify == ["https://hooks.slack.com/services/T00/B00/XXXX"]
    assert [(w.name, w.url) for w in cfg.alerts.webhooks] == [("Hook", "https://hooks.example.com/kuma")]
    assert cfg.target("Web-site").alerts.receivers == ["apprise"]  # type: ignore[union-attr]
    assert cfg.target("API").alerts.receivers == ["Hook"]  # type: ignore[union-attr]
    assert cfg.target("Shop").alerts.receivers == []  # type: ignore[union-attr]  # no notification in Kuma
    (page,) = cfg.status_pages
    assert (page.slug, page.title) == ("public", "Example status")
    assert [(g.name, g.targets) for g in page.groups] == [("Services", ["Web-site", "API"])]
    assert page.description == "Our services\n\nPlanned upgrade: Sunday 02:00 UTC"
    weekly, once = cfg.maintenance
    assert weekly.targets == ["Postgres"] and weekly.rrule == "FREQ=WEEKLY;BYDAY=SU,WE;BYHOUR=2;BYMINUTE=0;BYSECOND=0"
    assert weekly.duration == 5400 and weekly.timezone == "Europe/Berlin"
    assert once.targets == ["Web-site"] and once.start is not None and once.start.isoformat() == "2030-01-05T10:00:00"
    reported = imported.report()
    for expected in (
        "monitor 11 (Container): docker monitors have no counterpart",
        "monitor 12 (Old): paused in Kuma",
        "notification 3 (Signal): no Apprise service",
        "monitor 10 (Backup job).token: too short",
        "monitor 2 (Web site).retry_interval",
        "status page public: incident",
    ):
        assert expected in reported


def test_what_is_not_a_kuma_database_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "text.db").write_text("hello")
    sqlite3.connect(tmp_path / "other.db").execute("CREATE TABLE t (x)").connection.close()
    for name, said in (("text.db", "not an SQLite database"), ("other.db", "not an Uptime Kuma database"), ("none.db", "no such")):
        with pytest.raises(Unreadable, match=said):
            uptime_kuma.read(tmp_path / name)


class _Recorder(BaseHTTPRequestHandler):
    """Answers 200 and keeps what each request sent: its path, headers and body."""

    seen: list[tuple[str, dict[str, str], bytes]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.path, dict(self.headers), body))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_POST


def test_a_literal_dollar_brace_in_a_kuma_monitor_is_sent_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kuma treats ${...} as text: imported and run, the target gets the text, never the daemon's environment."""
    environment = {"MONITOR_WEB_TOKEN": "web-token-of-the-daemon", "AWS_SECRET_ACCESS_KEY": "aws-secret-of-the-daemon"}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with Background(_Recorder) as server:
        db = kuma.create(tmp_path / "kuma.db", "2.x")
        kuma.insert(db, "user", username="admin", password="x")
        headers = json.dumps({"X-Trace": "${AWS_SECRET_ACCESS_KEY}", "X-Price": "$${5}"})
        kuma.monitor(db, "Leaky", "http", url=server.base + "/q?q=${MONITOR_WEB_TOKEN}", method="POST", body="${PATH}", headers=headers)
        db.close()
        imported = uptime_kuma.read(tmp_path / "kuma.db")
        (tmp_path / "monitor.yaml").write_text(imported.yaml())
        imported.split(tmp_path / "split.yaml")
        (tmp_path / "split.yaml").write_text(imported.yaml())
        for written in ("monitor.yaml", "split.yaml"):
            _Recorder.seen.clear()
            [result] = Checker().run(config.load(tmp_path / written).targets)
            assert result.ok, result.detail
            [(path, sent, body)] = _Recorder.seen
            assert unquote(path) == "/q?q=${MONITOR_WEB_TOKEN}" and body == b"${PATH}", written
            assert sent["X-Trace"] == "${AWS_SECRET_ACCESS_KEY}" and sent["X-Price"] == "$${5}", written
            assert not [value for value in environment.values() if value in json.dumps([path, sent, body.decode()])]
    report = imported.report()
    assert "Uptime Kuma does not substitute ${...}" in report
    assert all(f"targets[0] (Leaky).{field}" in report for field in ("url", "headers.X-Trace", "headers.X-Price", "body"))
