"""The web UI's data and JSON API in-process (Starlette's TestClient), on a real SQLite file."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from past import known
from prometheus_client import CollectorRegistry
from starlette.testclient import TestClient

from monitor.checks.engine import Result
from monitor.config import Config, ConfigError, parse
from monitor.core.memory import MemoryStats, WorkingStats
from monitor.core.results import Uptime
from monitor.core.runs import NewStep
from monitor.daemon import Daemon
from monitor.store import Store
from monitor.store.writes import IncidentWrites
from monitor.web.app import create_app
from monitor.web.pages import Pages

NOW = 1_800_000_000.0
LOCAL = "http://127.0.0.1:9110"


def result(target: str, at: float, ok: bool = True, latency: float = 20.0) -> Result:
    return Result(
        target,
        "http://127.0.0.1:1/",
        ok,
        "ok" if ok else "critical",
        200 if ok else 500,
        latency,
        None if ok else "unexpected_status",
        "" if ok else "status 500",
        at,
        phases={"dns": 1.0, "connect": 2.0, "first_byte": latency - 4, "body": 1.0},
    )


@pytest.fixture
def store(db_path: str) -> Store:
    s = Store(db_path, clock=lambda: NOW)
    # 30 results at the same instant, then one a minute: a cursor on time alone would skip or repeat rows
    s.results.add_results([result("api", NOW - 3600, ok=i % 3 != 0) for i in range(30)])
    s.results.add_results([result("api", NOW - 60 * i, ok=i % 5 != 0) for i in range(50)])
    s.results.add_results([result("shop", NOW - 60 * i) for i in range(10)])
    return s


@pytest.fixture
def client(store: Store) -> TestClient:
    return TestClient(create_app(store, Config(), clock=lambda: NOW), base_url=LOCAL)


def test_results_pages_follow_next_links_through_every_row_once(client: TestClient, store: Store) -> None:
    seen: list[int] = []
    url: str | None = "/api/v1/targets/api/results?limit=7"
    while url:
        page = client.get(url).json()
        seen += [row["id"] for row in page["items"]]
        url = page["next"]
    assert len(seen) == len(set(seen)) == store.results.count_results("api") == 80
    first = client.get("/api/v1/targets/api/results?limit=1").json()["items"][0]
    assert first["checked_at"] == NOW and first["phases"] == {"dns": 1.0, "connect": 2.0, "first_byte": 16.0, "body": 1.0}


def test_incidents_and_runs_paginate_newest_first(client: TestClient, store: Store) -> None:
    ids = []
    for n in range(5):
        ids.append(IncidentWrites(store).open_incident("api", "consecutive", f"failure {n}"))
        IncidentWrites(store).close_incident(ids[-1], "fixed")
    run = store.runs.start_run("look", target="api", incident_id=ids[0])
    first = client.get("/api/v1/incidents?limit=2").json()
    assert [i["id"] for i in first["items"]] == ids[:-3:-1]
    second = client.get(first["next"]).json()
    assert [i["id"] for i in second["items"]] == ids[-3:-5:-1]
    assert client.get(f"/api/v1/runs?incident={ids[0]}").json()["items"][0]["id"] == run
    assert client.get(f"/api/v1/incidents/{ids[0]}").json()["runs"][0]["id"] == run


def test_uptime_counts_each_window(store: Store) -> None:
    up = store.results.uptime("api", {"1h": 3599.0, "2h": 7200.0}, NOW)
    assert up["1h"] == Uptime(50, 40, 40, 0.8)
    assert up["2h"].checks == 80 and up["2h"].passed == 40 + 20


@pytest.mark.parametrize(
    "url, message",
    [
        ("/api/v1/incidents?limit=0", "limit must be a whole number from 1 to 500"),
        ("/api/v1/incidents?limit=abc", "limit must be a whole number"),
        ("/api/v1/incidents?before=-1", "before must be a positive whole number"),
        ("/api/v1/targets/api/results?before=yesterday", "before must be <checked_at>:<id>"),
        ("/api/v1/memory/samples?window=1y", "window must be one of 24h, 7d, 30d"),
        ("/api/v1/incidents?limit=%C2%B2", "limit must be a whole number"),  # "²": str.isdigit() says yes
        ("/api/v1/targets?page=%C2%B2", "page must be a whole number"),
        ("/api/v1/incidents?before=%C2%B2", "before must be a positive whole number"),
        ("/api/v1/runs?incident=99999999999999999999", "incident must be a positive whole number"),
        ("/api/v1/targets/api/results?before=1:99999999999999999999", "before must be <checked_at>:<id>"),
        ("/api/v1/targets/api/results?before=nan:1", "before must be <checked_at>:<id>"),
    ],
)
def test_bad_parameters_get_400_naming_the_problem(client: TestClient, url: str, message: str) -> None:
    answer = client.get(url)
    assert answer.status_code == 400 and message in answer.json()["error"]


def test_unknown_things_are_404_and_writes_are_not_routed(client: TestClient) -> None:
    assert client.get("/api/v1/targets/nope").status_code == 404
    assert client.get("/api/v1/incidents/99").json() == {"error": "no incident #99"}
    assert client.get("/runs/99").status_code == 404
    for path in ("/incidents/", "/api/v1/incidents/", "/runs/", "/api/v1/runs/"):  # past what a database holds
        assert client.get(path + "99999999999999999999").status_code == 404, path
    assert client.post("/api/v1/incidents").status_code == 405


def test_badges_are_svg_with_cache_headers(client: TestClient) -> None:
    status = client.get("/badges/api/status.svg")
    assert status.headers["content-type"] == "image/svg+xml" and status.headers["cache-control"] == "public, max-age=60"
    assert ">down<" in status.text and ">up<" in client.get("/badges/shop/status.svg").text  # api's newest failed
    assert "uptime 24h" in client.get("/badges/api/uptime.svg").text
    assert ">20 ms<" in client.get("/badges/shop/latency.svg").text
    assert client.get("/badges/nope/status.svg").status_code == 404


def test_every_response_carries_the_csp(client: TestClient) -> None:
    for url in ("/", "/api/v1/targets", "/static/app.js", "/nope"):
        assert "script-src 'self'" in client.get(url).headers["content-security-policy"]


def test_memory_samples_are_kept_for_the_retention_and_thinned_for_charts(db_path: str) -> None:
    clock = [NOW]
    store = Store(db_path, clock=lambda: clock[0])
    for minute in range(600):
        clock[0] = NOW + 60 * minute
        store.memory.add_memory_sample(MemoryStats(WorkingStats({"action": 2, "summary": 1}, minute), 0, 4096), keep_since=clock[0] - 3600)
    samples = store.memory.memory_samples(clock[0] - 7 * 86400, buckets=50)
    assert 50 <= len(samples) <= 61  # 60 kept (one hour), at most one per slice
    assert samples[-1].bytes == 599 and samples[0].at >= clock[0] - 3600 and samples[-1].steps == 3


def test_the_daemon_samples_memory_at_housekeeping(db_path: str) -> None:
    config = Config.model_validate({"database": db_path, "metrics": {"enabled": False}})
    daemon = Daemon(config, registry=CollectorRegistry())
    daemon.housekeeping()
    daemon.housekeeping()
    samples = daemon.store.memory.memory_samples(time.time() - 60)
    daemon.close()
    assert len(samples) >= 1 and (samples[-1].db_bytes or 0) > 0


def test_target_states_and_the_open_incident_on_top(store: Store) -> None:
    IncidentWrites(store).open_incident("api", "consecutive", "3 failures")
    data = Pages(store, clock=lambda: NOW).overview()
    assert [t["state"] for t in data["targets"]] == ["down", "up"]  # api's newest check (i = 0) failed
    assert data["open_incidents"][0].target == "api"
    assert store.results.target_names() == ["api", "shop"]


def test_the_recalled_incidents_are_read_from_the_recall_step(store: Store) -> None:
    old = IncidentWrites(store).open_incident("api", "consecutive", "pool exhausted")
    IncidentWrites(store).close_incident(old, "restarted the pool")
    new = IncidentWrites(store).open_incident("api", "consecutive", "again")
    run = store.runs.start_run("look", target="api", incident_id=new)
    store.runs.add_step(run, NewStep(0, "recall", observations=f"#{old} [resolved] target api, consecutive: pool exhausted"))
    data = Pages(store, clock=lambda: NOW).incident(new)
    assert data is not None and [i.id for i in data["recalled"]] == [old]


def test_web_config_is_checked(tmp_path: Path) -> None:
    assert Config().web.enabled is False and Config().web.listen == "127.0.0.1:9110"
    with pytest.raises(ConfigError, match="not host:port"):
        parse("web: {listen: localhost}\n")
    assert parse("web: {listen: '[::1]:9200'}\n").web.host == "::1"


def test_monitor_web_refuses_a_missing_database(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from monitor.cli.main import main

    answer = CliRunner().invoke(main, ["web", "--db", str(tmp_path / "none.db")])
    assert answer.exit_code == 3 and "no database" in answer.output


def test_stored_phases_are_json(store: Store) -> None:
    row = store.results.latest_result("shop")
    assert row is not None and json.loads(row.phases or "{}")["connect"] == 2.0


def test_hourly_counts_follow_inserts_and_retention(db_path: str) -> None:
    store = Store(db_path, clock=lambda: NOW)
    store.results.add_results([result("api", NOW - 7200 - 60 * i, ok=i % 2 == 0) for i in range(60)])  # two hours ago
    store.results.add_results([result("api", NOW - 60 * i) for i in range(30)])
    assert store.results.uptime("api", {"3h": 3 * 3600.0}, NOW)["3h"] == Uptime(90, 60, 60, 60 / 90)
    buckets = store.results.latency_buckets("api", NOW - 3 * 86400, NOW, 10)  # slices of hours: from the hourly table
    assert sum(b.checks for b in buckets) == 90 and sum(b.failures for b in buckets) == 30
    store.results.prune(NOW - 3600)
    assert store.results.uptime("api", {"3h": 3 * 3600.0}, NOW)["3h"].checks == 30


def test_a_target_unchecked_for_three_intervals_is_stale_and_its_address_keeps_no_secret(store: Store) -> None:
    config = Config.model_validate(
        {
            "targets": [
                {"name": "api", "url": "https://user:pw@api.example.test/health?token=s3cret", "interval": "60s"},
                {"name": "shop", "url": "https://shop.example.test/", "interval": "5m"},
            ]
        }
    )
    later = NOW + 3 * 60 + 31  # api's newest check is at NOW
    client = TestClient(create_app(store, config, clock=lambda: later), base_url=LOCAL)
    api = client.get("/api/v1/targets/api").json()
    assert api["state"] == "stale" and api["config"]["url"] == "https://***@api.example.test/health?token=***"
    assert client.get("/api/v1/targets/shop").json()["state"] == "up"  # every 5 min: not stale until NOW + 930 s
    page = client.get("/targets/api").text
    assert "s3cret" not in page and "pw@" not in page and "daemon has stopped" in page


TOKEN = "a-token-of-twenty-chars"


@pytest.fixture
def acting(store: Store) -> tuple[TestClient, int]:
    config = Config.model_validate({"web": {"token": TOKEN}})
    incident = IncidentWrites(store).open_incident("api", "consecutive", "3 failures")
    return TestClient(
        create_app(store, config, clock=lambda: NOW), base_url="http://127.0.0.1:9110", headers={"origin": "http://127.0.0.1:9110"}
    ), incident


def csrf_of(client: TestClient, incident: int) -> str:
    page = client.get(f"/incidents/{incident}")
    assert 'method="post"' in page.text and "token" in page.text
    return page.cookies.get("monitor_csrf") or client.cookies["monitor_csrf"]


def test_without_a_token_the_ui_is_read_only(client: TestClient, store: Store) -> None:
    incident = IncidentWrites(store).open_incident("api", "consecutive", "3 failures")
    assert 'method="post"' not in client.get(f"/incidents/{incident}").text
    answer = client.post(f"/incidents/{incident}/actions", data={"action": "resolve", "note": "x", "token": ""})
    assert answer.status_code == 405 and known(store.incidents.incident(incident)).status == "open"
    assert store.incidents.web_actions(incident) == []  # read-only writes nothing, not even an audit row


def test_resolving_with_the_token_and_the_pages_csrf_token_is_done_and_audited(acting: tuple[TestClient, int], store: Store) -> None:
    client, incident = acting
    csrf = csrf_of(client, incident)
    answer = client.post(
        f"/incidents/{incident}/actions",
        follow_redirects=False,
        data={"action": "resolve", "note": "rolled back <b>deploy</b> 4711", "token": TOKEN, "csrf": csrf},
    )
    assert answer.status_code == 303 and answer.headers["location"] == f"/incidents/{incident}"
    row = known(store.incidents.incident(incident))
    assert row.status == "resolved" and row.resolution == "rolled back <b>deploy</b> 4711"
    [audit] = store.incidents.web_actions(incident)
    assert audit.ok == 1 and audit.action == "resolve" and audit.detail == "resolved"
    assert "rolled back &lt;b&gt;deploy&lt;/b&gt; 4711" in client.get(f"/incidents/{incident}").text
    assert client.get(f"/api/v1/incidents/{incident}").json()["actions"][0]["detail"] == "resolved"


@pytest.mark.parametrize("change, refusal", [({"action": "delete"}, "unknown action"), ({"note": ""}, "resolving needs a note")])
def test_refused_actions_change_nothing_and_are_audited(
    acting: tuple[TestClient, int], store: Store, change: dict[str, str], refusal: str
) -> None:
    client, incident = acting
    form = {"action": "resolve", "note": "fixed", "token": TOKEN, "csrf": csrf_of(client, incident), **change}
    answer = client.post(f"/incidents/{incident}/actions", data=form)
    assert answer.status_code == 403 and refusal in answer.text
    assert known(store.incidents.incident(incident)).status == "open"
    [audit] = store.incidents.web_actions(incident)
    assert audit.ok == 0 and refusal in (audit.detail or "")


@pytest.mark.parametrize(
    "change, refusal",
    [
        ({"token": "wrong-token-of-20-chars"}, "wrong token"),
        ({"token": ""}, "wrong token"),
        ({"csrf": "forged"}, "CSRF token does not match"),
    ],
)
def test_a_request_without_the_token_is_refused_and_neither_stored_nor_shown(
    acting: tuple[TestClient, int], store: Store, change: dict[str, str], refusal: str
) -> None:
    """Hostile input, round three, finding 6: 3,000 refused notes were stored and rendered (7 KB to 6.7 MB)."""
    client, incident = acting
    form = {"action": "acknowledge", "note": "<b>spam</b> " * 150, "token": TOKEN, "csrf": csrf_of(client, incident), **change}
    for _ in range(3):
        answer = client.post(f"/incidents/{incident}/actions", data=form)
        assert answer.status_code == 403 and refusal in answer.text
    assert store.incidents.web_actions(incident) == [] and "spam" not in client.get(f"/incidents/{incident}").text
    assert known(store.incidents.incident(incident)).notes in (None, "")


def test_an_action_on_an_incident_that_does_not_exist_is_a_404_and_not_kept_for_it(acting: tuple[TestClient, int], store: Store) -> None:
    client, incident = acting
    form = {"action": "acknowledge", "note": "early bird", "token": TOKEN, "csrf": csrf_of(client, incident)}
    answer = client.post(f"/incidents/{incident + 1}/actions", data=form)
    assert answer.status_code == 404 and f"#{incident + 1}" in answer.text
    later = IncidentWrites(store).open_incident("shop", "consecutive", "3 failures")
    assert later == incident + 1 and store.incidents.web_actions(later) == []
    assert "early bird" not in client.get(f"/incidents/{later}").text


def test_a_note_longer_than_the_form_allows_is_refused_saying_so(acting: tuple[TestClient, int], store: Store) -> None:
    client, incident = acting
    form = {"action": "resolve", "note": "x" * 1001, "token": TOKEN, "csrf": csrf_of(client, incident)}
    answer = client.post(f"/incidents/{incident}/actions", data=form)
    assert answer.status_code == 413 and "1,001 characters" in answer.text and "at most 1,000" in answer.text
    assert known(store.incidents.incident(incident)).status == "open" and store.incidents.web_actions(incident) == []
    form["note"] = "y" * 1000
    assert client.post(f"/incidents/{incident}/actions", data=form, follow_redirects=False).status_code == 303
    assert known(store.incidents.incident(incident)).resolution == "y" * 1000


def test_a_request_from_another_site_is_refused(acting: tuple[TestClient, int], store: Store) -> None:
    client, incident = acting
    form = {"action": "silence", "token": TOKEN, "csrf": csrf_of(client, incident)}
    answer = client.post(f"/incidents/{incident}/actions", data=form, headers={"origin": "https://evil.example"})
    assert answer.status_code == 403 and "another site" in answer.text
    assert not known(store.incidents.incident(incident)).silenced


@pytest.mark.parametrize(
    "headers, refusal",
    [
        ({}, "neither Origin nor Referer"),
        ({"referer": "https://evil.example/page"}, "another site"),
        ({"referer": "http://127.0.0.1:9110.evil.example/incidents/1"}, "another site"),
    ],
)
def test_a_request_with_no_origin_or_a_foreign_referer_is_refused(
    acting: tuple[TestClient, int], store: Store, headers: dict[str, str], refusal: str
) -> None:
    """Hostile input, round three, finding 7: a request with no Origin was accepted."""
    client, incident = acting
    form = {"action": "silence", "token": TOKEN, "csrf": csrf_of(client, incident)}
    client.headers.pop("origin")
    answer = client.post(f"/incidents/{incident}/actions", data=form, headers=headers)
    assert answer.status_code == 403 and refusal in answer.text
    assert not known(store.incidents.incident(incident)).silenced
    answer = client.post(
        f"/incidents/{incident}/actions",
        data=form,
        follow_redirects=False,
        headers={"referer": f"http://127.0.0.1:9110/incidents/{incident}"},
    )
    assert answer.status_code == 303 and known(store.incidents.incident(incident)).silenced  # a browser that sends only Referer


def test_a_csrf_cookie_the_client_chose_does_not_pass(acting: tuple[TestClient, int], store: Store) -> None:
    """Finding 7: the CSRF check compared the cookie with the form, whatever made the cookie."""
    client, incident = acting
    client.cookies.set("monitor_csrf", "chosen-by-the-client")
    form = {"action": "silence", "token": TOKEN, "csrf": "chosen-by-the-client"}
    answer = client.post(f"/incidents/{incident}/actions", data=form)
    assert answer.status_code == 403 and "CSRF token" in answer.text and not known(store.incidents.incident(incident)).silenced
    csrf = csrf_of(client, incident)  # the page replaces a cookie it did not make
    assert csrf != "chosen-by-the-client"
    form["csrf"] = csrf
    assert client.post(f"/incidents/{incident}/actions", data=form, follow_redirects=False).status_code == 303


def test_a_page_asked_for_under_another_host_name_is_refused(store: Store) -> None:
    """Finding 7: no Host check, so a page whose name is rebound to 127.0.0.1 could read the UI."""
    app = create_app(store, Config(), clock=lambda: NOW)
    for host in ("evil.example", "evil.example:9110", "127.0.0.1.evil.example"):
        answer = TestClient(app, base_url=f"http://{host}").get("/api/v1/targets")
        assert answer.status_code == 421 and "web.allowed_hosts" in answer.text and "api" not in answer.text
    for host in ("127.0.0.1:9110", "localhost:9110", "[::1]:9110", "10.1.2.3", "LOCALHOST"):
        assert TestClient(app, base_url=f"http://{host}").get("/api/v1/targets").status_code == 200
    named = Config.model_validate({"web": {"allowed_hosts": ["monitor.example.org"]}})
    app = create_app(store, named, clock=lambda: NOW)
    assert TestClient(app, base_url="http://monitor.example.org").get("/").status_code == 200
    assert TestClient(app, base_url="http://evil.example").get("/").status_code == 421


def test_silence_and_acknowledge_leave_notes(acting: tuple[TestClient, int], store: Store) -> None:
    client, incident = acting
    csrf = csrf_of(client, incident)
    for action in ("acknowledge", "silence"):
        form = {"action": action, "note": "looking", "token": TOKEN, "csrf": csrf}
        assert client.post(f"/incidents/{incident}/actions", data=form, follow_redirects=False).status_code == 303
    row = known(store.incidents.incident(incident))
    assert row.silenced == 1 and "acknowledged in the web UI: looking" in (row.notes or "")
    assert [a.action for a in store.incidents.web_actions(incident)] == ["acknowledge", "silence"]


def fleet_store(db_path: str) -> tuple[Store, Config]:
    """250 configured targets: f003 and f150 down, f007 warning, f010 stale, f011 never checked,
    f020 in maintenance, the rest up; a result every 10 minutes for 3 h (uptime reads both tables)."""
    names = [f"f{i:03d}" for i in range(250)]
    config = Config.model_validate(
        {
            "targets": [{"name": n, "url": "https://example.test/", "interval": "60s"} for n in names],
            "maintenance": [{"targets": ["f020"], "start": "2027-01-15T07:00:00Z", "end": "2027-01-15T09:00:00Z"}],
        }
    )
    store = Store(db_path, clock=lambda: NOW)
    batch = []
    for name in names:
        if name == "f011":
            continue
        for k in range(18):
            at = NOW - 600 * k - (3600 if name == "f010" else 0)
            ok = not (k == 0 and name in ("f003", "f150")) and k % 7 != 3
            batch.append(
                Result(
                    name,
                    "https://example.test/",
                    ok,
                    "warning" if name == "f007" and ok else "ok" if ok else "critical",
                    200,
                    10.0 + k,
                    None if ok else "timeout",
                    "",
                    at,
                )
            )
    store.results.add_results(batch)
    return store, config


def test_the_overview_pages_a_fleet_problems_first_and_every_target_once(db_path: str) -> None:
    store, config = fleet_store(db_path)
    client = TestClient(create_app(store, config, clock=lambda: NOW), base_url=LOCAL)
    seen: list[tuple[str, str]] = []
    for page in (1, 2, 3):
        html = client.get(f"/?page={page}").text
        rows = re.findall(r'<tr class="target" data-target="([^"]+)" data-state="([^"]+)"', html)
        assert len(rows) == (100 if page < 3 else 50)
        seen += rows
    assert sorted(n for n, _ in seen) == [f"f{i:03d}" for i in range(250)]
    assert seen[:6] == [
        ("f003", "down"),
        ("f150", "down"),
        ("f007", "warning"),
        ("f010", "stale"),
        ("f011", "unknown"),
        ("f020", "maintenance"),
    ]
    assert {s for _, s in seen[6:]} == {"up"} and [n for n, _ in seen[6:]] == sorted(n for n, _ in seen[6:])
    assert "2 down" in html and "244 up" in html  # the fleet's counts on every page
    assert client.get("/?page=9").status_code == 200 and "none on this page" in client.get("/?page=9").text
    assert client.get("/?page=0").status_code == 400 and "page must be a whole number" in client.get("/?page=0").text


def test_the_overview_filters_by_name_and_its_refresh_keeps_the_page(db_path: str) -> None:
    store, config = fleet_store(db_path)
    client = TestClient(create_app(store, config, clock=lambda: NOW), base_url=LOCAL)
    html = client.get("/?q=F15").text  # any case: f150..f159, f150 (down) first
    names = re.findall(r'data-target="([^"]+)"', html)
    assert names[0] == "f150" and sorted(names) == [f"f{i}" for i in range(150, 160)]
    assert "10 of 250 targets" in html
    assert 'data-refresh="/fragments/overview?q=F15"' in html
    page2 = client.get("/?page=2").text
    assert 'data-refresh="/fragments/overview?page=2"' in page2
    fragment = client.get("/fragments/overview?page=2").text
    assert re.findall(r'data-target="([^"]+)"', fragment) == re.findall(r'data-target="([^"]+)"', page2)
    assert '<a href="/?page=3">3</a>' in fragment and '<a href="/">1</a>' in fragment and "<strong>2</strong>" in fragment


def test_api_targets_pages_in_the_overviews_order(db_path: str) -> None:
    store, config = fleet_store(db_path)
    client = TestClient(create_app(store, config, clock=lambda: NOW), base_url=LOCAL)
    items, url = [], "/api/v1/targets?limit=60"
    while url:
        answer = client.get(url).json()
        assert answer["total"] == 250 and answer["pages"] == 5
        items += answer["items"]
        url = answer["next"]
    overview = re.findall(r'data-target="([^"]+)"', "".join(client.get(f"/?page={p}").text for p in (1, 2, 3)))
    assert [i["name"] for i in items] == overview
    assert client.get("/api/v1/targets?q=f00&limit=5").json()["matched"] == 10
    assert client.get("/api/v1/targets?page=x").status_code == 400


def test_uptime_of_a_page_of_targets_is_exact(db_path: str) -> None:
    store, _ = fleet_store(db_path)
    ups = store.results.uptimes(["f003", "f010", "f011", "f099"], {"1h": 3600.0, "2h30": 9000.0, "24h": 86400.0}, NOW)
    passed_1h = [k != 0 and k % 7 != 3 for k in range(7)]  # NOW, NOW-600 .. NOW-3600 (a window holds its start)
    assert ups["f003"]["1h"] == Uptime(7, sum(passed_1h), sum(passed_1h), sum(passed_1h) / 7)
    assert ups["f099"]["2h30"].passed == sum(k % 7 != 3 for k in range(16))  # NOW-9000 < NOW-600*15
    assert ups["f010"]["24h"].checks == 18 and ups["f011"]["24h"] == Uptime(0, 0, 0, None)
    assert ups["f099"] == store.results.uptime("f099", {"1h": 3600.0, "2h30": 9000.0, "24h": 86400.0}, NOW)


def test_the_overview_lists_the_newest_open_incidents_and_links_the_rest(db_path: str) -> None:
    store, config = fleet_store(db_path)
    for i in range(60):
        IncidentWrites(store).open_incident(f"f{i:03d}", "consecutive", "down")
    html = TestClient(create_app(store, config, clock=lambda: NOW), base_url=LOCAL).get("/").text
    assert html.count('class="incident severity-') == 50 and "the newest 50 of 60" in html
    assert "/incidents?status=open" in html
