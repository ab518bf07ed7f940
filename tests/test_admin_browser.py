"""The admin pages in a real browser (Debian's Chromium through Playwright): a target added, checked, and deleted
from the UI, the file's other lines unchanged byte for byte, with no console error under the strict CSP."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import playwright.sync_api as playwright_api
import pytest
from prometheus_client import CollectorRegistry
from servers import wait_for
from test_admin_targets import TOKEN, Counting, changed_lines, config_text

from monitor import config as config_module
from monitor.daemon import Daemon
from monitor.store import Store

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"]


@pytest.fixture
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def test_a_target_added_and_deleted_in_the_browser_changes_only_its_line(browser: Any, tmp_path: Path) -> None:
    with Counting() as target:
        path = tmp_path / "monitor.yaml"
        path.write_text(config_text(target))
        original = path.read_text()
        daemon = Daemon(config_module.load(path), store=Store(tmp_path / "m.db"), registry=CollectorRegistry(), config_path=str(path))
        daemon.start()
        try:
            assert daemon.web is not None
            page = browser.new_context().new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(daemon.web.url + "/admin/targets")
            assert page.locator("table.admin tbody tr").count() == 2
            page.fill("input[name=name]", "from-ui")
            page.fill("input[name=url]", f"{target.base}/ui")
            page.fill("input[name=interval]", "2s")
            page.fill("input[name=token]", TOKEN)
            page.click("form.admin-add button[type=submit]")
            page.wait_for_url("**/admin/targets")
            assert page.locator("a", has_text="from-ui").count() == 1
            wait_for(lambda: target.hits.get("/ui"), timeout=5)  # checked within about one interval
            removed, added = changed_lines(original, path.read_text())
            assert removed == [] and added == [f"  - {{name: from-ui, url: {target.base}/ui, interval: 2s}}\n"]
            assert "token" in page.locator("table.changes").inner_text()  # who: web.token's name

            page.click("text=from-ui")
            page.fill("input[name=token]", TOKEN)
            page.click("button[value=delete]")
            page.wait_for_url("**/admin/targets")
            assert page.locator("a", has_text="from-ui").count() == 0
            assert path.read_text() == original  # byte for byte
            assert "from-ui" not in {t.name for t in daemon.config.targets}
            assert errors == []
            page.fill("input[name=name]", "stale")
            page.fill("input[name=url]", f"{target.base}/stale")
            page.fill("input[name=token]", TOKEN)
            path.write_text(original + "# edited by hand meanwhile\n")
            page.click("form.admin-add button[type=submit]")
            assert "changed since" in page.content()  # the stale page is refused, not overwritten
            assert [e for e in errors if "412" not in e] == []
        finally:
            daemon.stop()
