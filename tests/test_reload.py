"""Issue #8, findings 7 and 10: SIGHUP never kills the daemon, applies what it can, and keeps checks on schedule."""

from __future__ import annotations

import functools
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from servers import Misbehaving, wait_for

from monitor import config as config_module
from monitor.daemon import Daemon
from monitor.store import Store

HOSTILE: dict[str, bytes] = {
    "non-utf8": b"targets: []\n# caf\xe9\n",
    "nesting": b"targets: " + b"[" * 20000 + b"]" * 20000 + b"\n",
    "inf": b"defaults: {interval: .inf}\ntargets: [{name: a, url: 'http://127.0.0.1:9/'}]\n",
    "huge": b"targets: [{name: a, url: 'http://127.0.0.1:9/', interval: 999999999999999999999d}]\n",
    "alias-bomb": b"a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
    + b"".join(f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]\n".encode() for n in range(1, 9))
    + b"targets: [{name: a, url: 'http://127.0.0.1:9/', headers: {X: '${HOME}'}, body: *a8}]\n",
    "recursive-alias": b"a: &a [*a]\ntargets: []\n",
    "huge-file": b"targets: []\n" + b"#" * (2 << 20) + b"\n",
    "wide": b"targets: [" + b"1," * 500_000 + b"1]\n",
    "nan-timeout": b"defaults: {timeout: .nan}\ntargets: [{name: a, url: 'http://127.0.0.1:9/'}]\n",
    "empty": b"",
}


def good(web: Misbehaving, *names: str, extra: str = "", interval: str = "200ms") -> str:
    targets = "".join(f"- {{name: {n}, url: '{web.url('/healthy')}', interval: {interval}}}\n" for n in names)
    return f"model: {{id: builtin}}\nmetrics: {{port: 0}}\n{extra}targets:\n{targets}"


@pytest.fixture
def daemon(web: Misbehaving, tmp_path: Path) -> Any:
    path = tmp_path / "m.yaml"
    path.write_text(good(web, "a", "b", interval="1h"))
    daemon = Daemon(config_module.load(path), store=Store(tmp_path / "m.db"), registry=CollectorRegistry(), config_path=str(path))
    daemon.start(serve_metrics=False)
    yield daemon
    daemon.stop()


def jobs(daemon: Daemon) -> dict[str, Any]:
    """Each scheduled target's next due time."""
    return daemon.schedule.due_times()


@pytest.mark.parametrize("name", list(HOSTILE))
def test_finding7_a_hostile_reload_changes_nothing(daemon: Daemon, name: str) -> None:
    wait_for(lambda: daemon.store.results.count_results() >= 2)
    before, config_before = jobs(daemon), daemon.config.model_dump()
    Path(daemon.config_path or "").write_bytes(HOSTILE[name])
    started = time.monotonic()
    assert daemon.reload() is False
    assert time.monotonic() - started < 2
    assert jobs(daemon) == before and daemon.config.model_dump() == config_before


def test_a_failed_reload_shows_in_metrics(daemon: Daemon, web: Misbehaving) -> None:
    path = Path(daemon.config_path or "")
    path.write_bytes(HOSTILE["alias-bomb"])
    assert daemon.reload() is False
    assert b"monitor_config_last_reload_successful 0.0" in daemon.metrics.scrape()
    path.write_text(good(web, "a", "b", interval="1h"))
    assert daemon.reload() is True
    scrape = daemon.metrics.scrape()
    assert b"monitor_config_last_reload_successful 1.0" in scrape
    assert b"monitor_config_last_reload_success_timestamp_seconds 1." in scrape


def test_finding7_a_failure_while_applying_is_logged_and_the_daemon_goes_on(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*_: Any) -> Any:
        raise RuntimeError("a bug while loading")

    monkeypatch.setattr(config_module, "load", broken)
    wait_for(lambda: daemon.store.results.count_results() >= 2)
    before = jobs(daemon)
    with caplog.at_level(logging.ERROR, "monitor.daemon"):
        assert daemon.reload() is False
    assert "config not reloaded" in caplog.text and jobs(daemon) == before


def test_finding10_reload_applies_concurrency_model_agent_and_keeps_unchanged_jobs_on_schedule(
    daemon: Daemon, web: Misbehaving, caplog: pytest.LogCaptureFixture
) -> None:
    wait_for(lambda: daemon.store.results.count_results() >= 2)
    before = jobs(daemon)
    assert daemon.investigator is not None and daemon.investigator.model_label == "builtin"
    path = Path(daemon.config_path or "")
    path.write_text(
        good(web, "a", "b", interval="1h")
        .replace(
            "model: {id: builtin}",
            (
                "database: elsewhere.db\nconcurrency: 7\nagent: {max_steps: 3}\ndetectors: {consecutive: 5}\n"
                "model: {id: openai/tiny, api_base: 'http://127.0.0.1:9/v1'}"
            ),
        )
        .replace("metrics: {port: 0}", "metrics: {port: 9999}")
    )
    with caplog.at_level(logging.WARNING, "monitor.daemon"):
        assert daemon.reload() is True
    assert daemon.config.concurrency == 7
    assert daemon.cycle.tracker.detectors.consecutive == 5
    # the new model imports litellm on the reload's worker thread: 5 s of CPU, far more on a busy machine
    wait_for(lambda: daemon.investigator is not None and daemon.investigator.model_label == "openai/tiny", timeout=60)
    assert daemon.investigator.agent.max_steps == 3
    assert jobs(daemon) == before  # unchanged targets keep their next run
    assert "database" in caplog.text and "metrics" in caplog.text and "restart" in caplog.text


def test_finding10_removed_targets_lose_their_series(daemon: Daemon, web: Misbehaving) -> None:
    wait_for(lambda: daemon.store.results.count_results("b") >= 1)
    assert b'target="b"' in daemon.metrics.scrape()
    Path(daemon.config_path or "").write_text(good(web, "a", interval="1h"))
    assert daemon.reload() is True
    assert list(jobs(daemon)) == ["a"]
    assert b'target="b"' not in daemon.metrics.scrape() and b'target="a"' in daemon.metrics.scrape()


def test_finding10_a_check_in_flight_when_its_target_is_removed_leaves_no_series(daemon: Daemon, web: Misbehaving) -> None:
    from monitor.checks.engine import Checker

    [b] = [t for t in daemon.config.targets if t.name == "b"]
    Path(daemon.config_path or "").write_text(good(web, "a", interval="1h"))
    assert daemon.reload() is True
    daemon.cycle.after_checks(Checker().run([b]))  # it started before the reload and ends after it
    assert b'target="b"' not in daemon.metrics.scrape()


def test_finding10_agent_turned_on_by_a_reload(web: Misbehaving, tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(good(web, "a", extra="agent: {mode: off}\n"))
    daemon = Daemon(config_module.load(path), store=Store(tmp_path / "m.db"), registry=CollectorRegistry(), config_path=str(path))
    daemon.start(serve_metrics=False)
    try:
        assert daemon.investigator is None
        path.write_text(good(web, "a", extra="agent: {mode: every_cycle}\n"))
        assert daemon.reload() is True
        wait_for(lambda: daemon.store.runs.runs_since(0) >= 1)
    finally:
        daemon.stop()


def test_finding10_import_monitor_daemon_leaves_smolagents_unloaded_when_the_agent_is_off(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom prometheus_client import CollectorRegistry\nfrom monitor.config import Config\n"
        "from monitor.daemon import Daemon\n"
        "d = Daemon(Config.model_validate({'agent': {'mode': 'off'}, 'database': sys.argv[1]}), "
        "registry=CollectorRegistry())\nd.metrics.scrape()\nd.close()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('smolagents', 'litellm')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.db")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.timeout(120)
def test_finding7_fifty_hostile_sighups_leave_the_daemon_checking_on_schedule_with_flat_memory(
    web: Misbehaving, tmp_path: Path, store_location: Any
) -> None:
    path, db = tmp_path / "m.yaml", tmp_path / "m.db"
    path.write_text(f"database: {store_location(db)}\nworkers: 1\n" + good(web, "a", extra="agent: {mode: off}\n"))
    process = subprocess.Popen(
        [sys.executable, "-m", "monitor", "run", "--config", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ},
    )
    lines: list[str] = []

    def refused(before: int) -> bool:
        return sum("config not reloaded" in line for line in lines) > before

    stdout = process.stdout
    assert stdout is not None  # stdout=PIPE
    reader = threading.Thread(target=lambda: lines.extend(iter(stdout.readline, "")), daemon=True)
    reader.start()
    try:
        store = Store(db)
        wait_for(lambda: store.results.count_results("a") >= 3, timeout=30)
        rss_before, started, count_before = rss_kb(process.pid), time.monotonic(), store.results.count_results("a")
        payloads = list(HOSTILE.values())
        for n in range(50):
            path.write_bytes(payloads[n % len(payloads)])
            process.send_signal(signal.SIGHUP)
            wait_for(functools.partial(refused, n), timeout=10)
            assert process.poll() is None, "".join(lines)
            if n == 9:
                rss_warm = rss_kb(process.pid)  # the first reloads import what a reload uses
        elapsed = time.monotonic() - started
        wait_for(lambda: store.results.count_results("a") > count_before + 2)
        checks = store.results.count_results("a") - count_before
        rss_after = rss_kb(process.pid)
        print(
            f"50 hostile SIGHUPs in {elapsed:.1f}s: RSS {rss_before} kB -> {rss_warm} kB after 10 -> {rss_after} kB, "
            f"{checks} checks of a 200 ms target (expected about {elapsed / 0.2:.0f})"
        )
        assert checks >= 0.5 * elapsed / 0.2, "".join(lines)
        assert rss_after - rss_before < 20_000 and rss_after - rss_warm < 5_000, (rss_before, rss_warm, rss_after)
        path.write_text(f"database: {db}\nworkers: 1\n" + good(web, "a", "c", extra="agent: {mode: off}\n"))
        process.send_signal(signal.SIGHUP)
        wait_for(lambda: store.results.count_results("c") >= 1)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
        assert process.returncode == 0, "".join(lines)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(5)  # the pipe's end: the daemon has exited
        stdout.close()


def test_finding10_healthz_and_the_worker_pool_follow_a_reload(web: Misbehaving, tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(good(web, "a", interval="1s"))
    daemon = Daemon(config_module.load(path), store=Store(tmp_path / "m.db"), registry=CollectorRegistry(), config_path=str(path))
    daemon.start()
    try:
        assert daemon.server is not None and daemon.server.max_age == 33
        names = [f"t{i}" for i in range(12)]
        path.write_text(good(web, *names, interval="2m").replace("/healthy", "/slow"))  # each answers after 3 s
        assert daemon.reload() is True
        assert daemon.server.max_age == 390  # a 2 m target is not stale after 33 s
        started = time.monotonic()
        wait_for(lambda: all(daemon.store.results.count_results(n) for n in names), timeout=15)
        assert time.monotonic() - started < 6  # checked side by side, not two at a time
    finally:
        daemon.stop()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=200) | st.text(alphabet="[]{}&*!|>-:?,#'\"%@ \n\tax1.$", max_size=120).map(str.encode))
def test_fuzz_reload_never_raises_and_a_refused_file_changes_nothing(daemon: Daemon, data: bytes) -> None:
    wait_for(lambda: daemon.store.results.count_results() >= 2)  # the first checks, due at start, have moved the schedule
    before, config_before = jobs(daemon), daemon.config.model_dump()
    Path(daemon.config_path or "").write_bytes(data)
    if daemon.reload() is False:
        assert jobs(daemon) == before and daemon.config.model_dump() == config_before


def test_the_web_ui_follows_a_reload_that_removes_one_target_and_adds_another(web: Misbehaving, tmp_path: Path) -> None:
    import httpx

    path = tmp_path / "m.yaml"
    listen = "web: {enabled: true, listen: '127.0.0.1:0'}\n"
    path.write_text(good(web, "a", "b", extra=listen, interval="1h"))
    daemon = Daemon(config_module.load(path), store=Store(tmp_path / "m.db"), registry=CollectorRegistry(), config_path=str(path))
    daemon.start()
    try:
        assert daemon.web is not None
        with httpx.Client(base_url=daemon.web.url, timeout=10) as ui:
            wait_for(lambda: daemon.store.results.count_results("b") >= 1)
            assert ui.get("/targets/b").status_code == 200
            path.write_text(good(web, "a", "c", extra=listen, interval="1h"))
            assert daemon.reload() is True
            wait_for(lambda: daemon.store.results.count_results("c") >= 1)
            assert ui.get("/targets/c").status_code == 200
            assert ui.get("/api/v1/targets/c").status_code == 200
            assert ui.get("/targets/b").status_code == 404
            listed = [row["name"] for row in ui.get("/api/v1/targets").json()["items"]]
            assert listed == ["a", "c"] or sorted(listed) == ["a", "c"]
            assert 'href="/targets/b"' not in ui.get("/fragments/overview").text
    finally:
        daemon.stop()
