"""Targets and maintenance windows changed over the admin API, as a script would: a real daemon on loopback with
its web UI, a config file with comments, and a loopback target that counts the checks it gets.

Each change leaves every other line of the file as it was, byte for byte (difflib says which lines changed), is
checked by the daemon within one interval, and is logged with the name of the token that made it; two edits made
against one version give one success and one refusal."""

from __future__ import annotations

import difflib
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry
from servers import Background, wait_for

from monitor import config as config_module
from monitor.config.configfile import ConfigFile
from monitor.config.edits import Edit, EditError, apply
from monitor.daemon import Daemon
from monitor.store import Store

TOKEN = "admin-test-token-0123456789"
ALICE = "alice-token-abcdefghijk-0123"
INTERVAL = 3.0  # seconds: the new target's interval, within which the daemon checks it


class _Counting(BaseHTTPRequestHandler):
    server: Counting

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.hits.setdefault(self.path, []).append(time.monotonic())
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


class Counting(Background):
    """A loopback target that answers 200 and records when each path was asked for."""

    def __init__(self) -> None:
        super().__init__(_Counting)
        self.hits: dict[str, list[float]] = {}


def config_text(target: Counting, extra: str = "") -> str:
    return (
        "# the monitor's config: edited by hand and from the UI\n"
        "model: {id: builtin}\n"
        "metrics: {port: 0}\n"
        f"web: {{enabled: true, listen: '127.0.0.1:0', token: {TOKEN}, tokens: {{alice: {ALICE}}}}}\n"
        f"{extra}"
        "targets:\n"
        "  # the API, checked often\n"
        f"  - name: api   # owned by the platform team\n"
        f"    url: '{target.base}/api'\n"
        "    interval: 1h\n"
        "\n"
        "  # the shop\n"
        f"  - {{name: shop, url: '{target.base}/shop', interval: 1h}}\n"
        "\n"
        "# alerts go nowhere in this test\n"
    )


@pytest.fixture
def target() -> Iterator[Counting]:
    with Counting() as server:
        yield server


@pytest.fixture
def running(target: Counting, tmp_path: Path) -> Iterator[tuple[Daemon, Path, httpx.Client]]:
    path = tmp_path / "monitor.yaml"
    path.write_text(config_text(target))
    daemon = Daemon(config_module.load(path), store=Store(tmp_path / "m.db"), registry=CollectorRegistry(), config_path=str(path))
    daemon.start()
    try:
        assert daemon.web is not None
        with httpx.Client(base_url=daemon.web.url, timeout=10, headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            yield daemon, path, client
    finally:
        daemon.stop()


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    """The lines removed and the lines added between two texts."""
    diff = list(difflib.ndiff(before.splitlines(keepends=True), after.splitlines(keepends=True)))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


def version(client: httpx.Client) -> str:
    answer = client.get("/api/v1/admin/targets")
    assert answer.status_code == 200, answer.text
    return str(answer.json()["version"])


def test_adding_editing_pausing_and_deleting_a_target_changes_only_its_lines(
    running: tuple[Daemon, Path, httpx.Client], target: Counting
) -> None:
    daemon, path, client = running
    original = path.read_text()
    listed = client.get("/api/v1/admin/targets").json()
    assert [t["name"] for t in listed["items"]] == ["api", "shop"] and listed["writable"] is True

    new = {"name": "new", "url": f"{target.base}/new", "interval": f"{INTERVAL:g}s"}
    added = client.post("/api/v1/admin/targets", json=new, headers={"If-Match": listed["version"]})
    assert added.status_code == 201, added.text
    answered = time.monotonic()
    first = wait_for(lambda: target.hits.get("/new"), timeout=INTERVAL + 5)[0]
    assert first - answered < INTERVAL  # the daemon checked it within one interval of the answer
    after_add = path.read_text()
    removed, lines = changed_lines(original, after_add)
    assert removed == [] and lines == [f"  - {{name: new, url: {target.base}/new, interval: {INTERVAL:g}s}}\n"]
    assert added.json()["reloaded"] is True and added.headers["ETag"].strip('"') == added.json()["version"]

    patched = client.patch("/api/v1/admin/targets/api", json={"interval": "30m"}, headers={"If-Match": added.json()["version"]})
    assert patched.status_code == 200, patched.text
    assert changed_lines(after_add, path.read_text()) == (["    interval: 1h\n"], ["    interval: 30m\n"])
    assert daemon.config.target("api").interval == 1800

    paused = client.post("/api/v1/admin/targets/new/pause", headers={"If-Match": patched.json()["version"]})
    assert paused.status_code == 200, paused.text
    assert "new" not in {t.name for t in daemon.own_targets()} and daemon.config.target("new").paused
    resumed = client.post("/api/v1/admin/targets/new/resume", headers={"If-Match": paused.json()["version"]})
    assert "new" in {t.name for t in daemon.own_targets()}

    deleted = client.delete("/api/v1/admin/targets/new", headers={"If-Match": resumed.json()["version"]})
    assert deleted.status_code == 200, deleted.text
    removed, lines = changed_lines(original, path.read_text())
    assert (removed, lines) == (["    interval: 1h\n"], ["    interval: 30m\n"])  # the rest as it was, byte for byte
    assert "new" not in {t.name for t in daemon.config.targets}
    log = client.get("/api/v1/admin/changes").json()["items"]
    assert [(c["actor"], c["action"], c["ok"]) for c in reversed(log)] == [
        ("token", "add targets", 1),
        ("token", "patch targets/api", 1),
        ("token", "patch targets/new", 1),
        ("token", "patch targets/new", 1),
        ("token", "delete targets/new", 1),
    ]


def test_two_edits_against_one_version_give_one_success_and_one_refusal(running: tuple[Daemon, Path, httpx.Client]) -> None:
    daemon, path, client = running
    seen, start = version(client), threading.Barrier(2)
    answers: list[httpx.Response] = []

    def edit(interval: str) -> None:
        with httpx.Client(base_url=str(client.base_url), timeout=10, headers={"Authorization": f"Bearer {ALICE}"}) as own:
            start.wait()
            answers.append(own.patch("/api/v1/admin/targets/shop", json={"interval": interval}, headers={"If-Match": seen}))

    threads = [threading.Thread(target=edit, args=(interval,)) for interval in ("2h", "3h")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(a.status_code for a in answers) == [200, 412]
    refused = next(a for a in answers if a.status_code == 412)
    assert "changed since" in refused.json()["error"]
    won = next(a for a in answers if a.status_code == 200).request.content
    assert daemon.config.target("shop").interval == (7200 if b"2h" in won else 10800)
    log = client.get("/api/v1/admin/changes").json()["items"]
    assert sorted((c["actor"], c["ok"]) for c in log) == [("alice", 0), ("alice", 1)]


def test_a_request_without_the_token_or_a_version_or_with_a_bad_target_is_refused(running: tuple[Daemon, Path, httpx.Client]) -> None:
    daemon, path, client = running
    original, url = path.read_bytes(), str(client.base_url)
    assert httpx.get(url + "/api/v1/admin/targets").status_code == 401
    wrong = httpx.post(url + "/api/v1/admin/targets", json={"name": "x"}, headers={"Authorization": "Bearer not-the-token-at-all"})
    assert wrong.status_code == 401 and wrong.headers["WWW-Authenticate"].startswith("Bearer")
    assert client.patch("/api/v1/admin/targets/api", json={"interval": "5m"}).status_code == 428
    stale = client.patch("/api/v1/admin/targets/api", json={"interval": "5m"}, headers={"If-Match": "0" * 20})
    assert stale.status_code == 412
    bad = client.post("/api/v1/admin/targets", json={"name": "bad", "url": "ftp://nowhere"}, headers={"If-Match": version(client)})
    assert bad.status_code == 422 and "targets[2].url" in bad.json()["error"]
    twice = client.post("/api/v1/admin/targets", json={"name": "api", "url": "http://127.0.0.1:9/"}, headers={"If-Match": version(client)})
    assert twice.status_code == 422
    assert client.delete("/api/v1/admin/targets/nothing", headers={"If-Match": version(client)}).status_code == 404
    assert path.read_bytes() == original
    assert [c["ok"] for c in client.get("/api/v1/admin/changes").json()["items"]] == [0, 0, 0, 0, 0]  # no token: not logged


def test_maintenance_windows_are_added_and_deleted_by_position(running: tuple[Daemon, Path, httpx.Client]) -> None:
    daemon, path, client = running
    original = path.read_text()
    window = {"targets": ["api"], "start": "2030-01-01T00:00:00Z", "end": "2030-01-01T02:00:00Z", "reason": "upgrade"}
    seen = client.get("/api/v1/admin/maintenance").json()
    assert seen["items"] == []
    added = client.post("/api/v1/admin/maintenance", json=window, headers={"If-Match": seen["version"]})
    assert added.status_code == 201, added.text
    assert [w.reason for w in daemon.config.maintenance] == ["upgrade"]
    assert path.read_text().startswith(original)  # appended after every line, none touched
    gone = client.delete("/api/v1/admin/maintenance/0", headers={"If-Match": added.json()["version"]})
    assert gone.status_code == 200 and daemon.config.maintenance == []


def test_a_config_with_target_files_or_behind_a_link_says_it_cannot_be_written_back(target: Counting, tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text(f"- {{name: web-1, url: '{target.base}/w'}}\n")
    path = tmp_path / "monitor.yaml"
    path.write_text(config_text(target, extra="target_files: [fleet.yaml]\n"))
    file = ConfigFile(path)
    assert "target files" in (file.unwritable() or "")
    with pytest.raises(EditError) as refused:
        file.change(Edit("targets", "delete", "api"), file.read()[1])
    assert refused.value.status == 409
    link = tmp_path / "link.yaml"
    link.symlink_to(path)
    assert "symbolic link" in (ConfigFile(link).unwritable() or "")
    if os.geteuid() != 0:  # root may write a read-only file
        path.chmod(0o444)
        assert "read-only" in (ConfigFile(path).unwritable() or "")


@pytest.mark.parametrize(
    ("edit", "removed", "added"),
    [
        (Edit("targets", "patch", "b", {"interval": "1m"}), ["  - {name: b, url: 'http://y/'}  # flow\n"], []),
        (Edit("targets", "patch", "a", {"labels": None}), ["    labels: {team: web}  # who\n"], []),
        (Edit("targets", "replace", "a", {"name": "a", "url": "https://***@x/", "labels": {"team": "web"}}), [], []),
        (
            Edit("targets", "delete", "a"),
            ["  - name: a   # first\n", "    url: https://u:secret@x/\n", "    labels: {team: web}  # who\n"],
            [],
        ),
    ],
)
def test_an_edit_changes_the_items_lines_and_keeps_its_comments(edit: Edit, removed: list[str], added: list[str]) -> None:
    text = (
        "# header\ntargets:\n  - name: a   # first\n    url: https://u:secret@x/\n    labels: {team: web}  # who\n"
        "  # between\n  - {name: b, url: 'http://y/'}  # flow\n# end\n"
    )
    out = apply(text, edit)
    gone, new = changed_lines(text, out)
    assert gone == removed
    if edit.key == "b":
        assert new == ["  - {name: b, url: 'http://y/', interval: 1m}  # flow\n"]
    else:
        assert new == added


def test_the_admin_pages_refuse_a_form_from_elsewhere_and_say_when_the_file_cannot_be_written(
    running: tuple[Daemon, Path, httpx.Client], target: Counting, tmp_path: Path
) -> None:
    daemon, path, client = running
    original, url = path.read_bytes(), str(client.base_url)
    page = httpx.get(url + "/admin/targets")
    assert page.status_code == 200 and "shop" in page.text and "Not editable here" not in page.text
    foreign = httpx.post(
        url + "/admin/targets", data={"name": "x", "url": "http://127.0.0.1:9/", "token": TOKEN}, headers={"Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403 and path.read_bytes() == original
    (tmp_path / "fleet.yaml").write_text(f"- {{name: web-1, url: '{target.base}/w'}}\n")
    path.write_text(original.decode() + "target_files: [fleet.yaml]\n")
    assert "target files" in httpx.get(url + "/admin/targets").text
    assert client.get("/api/v1/admin/targets").json()["why_not"].startswith("this config lists targets in target files")
