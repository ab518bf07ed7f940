"""One truth for a target's state: a slow target (status 200, latency over its limit) is warning in every
reader, the CLI, /metrics, the web UI, the API and status pages, and up for uptime; durations as measured."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from prometheus_client import CollectorRegistry, generate_latest
from servers import Misbehaving
from starlette.testclient import TestClient

from monitor.cli.main import main
from monitor.config import Config, load
from monitor.core.results import Result, Uptime
from monitor.daemon import Daemon
from monitor.store import Store
from monitor.store.schema import SCHEMA_VERSION
from monitor.store.writes import IncidentWrites
from monitor.web.app import create_app, create_status_app
from monitor.web.status import duration

LOCAL = "http://127.0.0.1:9110"
NOW = 1_900_000_000.0


@pytest.fixture
def slow(web: Misbehaving, tmp_path: Path) -> tuple[Path, Path]:
    """A config whose one target answers 200 after 50 ms, over its 10 ms limit, and its database after two checks:
    one by ``monitor check --db``, one by the daemon."""
    db, cfg = tmp_path / "m.db", tmp_path / "m.yaml"
    cfg.write_text(
        f"database: {db}\nagent: {{mode: off}}\nmetrics: {{port: 0}}\n"
        f"targets:\n- {{name: slow, url: '{web.url('/slowish')}', expect: {{max_latency: 10ms}}}}\n"
        "status_pages:\n- {slug: public, title: Status, groups: [{name: Site, targets: [slow]}]}\n"
    )
    return cfg, db


def test_a_slow_target_is_warning_in_the_cli_and_metrics(slow: tuple[Path, Path]) -> None:
    cfg, db = slow
    checked = CliRunner().invoke(main, ["check", "--config", str(cfg), "--db", str(db), "--json"])
    assert checked.exit_code == 1, checked.output
    assert json.loads(checked.output)[0]["severity"] == "warning"
    registry = CollectorRegistry()
    Daemon(load(str(cfg)), registry=registry).run_once()
    scraped = generate_latest(registry).decode()
    assert re.search(r'monitor_check_up\{kind="http",target="slow"\} 1\.0', scraped), scraped
    said = CliRunner().invoke(main, ["status", "--config", str(cfg), "--json"])
    assert said.exit_code == 1, said.output
    [row] = json.loads(said.output)["targets"]
    assert row["state"] == "warning"
    text = CliRunner().invoke(main, ["status", "--config", str(cfg)])
    assert text.output.startswith("WARNING") and text.exit_code == 1


def test_a_slow_target_is_warning_on_every_page_and_up_for_uptime(slow: tuple[Path, Path]) -> None:
    cfg, db = slow
    CliRunner().invoke(main, ["check", "--config", str(cfg), "--db", str(db)])
    config = load(str(cfg))
    Daemon(config, registry=CollectorRegistry()).run_once()
    store = Store(str(db))
    client = TestClient(create_app(store, config), base_url=LOCAL)
    api = client.get("/api/v1/targets/slow").json()
    assert api["state"] == "warning" and api["latest"]["latency_ms"] > 10
    assert api["uptime"]["24h"]["checks"] == 2 and api["uptime"]["24h"]["ratio"] == 1.0
    listed = client.get("/api/v1/targets").json()
    assert listed["items"][0]["state"] == "warning" and listed["counts"]["warning"] == 1
    overview = client.get("/").text
    assert 'data-target="slow" data-state="warning"' in overview and 'class="warn"' in overview
    assert 'class="fail"' not in overview and "100.00%" in overview
    assert 'data-state="degraded"' in TestClient(create_status_app(store, config)).get("/status/public").text
    page = TestClient(create_status_app(store, config)).get("/status/public").text
    assert "100.00% in 90 days" in page and "bar-full" in page and "bar-low" not in page


def test_failed_checks_are_down_and_count_against_uptime(db_path: str) -> None:
    store = Store(db_path)
    store.results.add_results(
        [Result("api", "http://127.0.0.1:9/", False, "critical", 503, 5.0, "unexpected_status", "503", NOW - 60 * i) for i in range(3)]
    )
    store.results.add_results(
        [Result("api", "http://127.0.0.1:9/", False, "warning", 200, 900.0, "condition", "slow", NOW - 60 * i - 30) for i in range(3)]
    )
    uptime = store.results.uptime("api", {"1h": 3600.0}, NOW)["1h"]
    assert uptime.checks == 6 and uptime.ratio == 0.5
    client = TestClient(create_app(store, Config(), clock=lambda: NOW), base_url=LOCAL)
    assert client.get("/api/v1/targets/api").json()["state"] == "down"


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (5, "5 s"),
        (59.6, "1 min"),
        (90, "1 min 30 s"),
        (3600, "1 h"),
        (3 * 3600 + 20 * 60, "3 h 20 min"),
        (2 * 86400 + 4 * 3600, "2 d 4 h"),
        (0.2, "0 s"),
    ],
)
def test_durations_are_shown_as_measured(seconds: float, said: str) -> None:
    assert duration(seconds) == said


def test_a_five_second_incident_lasted_five_seconds_on_the_status_page(db_path: str) -> None:
    clock = [NOW - 5]
    store = Store(db_path, clock=lambda: clock[0])
    incident = IncidentWrites(store).open_incident("api", "consecutive", "api failed", severity="critical")
    clock[0] = NOW
    IncidentWrites(store).close_incident(incident, "recovered")
    config = Config.model_validate(
        {
            "targets": [{"name": "api", "url": "http://127.0.0.1:9/"}],
            "status_pages": [{"slug": "public", "title": "Status", "groups": [{"name": "Site", "targets": ["api"]}]}],
        }
    )
    page = TestClient(create_status_app(store, config, clock=lambda: NOW)).get("/status/public").text
    assert "· 5 s</p>" in page and "1 min" not in page


OLD_TRIGGER = """CREATE TRIGGER results_hourly_count AFTER INSERT ON results_recent BEGIN
    INSERT INTO results_hourly (target, hour, checks, passed, latency_sum, latency_max)
    VALUES (new.target, CAST(new.checked_at / 3600 AS INTEGER), 1, new.ok, coalesce(new.latency_ms, 0),
            coalesce(new.latency_ms, 0))
    ON CONFLICT (target, hour) DO UPDATE SET checks = checks + 1, passed = passed + excluded.passed,
        latency_sum = latency_sum + excluded.latency_sum, latency_max = max(latency_max, excluded.latency_max);
END"""


@pytest.mark.sqlite_only("a SQLite file of the schema before hourly counts knew what was up")
def test_a_database_from_before_counts_its_past_warnings_as_up(db_path: str) -> None:
    old = Store(db_path)
    for sql in (
        "DROP TRIGGER results_hourly_count",
        "ALTER TABLE results_hourly DROP COLUMN up",
        OLD_TRIGGER,
        "PRAGMA user_version = 23",  # before migration 24 (results are inserted into results_recent since 25)
    ):
        old.engine.execute(sql)
    old.results.add_results(
        [
            Result("api", "http://127.0.0.1:9/", severity == "ok", severity, 200, 5.0, None, "", NOW - 60 * i)
            for i, severity in enumerate(["ok", "warning", "warning", "critical"])
        ]
    )
    assert old.engine.execute("SELECT sum(checks), sum(passed) FROM results_hourly").fetchall() == [(4, 1)]
    old.close()
    again = Store(db_path)
    assert again.version == SCHEMA_VERSION
    assert again.public.daily_uptime(["api"], NOW - 86400, NOW)["api"] == {int(NOW // 86400): (4, 3)}
    again.results.add_results([Result("api", "http://127.0.0.1:9/", False, "warning", 200, 900.0, "condition", "slow", NOW)])
    assert again.results.uptime("api", {"1d": 86400.0}, NOW)["1d"] == Uptime(5, 1, 4, 0.8)
