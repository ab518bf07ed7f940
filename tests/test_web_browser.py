"""The web UI in a real browser: Debian's Chromium driven by Playwright, against the daemon's own
listener and against ``monitor web`` reading the same database.

One daemon builds a real history for the whole module: a target whose answers carry script
payloads (status line, header, body) fails, the agent (a scripted model that speaks Ollama's
protocol) investigates with payloads in its tool arguments and diagnosis, the incident resolves
and gets a resolution note, then the target fails again and the second investigation recalls the
first incident. Every page is then loaded in Chromium.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import playwright.sync_api as playwright_api
import pytest
from ollama import FakeOllama, call, final, prompt_text
from past import known
from prometheus_client import CollectorRegistry
from servers import Background, Receiver, free_port, response, wait_for

from monitor.config import Config
from monitor.daemon import Daemon
from monitor.store.writes import IncidentWrites

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"  # Debian's package; .ci/run installs it

SCRIPT = "<script>window.__xss = 1; alert('xss')</script>"
IMG = '"><img src=x onerror="window.__xss = 2; alert(2)">'
PAYLOAD = SCRIPT + IMG
REFRESH = 1.0  # seconds between the overview's refreshes in these tests
TOKEN = "browser-test-token-0123"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class _Hostile(Background):
    """A target that is healthy, or answers 500 with script in its status line, a header and its body."""

    def __init__(self) -> None:
        import socketserver

        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                sock: socket.socket = self.request
                sock.settimeout(10)
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = sock.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                if server.state == "healthy":
                    sock.sendall(response(200, b'{"status": "ok"}'))
                else:
                    body = f"<html>{PAYLOAD}</html>".encode()
                    head = (
                        f"HTTP/1.1 500 {SCRIPT}\r\nContent-Type: text/html\r\nX-Debug: {IMG}\r\n"
                        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                    )
                    sock.sendall(head.encode() + body)

        super().__init__(Handler)
        self.state = "healthy"

    def url(self, path: str = "/") -> str:
        return self.base + path


def _model(body: dict[str, Any]) -> dict[str, Any]:
    """A scripted model that answers by the investigation it is in, however many runs the daemon starts:
    on incident #1, script in its tool arguments and diagnosis; on a later one, a re-check of the target
    (whose answer is quoted) and a diagnosis naming #1, which recall showed it, as the same problem."""
    text = prompt_text(body)
    tasks = re.findall(r"incident #(\d+) is open", text)
    incident = int(tasks[-1]) if tasks else 0
    this_run = text[text.rfind(f"incident #{incident} is open") :]
    if incident == 1:
        if "search_incidents" not in this_run:
            return call("search_incidents", query=PAYLOAD)
        if "record_diagnosis" not in this_run:
            return call(
                "record_diagnosis",
                root_cause="server_error",
                related_incident="no",
                confidence="high",
                summary=f"the pool is exhausted {PAYLOAD}",
            )
        return final(f"restart the pool {PAYLOAD}")
    if "check_target" not in this_run:
        return call("check_target", name="api")
    if "record_diagnosis" not in this_run:
        return call(
            "record_diagnosis",
            root_cause="server_error",
            related_incident="#1",
            confidence="high",
            summary="the pool is exhausted again; restart it as in #1",
        )
    return final("the same as incident #1: restart the pool")


class Site:
    """The daemon with its web UI, the hostile target, a healthy one that a test can break, and
    ``monitor web`` over the same database."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.api, self.shop, self.hook = _Hostile(), _Hostile(), Receiver()

    def start(self) -> Site:
        self.api.__enter__()
        self.shop.__enter__()
        self.hook.__enter__()
        self.ollama = FakeOllama(default=_model).__enter__()
        self.config_path = self.tmp / "monitor.yaml"
        self.db = self.tmp / "monitor.db"
        self.config_path.write_text(
            f"database: {self.db}\n"
            f"model: {{id: ollama_chat/llama3.2, api_base: '{self.ollama.url}', retries: 0}}\n"
            "detectors: {consecutive: 2, recover_after: 2}\n"
            "metrics: {port: 0}\n"
            f"alerts: {{webhooks: [{{url: '{self.hook.url}'}}]}}\n"
            f"web: {{enabled: true, listen: '127.0.0.1:0', refresh: {REFRESH}, token: {TOKEN}}}\n"
            "targets:\n"
            f"- {{name: api, url: '{self.api.url()}', interval: 200ms, timeout: 2s}}\n"
            f"- {{name: shop, url: '{self.shop.url()}', interval: 200ms, timeout: 2s}}\n"
        )
        from monitor import config as config_module

        config: Config = config_module.load(self.config_path)
        self.daemon = Daemon(config, registry=CollectorRegistry(), config_path=str(self.config_path))
        self.daemon.start()
        assert self.daemon.web is not None
        self.daemon_url = self.daemon.web.url
        self._history()
        self.cli_url, self.cli = self._monitor_web()
        return self

    def _history(self) -> None:
        store = self.daemon.store
        wait_for(lambda: store.results.count_results("api") >= 3)
        self.api.state = "hostile"
        first = wait_for(lambda: store.incidents.open_incidents("api"), timeout=30)[0]
        # the diagnosis recorded, and the run that recorded it finished (root_cause alone is set on opening)
        wait_for(lambda: known(store.incidents.incident(first.id)).diagnosis and self.finished_run(first.id), timeout=60)
        self.api.state = "healthy"
        wait_for(lambda: known(store.incidents.incident(first.id)).status == "resolved", timeout=30)
        IncidentWrites(store).update_incident(first.id, resolution=f"restarted the connection pool {PAYLOAD}")
        self.api.state = "hostile"
        second = wait_for(lambda: [i for i in store.incidents.open_incidents("api") if i.id != first.id], timeout=30)[0]
        wait_for(
            lambda: known(store.incidents.incident(second.id)).related_incident == first.id and self.finished_run(second.id), timeout=60
        )
        self.first, self.second = first.id, second.id
        self.first_run, self.run_id = self.finished_run(first.id), self.finished_run(second.id)
        wait_for(lambda: len(self.hook.received) >= 3, timeout=30)  # opened, resolved, opened
        for _ in range(2):  # two memory samples (the daemon takes one a minute)
            self.daemon.housekeeping()

    def finished_run(self, incident_id: int) -> int | None:
        """The newest finished agent run of the incident, if there is one."""
        return next((r.id for r in self.daemon.store.runs.recent_runs(50) if r.incident_id == incident_id and r.state != "running"), None)

    def _monitor_web(self) -> tuple[str, subprocess.Popen[bytes]]:
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "monitor", "web", "--config", str(self.config_path), "--listen", f"127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        url = f"http://127.0.0.1:{port}"

        def up() -> bool:
            try:
                return httpx.get(f"{url}/api/v1/targets", timeout=1).status_code == 200
            except httpx.HTTPError:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                return False

        wait_for(up, timeout=30, every=0.1)
        return url, process

    def stop(self) -> None:
        if hasattr(self, "cli"):
            self.cli.terminate()
            with self.cli:  # closes its stderr pipe
                self.cli.wait(10)
        if hasattr(self, "daemon"):
            self.daemon.stop()
        for closing in (getattr(self, "ollama", None), self.api, self.shop, self.hook):
            if closing is not None:
                closing.__exit__(None, None, None)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    running = Site(tmp_path_factory.mktemp("web"))
    try:
        yield running.start()
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(params=["daemon", "monitor web"])
def base(request: pytest.FixtureRequest, site: Site) -> str:
    return site.daemon_url if request.param == "daemon" else site.cli_url


class Page:
    """A browser tab that records console errors, uncaught exceptions, dialogs and failed requests."""

    def __init__(self, browser: Any, base: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.base = base
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("console", lambda m: self.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        # a refresh still in flight when the test navigates away is aborted by the browser: not an error
        self.page.on(
            "requestfailed",
            lambda r: None if r.failure == "net::ERR_ABORTED" else self.errors.append(f"request failed: {r.url} {r.failure}"),
        )
        self.page.on("dialog", self.dismiss)

    def dismiss(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open(self, path: str) -> Any:
        answer = self.page.goto(self.base + path, wait_until="load")
        assert answer is not None and answer.status == 200, f"{path}: {answer.status if answer else None}"
        return self.page

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser: Any, base: str) -> Iterator[Page]:
    page = Page(browser, base)
    yield page
    page.close()


def pages(site: Site) -> dict[str, str]:
    return {
        "overview": "/",
        "target": "/targets/api",
        "incidents": "/incidents",
        "incident": f"/incidents/{site.second}",
        "first-incident": f"/incidents/{site.first}",
        "runs": "/runs",
        "run": f"/runs/{site.run_id}",
        "first-run": f"/runs/{site.first_run}",
        "memory": "/memory",
    }


def test_every_page_loads_without_console_errors_and_is_screenshotted(site: Site, tab: Page, tmp_path: Path) -> None:
    for name, path in pages(site).items():
        page = tab.open(path)
        page.wait_for_timeout(50)  # badges and late console messages
        shot = tmp_path / f"{name}.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
    assert tab.errors == []
    assert tab.dialogs == []
    assert tab.open("/targets/api").locator("h1 .state").inner_text() in ("down", "up")
    badges = tab.page.locator(".badges img")
    assert badges.count() == 3
    assert all(badges.nth(i).evaluate("img => img.naturalWidth") > 0 for i in range(3))  # each badge drew


def test_overview_shows_a_failing_target_as_down_within_one_refresh(site: Site, tab: Page) -> None:
    site.shop.state = "healthy"
    wait_for(lambda: (r := site.daemon.store.results.latest_result("shop")) is not None and r.ok, timeout=10)
    page = tab.open("/")
    row = page.locator('tr.target[data-target="shop"]')
    wait_for(lambda: row.get_attribute("data-state") == "up", timeout=10)
    page.evaluate("window.__same_page = true")  # gone if the page reloaded instead of refreshing in place
    site.shop.state = "hostile"
    failed_at = wait_for(lambda: r.checked_at if (r := site.daemon.store.results.latest_result("shop")) and not r.ok else None, timeout=10)
    page.wait_for_selector('tr.target[data-target="shop"][data-state="down"]', timeout=(2 * REFRESH + 3) * 1000)
    seen = time.time()
    assert seen - failed_at < 2 * REFRESH + 3  # one refresh, with slack for a loaded machine
    assert page.evaluate("window.__same_page") is True
    assert "down" in row.locator(".state").inner_text()
    assert tab.errors == [] and tab.dialogs == []
    site.shop.state = "healthy"


def test_incident_page_shows_the_recalled_incident_and_the_diagnosis(site: Site, tab: Page) -> None:
    page = tab.open(f"/incidents/{site.second}")
    recalled = page.locator("ul.recalled li")
    assert recalled.count() >= 1
    link = recalled.first.locator(f'a[href="/incidents/{site.first}"]')
    assert link.inner_text() == f"#{site.first}"
    assert "restarted the connection pool" in recalled.first.inner_text()  # its resolution note
    diagnosis = page.locator("dd.diagnosis").inner_text()
    assert "server_error" in diagnosis and "restart it as in #1" in diagnosis
    timeline = page.locator("ol.timeline li")
    kinds = [timeline.nth(i).get_attribute("class") for i in range(timeline.count())]
    assert any("event-detected" in k for k in kinds) and any("event-agent" in k for k in kinds)
    assert any("failed" in k for k in kinds)  # the failed checks that led to it
    alerts = page.locator("table.notifications tbody tr")
    assert "opened" in alerts.first.inner_text() and "webhook:" in alerts.first.inner_text()
    assert "delivered" in alerts.first.inner_text()
    link.click()
    page.wait_for_url(f"**/incidents/{site.first}")
    assert page.locator("dd.resolution").inner_text().startswith("restarted the connection pool")
    assert tab.errors == []


def test_script_from_targets_and_the_model_stays_inert_text(site: Site, tab: Page) -> None:
    for name, path in pages(site).items():
        page = tab.open(path)
        page.wait_for_timeout(50)
        assert page.evaluate("window.__xss") is None, name
        assert page.locator("img[src='x']").count() == 0, name
        assert page.locator("script").count() == 1, name  # only /static/app.js
    assert tab.dialogs == []
    # the payloads are there, shown as text: the first run's tool arguments and diagnosis, the target's answer
    run = tab.open(f"/runs/{site.first_run}")
    text = run.locator("main").inner_text()
    assert SCRIPT in text and "onerror=" in text
    # the target's body, quoted by check_target as text; a long observation is folded, with the whole text in the
    # fold (the cut moves with the headline before it, so read the fold's text, not what shows when closed)
    answered = tab.open(f"/runs/{site.run_id}").locator("div.observation").first.text_content() or ""
    assert "<html><script" in answered
    incident = tab.open(f"/incidents/{site.first}")
    assert SCRIPT in incident.locator("dd.diagnosis").inner_text()
    assert SCRIPT in incident.locator("dd.resolution").inner_text()
    assert tab.errors == []


def test_an_incident_is_acknowledged_through_its_form_and_the_note_stays_text(site: Site, tab: Page) -> None:
    page = tab.open(f"/incidents/{site.second}")
    page.select_option("form.actions select[name=action]", "acknowledge")
    page.fill("form.actions input[name=note]", f"on it {PAYLOAD}")
    page.fill("form.actions input[name=token]", TOKEN)
    with page.expect_navigation():
        page.click("form.actions button[type=submit]")
    assert page.url.endswith(f"/incidents/{site.second}"), page.locator("main").inner_text()
    done = page.locator("table.web-actions tbody tr").last.inner_text()
    assert "acknowledge" in done and "done: acknowledged" in done and SCRIPT in done
    assert page.evaluate("window.__xss") is None and tab.dialogs == [] and tab.errors == []


def test_the_csp_header_forbids_inline_script(site: Site, base: str) -> None:
    answer = httpx.get(f"{base}/")
    csp = answer.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "object-src 'none'" in csp
    assert answer.headers["x-content-type-options"] == "nosniff"
