"""The daemon end to end: scheduled checks, incidents, the agent, webhooks, metrics, signals."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from ollama import FakeOllama, final
from outbox import plain_alerts, queue
from past import known
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from servers import Misbehaving, Receiver, wait_for

from monitor import wiring
from monitor.checks.engine import Checker
from monitor.config import Config
from monitor.daemon import Daemon, daemon_cycle
from monitor.store import Store
from monitor.store.writes import IncidentWrites


def scrape(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/metrics").text
    return {
        f"{s.name}{sorted(s.labels.items()) if s.labels else ''}": s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_daemon_opens_and_resolves_incidents_alerts_and_stays_quiet_while_healthy(db_path: str) -> None:
    with Misbehaving() as web, Receiver() as hook, FakeOllama(default=final("the api returns 500s; roll back")) as ollama:
        config = Config.model_validate(
            {
                "database": db_path,
                "targets": [{"name": "api", "url": web.url("/state"), "interval": "200ms", "timeout": "1s"}],
                "detectors": {"consecutive": 2, "recover_after": 2},
                "model": {"id": "ollama_chat/llama3.2", "api_base": ollama.url, "retries": 0},
                "alerts": {"webhooks": [{"url": hook.url}]},
                "metrics": {"port": 0},
            }
        )
        daemon = Daemon(config, registry=CollectorRegistry())
        daemon.start()
        try:
            assert daemon.server is not None
            wait_for(lambda: daemon.store.results.count_results("api") >= 5)
            assert ollama.chats == [] and daemon.store.incidents.recent_incidents() == []
            healthy = scrape(daemon.server.url)
            assert httpx.get(f"{daemon.server.url}/healthz").json()["status"] == "ok"

            web.state = "error"
            wait_for(lambda: daemon.store.incidents.open_incidents("api"))
            wait_for(lambda: [h for h in hook.received if h["event"] == "opened"])
            wait_for(lambda: daemon.store.runs.recent_runs(1) and daemon.store.runs.recent_runs(1)[0].state == "success")
            failing = scrape(daemon.server.url)

            web.state = "healthy"
            wait_for(lambda: not daemon.store.incidents.open_incidents("api"))
            wait_for(lambda: [h for h in hook.received if h["event"] == "resolved"])
        finally:
            started = time.monotonic()
            daemon.stop()
            stop_seconds = time.monotonic() - started
    assert stop_seconds < 10
    assert healthy["monitor_check_up[('kind', 'http'), ('target', 'api')]"] == 1.0
    assert failing["monitor_check_up[('kind', 'http'), ('target', 'api')]"] == 0.0
    assert failing["monitor_agent_memory_bytes"] > healthy["monitor_agent_memory_bytes"] == 0.0
    assert failing["monitor_agent_memory_steps[('type', 'action')]"] >= 1
    assert failing["monitor_incidents_open[('target', 'api')]"] == 1.0
    assert failing["monitor_agent_runs_total[('state', 'success')]"] >= 1
    assert [h["event"] for h in hook.received] == ["opened", "resolved"]
    assert hook.received[0]["incident"]["target"] == "api"
    assert len(ollama.chats) == 1  # one investigation, one model call


def test_promtool_accepts_the_scrape(db_path: str, web: Misbehaving) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package prometheus; .ci/run installs it)")
    config = Config.model_validate(
        {"database": db_path, "model": {"id": "builtin"}, "targets": [{"name": "api", "url": web.url("/500"), "timeout": "1s"}]}
    )
    daemon = Daemon(config, registry=CollectorRegistry())
    daemon.cycle.after_checks(Checker().run(config.targets))
    text = daemon.metrics.scrape()
    daemon.close()
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr
    assert b"monitor_db_size_bytes" in text and b"monitor_check_duration_seconds_bucket" in text


def failing_config(web: Misbehaving, db_path: str, **extra: Any) -> Config:
    return Config.model_validate(
        {
            "database": db_path,
            "model": {"id": "builtin"},
            "detectors": {"consecutive": 1},
            "targets": [{"name": "a", "url": web.url("/500"), "timeout": "1s"}, {"name": "b", "url": web.url("/500"), "timeout": "1s"}],
            **extra,
        }
    )


def test_over_budget_the_incident_still_opens_and_says_why(web: Misbehaving, db_path: str) -> None:

    config = failing_config(web, db_path, agent={"max_runs_per_hour": 1})
    store = Store(db_path)
    cycle = daemon_cycle(config, store, investigator=wiring.investigator(config, store))
    cycle.after_checks(Checker().run(config.targets))
    first, second = store.incidents.recent_incidents(limit=2)[::-1]
    assert first.agent_state == "success"
    assert second.agent_state == "over_budget" and "over budget" in (second.notes or "")
    assert store.runs.runs_since(0) == 1


def test_maintenance_records_but_does_not_alert(web: Misbehaving, db_path: str) -> None:
    config = failing_config(
        web,
        db_path,
        maintenance=[{"targets": ["a"], "start": "2000-01-01T00:00:00Z", "end": "2999-01-01T00:00:00Z", "reason": "upgrade"}],
        alerts={"webhooks": [{"url": "http://127.0.0.1:9/hook"}]},
    )
    store = Store(db_path)
    cycle = daemon_cycle(config, store, alerts=plain_alerts(config.alerts, store))
    events = cycle.after_checks(Checker().run(config.targets))
    assert sorted(e.incident.target for e in events) == ["a", "b"]
    assert store.results.count_results() == 2
    assert [r.receiver for r in store.outbox.due_notifications(time.time() + 1)] == ["webhook:http://127.0.0.1:9/hook"]
    assert store.incidents.recent_incidents(limit=5)[-1].silenced == 1


def test_undelivered_notifications_are_retried_after_a_restart(db_path: str) -> None:
    with Receiver(status=503) as hook:
        config = Config.model_validate({"alerts": {"webhooks": [{"url": hook.url}]}})
        store = Store(db_path)
        alerts = plain_alerts(config.alerts, store)
        incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
        from monitor.incidents.tracker import Event

        assert queue(alerts, Event("opened", known(store.incidents.incident(incident)))) == 1
        started = time.monotonic()
        assert alerts.deliver_due() == 0
        assert time.monotonic() - started < 2
        [pending] = store.outbox.due_notifications(time.time() + 60)
        assert pending.attempts == 1 and pending.last_error == "HTTP 503"
        alerts.stop()
        store.close()
        hook.status = 200
        again = Store(db_path)
        later = plain_alerts(config.alerts, again, clock=lambda: time.time() + 60)
        assert later.deliver_due() == 1
        assert hook.received[0]["event"] == "opened" and again.outbox.pending_notifications() == 0


def test_sigterm_during_a_busy_cycle_keeps_committed_rows_and_restart_restores_memory(
    web: Misbehaving, tmp_path: Path, store_location: Any
) -> None:
    db = tmp_path / "m.db"
    targets = "".join(f"  - {{name: t{i}, url: '{web.url('/slowish' if i % 2 else '/500')}', interval: 300ms}}\n" for i in range(20))
    config = tmp_path / "m.yaml"
    config.write_text(
        f"database: {store_location(db)}\nworkers: 1\nmodel: {{id: builtin}}\nmetrics: {{port: 0}}\n"
        f"detectors: {{consecutive: 2}}\ntargets:\n{targets}"
    )
    log = tmp_path / "run.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "monitor", "run", "--config", str(config)], stdout=sink, stderr=subprocess.STDOUT, env={**os.environ}
        )
    reader = Store(db)
    try:
        wait_for(lambda: reader.runs.runs_since(0) >= 2, timeout=30)
        config.write_text(config.read_text().replace("detectors: {consecutive: 2}", "detectors: {consecutive: 3}"))
        process.send_signal(signal.SIGHUP)
        wait_for(lambda: "config reloaded" in log.read_text(), timeout=15)
        committed = reader.results.count_results()
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(15)
    finally:  # a failed wait must not leave the daemon running
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.close()
    output = log.read_text()
    assert time.monotonic() - started < 10, output
    assert process.returncode == 0, output
    assert "config reloaded: 20 targets" in output
    after = Store(db)
    assert after.results.count_results() >= committed
    assert all(r.state != "running" for r in after.runs.recent_runs(1000))
    saved = after.memory.load_memory("working_memory")
    assert saved, output

    restored = wiring.investigator(Config.model_validate({"model": {"id": "builtin"}}), after)
    assert restored.restored == len(saved)
    assert after.incidents.open_incidents()  # open incidents are still there for the next start


def test_healthz_turns_stale_when_cycles_stop() -> None:
    from monitor.metrics import Metrics

    metrics = Metrics(CollectorRegistry())
    assert metrics.health(60, now=1000)[0] is False  # no cycle yet
    metrics.observe_cycle(1000)
    ok, body = metrics.health(60, now=1030)
    assert ok and body["seconds_since_last_cycle"] == 30
    assert metrics.health(60, now=1061) == (False, {"status": "stale", "seconds_since_last_cycle": 61, "max_age_seconds": 60})


def test_every_cycle_mode_investigates_each_check_and_off_never(web: Misbehaving, db_path: str) -> None:

    config = Config.model_validate(
        {
            "database": db_path,
            "model": {"id": "builtin"},
            "agent": {"mode": "every_cycle"},
            "targets": [{"name": "web", "url": web.url("/healthy"), "timeout": "1s"}],
        }
    )
    store = Store(db_path)
    cycle = daemon_cycle(config, store, investigator=wiring.investigator(config, store))
    for _ in range(3):
        cycle.after_checks(Checker().run(config.targets))
    assert store.runs.runs_since(0) == 3 and store.incidents.recent_incidents() == []
    off = Daemon(
        config.model_copy(update={"agent": config.agent.model_copy(update={"mode": "off"})}), store=store, registry=CollectorRegistry()
    )
    assert off.investigator is None
    off.cycle.after_checks(Checker().run(config.targets))
    assert store.runs.runs_since(0) == 3


def test_sighup_reload_swaps_targets_and_a_bad_file_changes_nothing(web: Misbehaving, tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(f"model: {{id: builtin}}\nmetrics: {{port: 0}}\ntargets:\n- {{name: a, url: '{web.url('/healthy')}'}}\n")
    from monitor import config as config_module

    daemon = Daemon(config_module.load(path), store=Store(tmp_path / "m.db"), registry=CollectorRegistry(), config_path=str(path))
    daemon.start(serve_metrics=False)
    try:
        path.write_text(
            f"model: {{id: builtin}}\ndetectors: {{consecutive: 7}}\ntargets:\n"
            f"- {{name: b, url: '{web.url('/healthy')}', interval: 200ms}}\n"
        )
        assert daemon.reload() is True
        assert list(daemon.schedule.due_times()) == ["b"]
        assert daemon.cycle.tracker.detectors.consecutive == 7
        wait_for(lambda: daemon.store.results.count_results("b") >= 2)
        path.write_text("targets: [{name: c, url: 'ftp://nope/'}]\n")
        assert daemon.reload() is False
        assert [t.name for t in daemon.config.targets] == ["b"]
    finally:
        daemon.stop()
