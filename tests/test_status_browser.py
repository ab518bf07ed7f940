"""A status page in a real browser (Debian's Chromium through Playwright), on its own listener with the admin
UI off: it draws without console errors, links nowhere into the admin UI, and whatever a target answered
or a person wrote (titles, group names, public notes, maintenance reasons with script in them) stays text."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import playwright.sync_api as playwright_api
import pytest
from outbox import quiet_writer
from test_redaction import DUMP, HOSTILE, SECRETS
from test_web_browser import ARGS, CHROMIUM, IMG, PAYLOAD, SCRIPT

from monitor.config import Config
from monitor.core.diagnoses import Diagnosed
from monitor.core.results import Result
from monitor.store import Store
from monitor.store.writes import IncidentWrites
from monitor.web.server import WebServer, start_status_server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    now = time.time()
    store = Store(tmp_path_factory.mktemp("status") / "monitor.db")
    store.results.add_results(
        [
            Result(
                name,
                f"http://127.0.0.1:9/{SCRIPT}",
                ok,
                "ok" if ok else "critical",
                500,
                9.0,
                None if ok else "unexpected_status",
                f"<html>{PAYLOAD}</html>",
                now - hour * 3600,
            )
            for hour in range(72)
            for name, ok in (("api", hour % 5 != 0), ("db", True))
        ]
    )
    incident = IncidentWrites(store).open_incident("api", "consecutive", f"3 failures {PAYLOAD}")
    IncidentWrites(store).update_incident(incident, diagnosis=f"the pool {PAYLOAD}", root_cause="server_error")
    quiet_writer(store).post_public_note(incident, f"We are on it {PAYLOAD}")
    config = Config.model_validate(
        {
            "web": {"enabled": False, "status_listen": "127.0.0.1:0"},
            "targets": [{"name": "api", "url": "http://127.0.0.1:9/"}, {"name": "db", "url": "tcp://127.0.0.1:9"}],
            "maintenance": [{"targets": ["db"], "rrule": "FREQ=HOURLY", "duration": "10m", "reason": PAYLOAD}],
            "status_pages": [
                {
                    "slug": "public",
                    "title": f"Example {SCRIPT}",
                    "description": IMG,
                    "show_diagnosis": True,
                    "groups": [{"name": f"Web {PAYLOAD}", "targets": ["api"]}, {"name": "Data", "targets": ["db"]}],
                }
            ],
        }
    )
    server = start_status_server(store, config)
    assert server is not None
    yield server
    server.stop()
    store.close()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebServer]:
    """A page with ``show_diagnosis`` over an incident whose target answered the hostile body, whose stored
    diagnosis is that answer dumped and a past fix quoted, and whose notes are internal."""
    now = time.time()
    store = Store(tmp_path_factory.mktemp("hostile") / "monitor.db")
    store.results.add_results(
        [
            Result(
                "api",
                "http://svc:s3cr3tpw@10.1.2.3:8080/",
                False,
                "critical",
                503,
                9.0,
                "unexpected_status",
                HOSTILE,
                now - minute * 60,
                excerpt=HOSTILE,
            )
            for minute in range(3)
        ]
    )
    past = IncidentWrites(store).open_incident("api", "consecutive", "pool exhausted", root_cause="server_error")
    IncidentWrites(store).close_incident(past, "restarted pg-main and rotated its password=hunter2 (internal)")
    incident = IncidentWrites(store).open_incident("api", "consecutive", f"3 consecutive failures: {HOSTILE}")
    writer = quiet_writer(store)
    writer.annotate(incident, "agent: the pool of db-internal.corp is exhausted (internal note)")
    writer.post_public_note(incident, "We are looking into errors on the API.")
    IncidentWrites(store).record_diagnosis(
        None,
        incident,
        Diagnosed(
            diagnosis=f"{DUMP} #{past} on api: 'restarted pg-main and rotated its password=hunter2 (internal)'",
            root_cause="server_error",
            related_incident=past,
            confidence="high",
            suspected_cause="5xx",
        ),
    )
    config = Config.model_validate(
        {
            "web": {"enabled": False, "status_listen": "127.0.0.1:0"},
            "targets": [{"name": "api", "url": "http://svc:s3cr3tpw@10.1.2.3:8080/"}],
            "status_pages": [
                {"slug": "public", "title": "Example status", "show_diagnosis": True, "groups": [{"name": "API", "targets": ["api"]}]}
            ],
        }
    )
    server = start_status_server(store, config)
    assert server is not None
    yield server
    server.stop()
    store.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def test_the_status_page_draws_with_no_errors_no_admin_link_and_inert_payloads(served: WebServer, browser: Any, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    dialogs: list[str] = []
    page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))

    def dismiss(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", dismiss)
    try:
        answer = page.goto(f"{served.url}/status/public", wait_until="load")
        assert answer is not None and answer.status == 200
        page.wait_for_timeout(100)
        page.screenshot(path=str(tmp_path / "status.png"), full_page=True)
        assert (tmp_path / "status.png").stat().st_size > 10_000
        assert errors == [] and dialogs == []
        assert page.evaluate("window.__xss") is None
        assert page.locator("script").count() == 0 and page.locator("img[src='x']").count() == 0
        assert page.locator("form, input, button").count() == 0
        hrefs = page.eval_on_selector_all("a", "links => links.map(a => a.getAttribute('href'))")
        assert hrefs == []  # no way into the admin UI (or anywhere) from the page
        text = page.locator("main").inner_text()
        assert f"Example {SCRIPT}" in text and f"We are on it {SCRIPT}" in text and f"Web {SCRIPT}" in text
        assert "onerror=" in text  # the description, the reason: shown as text
        assert page.locator(".target").count() == 2 and page.locator(".bar").count() == 180
        # the bars draw: a day with failures is coloured apart from a day with none
        colours = page.eval_on_selector_all(".target[data-target='api'] .bar", "bars => bars.map(b => getComputedStyle(b).backgroundColor)")
        assert len(set(colours)) >= 2
        assert page.locator(".target[data-target='db']").get_attribute("data-state") in ("operational", "maintenance")
        for path in ("/", "/incidents", "/api/v1/targets"):
            answer = page.goto(served.url + path, wait_until="load")
            assert answer is not None and answer.status == (200 if path == "/" else 404), path
        assert [e for e in errors if "status of 404" not in e] == [] and dialogs == []  # the 404s are the point
    finally:
        context.close()


def test_a_status_page_with_the_diagnosis_shows_the_cause_in_plain_words_and_nothing_internal(hostile: WebServer, browser: Any) -> None:
    context = browser.new_context()
    page = context.new_page()
    try:
        answer = page.goto(f"{hostile.url}/status/public", wait_until="load")
        assert answer is not None and answer.status == 200
        text, html = page.locator("main").inner_text(), page.content()
        assert "Cause: the application answers with 5xx error statuses" in text
        assert "We are looking into errors on the API." in text
        hosts_and_versions = ("10.1.2.3", "svc", "pg-main", "db-internal", "5432", "8080", "BaseHTTP", "Python/3")
        notes_and_fixes = ("internal", "restarted", "rotated", "#", "consecutive", "server_error", "upstream", "dsn")
        assert not [s for s in (*SECRETS, *hosts_and_versions, *notes_and_fixes) if s in text], text
        assert not [s for s in (*SECRETS, *hosts_and_versions, "restarted", "rotated") if s in html]
    finally:
        context.close()
