"""Status pages: config, uptime by day computed in the store (both dialects), the public's view of incidents
and maintenance, and their own listener, which serves nothing of the admin UI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from outbox import quiet_writer
from starlette.testclient import TestClient

from monitor import config
from monitor.config import Config, ConfigError
from monitor.core.results import Result
from monitor.store import Store
from monitor.store.writes import IncidentWrites
from monitor.web.app import create_app, create_status_app
from monitor.web.server import start_status_server

DAY = 86400.0
NOW = 1_900_000_000.0  # a fixed clock: 2030-03-17 17:46 UTC
TARGETS = "targets:\n- {name: api, url: 'http://127.0.0.1:9/'}\n- {name: db, url: 'tcp://127.0.0.1:9'}\n"
SECRET_URL = "http://user:hunter2@127.0.0.1:9/"


def settings(**extra: Any) -> dict[str, Any]:
    return {
        "targets": [
            {"name": "api", "url": SECRET_URL},
            {"name": "db", "url": "tcp://127.0.0.1:9"},
            {"name": "internal", "url": "http://127.0.0.1:9/"},
        ],
        "status_pages": [
            {
                "slug": "public",
                "title": "Example status",
                "logo": "https://cdn.example.com/logo.png",
                "groups": [{"name": "Website", "targets": ["api"]}, {"name": "Data", "targets": ["db"]}],
            }
        ],
        **extra,
    }


def result(target: str, ok: bool, at: float, detail: str = "") -> Result:
    return Result(
        target, SECRET_URL, ok, "ok" if ok else "critical", 200 if ok else 503, 12.0, None if ok else "unexpected_status", detail, at
    )


def history(store: Store) -> None:
    """api: 10 days of a check an hour, the newest day 3 of 24 failed; db: one check an hour, all passed."""
    rows = []
    for hour in range(10 * 24):
        at = NOW - hour * 3600.0
        today = hour < (NOW % DAY) / 3600
        rows.append(result("api", not (today and hour % 8 == 0), at, "token=s3cret in the body"))
        rows.append(result("db", True, at))
    store.results.add_results(rows)


def test_uptime_by_day_is_counted_in_the_store(db_path: str) -> None:
    store = Store(db_path)
    history(store)
    store.results.add_results([result("internal", False, NOW)])
    days = store.public.daily_uptime(["api", "db", "nobody"], NOW - 5 * DAY, NOW)
    today = int(NOW // DAY)
    assert sorted(days["api"]) == list(range(today - 5, today + 1))
    assert days["api"][today - 1] == (24, 24)
    failed = len([h for h in range(int((NOW % DAY) / 3600) + 1) if h % 8 == 0])
    assert days["api"][today] == (int((NOW % DAY) // 3600) + 1, int((NOW % DAY) // 3600) + 1 - failed)
    assert days["db"][today - 3] == (24, 24) and days["nobody"] == {}
    assert "internal" not in days


def test_the_page_shows_groups_bars_and_public_notes_only(db_path: str) -> None:
    store = Store(db_path, clock=lambda: NOW - 7200)
    history(store)
    incident = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api", severity="critical")
    writer = quiet_writer(store)
    writer.annotate(incident, "agent: the pool of db-7 is exhausted (internal note)")
    writer.post_public_note(incident, "We are looking into slow answers.")
    IncidentWrites(store).update_incident(incident, diagnosis="pool exhausted on db-7", root_cause="server_error")
    client = TestClient(create_status_app(store, Config.model_validate(settings()), clock=lambda: NOW))
    answer = client.get("/status/public")
    assert answer.status_code == 200
    html = answer.text
    assert "Example status" in html and "Website" in html and "Data" in html
    assert html.count('class="bar ') == 2 * 90
    assert 'data-target="api" data-state="outage"' in html and 'data-target="db" data-state="operational"' in html
    assert "We are looking into slow answers." in html and "Outage: api" in html
    for private in (
        "internal note",
        "db-7",
        "3 consecutive failures",
        "hunter2",
        "127.0.0.1",
        "s3cret",
        "internal",
        "/incidents",
        "/runs",
        "/api/",
        "<form",
        "<script",
    ):
        assert private not in html, private
    policy = answer.headers["content-security-policy"]
    assert "img-src 'self' data: https://cdn.example.com;" in policy and "script-src" not in policy
    assert "default-src 'none'" in policy


def test_show_diagnosis_adds_the_root_cause_in_plain_words_never_the_diagnosis(db_path: str) -> None:
    store = Store(db_path, clock=lambda: NOW)
    incident = IncidentWrites(store).open_incident("db", "consecutive", "down")
    IncidentWrites(store).update_incident(incident, diagnosis="the disk of db-7.internal (10.0.4.12) filled up", root_cause="timeout")
    odd = IncidentWrites(store).open_incident("api", "consecutive", "down")
    IncidentWrites(store).update_incident(odd, diagnosis="the disk filled up", root_cause="disk_full")  # no cause this version knows
    pages = settings()
    html = TestClient(create_status_app(store, Config.model_validate(pages), clock=lambda: NOW)).get("/status/public").text
    assert "Cause:" not in html
    pages["status_pages"][0]["show_diagnosis"] = True
    html = TestClient(create_status_app(store, Config.model_validate(pages), clock=lambda: NOW)).get("/status/public").text
    assert html.count("Cause:") == 1 and "Cause: the service hangs or is overloaded: checks time out" in html
    assert not [s for s in ("disk", "db-7", "10.0.4.12", "timeout", "disk_full") if s in html]


def test_maintenance_in_force_and_coming_is_announced(db_path: str) -> None:
    store = Store(db_path, clock=lambda: NOW)
    windows = [
        {"targets": ["db"], "rrule": "FREQ=DAILY;BYHOUR=17;BYMINUTE=0", "timezone": "UTC", "duration": "1h", "reason": "nightly vacuum"},
        {"targets": ["internal"], "start": "2030-03-17T17:00:00Z", "end": "2030-03-17T19:00:00Z", "reason": "not on this page"},
    ]
    client = TestClient(create_status_app(store, Config.model_validate(settings(maintenance=windows)), clock=lambda: NOW))
    html = client.get("/status/public").text
    assert "In progress:</strong>\n2030-03-17 17:00:00 UTC to 2030-03-17 18:00:00 UTC · db" in html
    assert "Planned:</strong>\n2030-03-18 17:00:00 UTC" in html and "nightly vacuum" in html
    assert "not on this page" not in html
    assert 'data-target="db" data-state="maintenance"' in html and "Maintenance in progress" in html


def test_the_status_app_serves_no_admin_page(db_path: str) -> None:
    store = Store(db_path, clock=lambda: NOW)
    client = TestClient(create_status_app(store, Config.model_validate(settings()), clock=lambda: NOW))
    assert 'href="/status/public"' in client.get("/").text
    for path in (
        "/incidents",
        "/incidents/1",
        "/runs",
        "/memory",
        "/targets/api",
        "/api/v1/targets",
        "/badges/api/status.svg",
        "/fragments/overview",
        "/status/nope",
    ):
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert "<a " not in answer.text, path  # its error page links nowhere, the overview least of all
    assert client.post("/incidents/1/actions", data={"action": "resolve"}).status_code in (404, 405)
    admin = TestClient(create_app(store, Config.model_validate(settings()), clock=lambda: NOW), base_url="http://127.0.0.1:9110")
    assert admin.get("/status/public").status_code == 200  # the admin UI serves them too


def test_the_status_listener_runs_with_the_admin_ui_off(db_path: str) -> None:
    store = Store(db_path, clock=lambda: NOW)
    cfg = Config.model_validate(settings(web={"enabled": False, "status_listen": "127.0.0.1:0"}))
    server = start_status_server(store, cfg, clock=lambda: NOW)
    assert server is not None
    try:
        assert httpx.get(f"{server.url}/status/public", timeout=5).status_code == 200
        assert httpx.get(f"{server.url}/incidents", timeout=5).status_code == 404
    finally:
        server.stop()
        store.close()
    assert start_status_server(Store(":memory:"), Config.model_validate(settings())) is None


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "status_pages:\n- {slug: public, title: T, groups: [{name: G, targets: [api, ghost]}]}\n",
            "monitor.yaml:5: status_pages[0].groups[0].targets[1]: no target named 'ghost'",
        ),
        (
            "status_pages:\n- {slug: a, title: T, groups: [{name: G, targets: [api]}]}\n"
            "- {slug: a, title: U, groups: [{name: G, targets: [db]}]}\n",
            "monitor.yaml:6: status_pages[1].slug: 'a' is the slug of another page",
        ),
        ("status_pages:\n- {slug: '../admin', title: T, groups: [{name: G, targets: [api]}]}\n", "monitor.yaml:5: status_pages[0].slug: "),
        (
            "status_pages:\n- {slug: p, title: T, logo: 'javascript:alert(1)', groups: [{name: G, targets: [api]}]}\n",
            "monitor.yaml:5: status_pages[0].logo: 'javascript:alert(1)' is not an http:// or https:// URL",
        ),
        ("status_pages:\n- {slug: p, title: T, groups: []}\n", "monitor.yaml:5: status_pages[0].groups: "),
        ("web: {status_listen: nowhere}\n", "monitor.yaml:4: web.status_listen: 'nowhere' is not host:port"),
    ],
)
def test_bad_status_pages_are_named_by_file_line_and_field(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "monitor.yaml"
    path.write_text(TARGETS + text)
    with pytest.raises(ConfigError) as info:
        config.load(path)
    assert error in str(info.value)


def test_a_public_note_goes_through_the_writer_and_needs_an_incident(db_path: str) -> None:
    store = Store(db_path, clock=lambda: NOW)
    seen = []
    writer = quiet_writer(store)
    writer.publisher.subscribe(lambda event: seen.append(event.kind))
    incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
    writer.post_public_note(incident, "Fixed.")
    [note] = store.public.public_notes([incident])[incident]
    assert (note.incident_id, note.at, note.text) == (incident, NOW, "Fixed.") and seen == ["annotated"]
    with pytest.raises(LookupError):
        writer.post_public_note(incident + 1, "nobody")
    assert store.public.public_notes([incident + 1]) == {incident + 1: []}
