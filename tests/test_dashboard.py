"""Every query of the Grafana dashboard returns data from a live Prometheus scraping a live daemon (issue 10)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from dashboard import DASHBOARD, instant, queries
from ollama import FakeOllama
from servers import Misbehaving, Receiver, free_port, wait_for

GRAFANA = DASHBOARD.parent.parent


def stop(process: subprocess.Popen[bytes]) -> str:
    process.send_signal(signal.SIGTERM)
    try:
        return process.communicate(timeout=15)[0].decode(errors="replace")
    except subprocess.TimeoutExpired:
        process.kill()
        return process.communicate()[0].decode(errors="replace")


@pytest.fixture
def daemon(web: Misbehaving, tmp_path: Path, store_location: Callable[..., str]) -> Iterator[str]:
    """``monitor run`` on one target that is down and one that is up, its model a scripted Ollama,
    a webhook receiver; its /metrics address, set by --metrics-listen over the config's."""
    port = free_port()
    with FakeOllama(models=("llama3.2:latest",)) as ollama, Receiver() as hook:
        config = tmp_path / "monitor.yaml"
        config.write_text(
            json.dumps(
                {
                    "database": store_location(tmp_path / "monitor.db"),
                    "workers": 1,
                    "defaults": {"interval": "500ms", "timeout": "2s"},
                    "targets": [{"name": "down", "url": web.url("/500")}, {"name": "up", "url": web.url("/healthy")}],
                    "detectors": {"consecutive": 2},
                    "model": {"id": "ollama_chat/llama3.2", "api_base": ollama.url, "timeout": "10s"},
                    "agent": {"mode": "every_cycle", "max_runs_per_hour": 100000},
                    "metrics": {"host": "127.0.0.1", "port": 1},
                    "alerts": {"webhooks": [{"url": hook.url}]},
                }
            )
        )
        process = subprocess.Popen(
            [sys.executable, "-m", "monitor", "run", "--config", str(config), "--metrics-listen", f"127.0.0.1:{port}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )
        try:
            wait_for(lambda: process.poll() is not None or answers(f"http://127.0.0.1:{port}/healthz"), timeout=30, every=0.1)
            assert process.poll() is None, stop(process)
            yield f"127.0.0.1:{port}"
        finally:
            output = stop(process)
        assert process.returncode == 0, output


def answers(url: str) -> bool:
    """Whether ``url`` answers 200 (a daemon's /healthz, Prometheus's /-/ready)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            status: int = answer.status
            return status == 200
    except OSError:
        return False


@pytest.fixture
def prometheus(daemon: str, tmp_path: Path) -> Iterator[str]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus is not installed (.ci/run installs it)")
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(
            {"global": {"scrape_interval": "1s"}, "scrape_configs": [{"job_name": "monitor", "static_configs": [{"targets": [daemon]}]}]}
        )
    )
    listen = f"127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address={listen}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: process.poll() is not None or answers(f"http://{listen}/-/ready"), timeout=30, every=0.1)
        assert process.poll() is None, process.communicate()[1].decode()
        yield f"http://{listen}"
    finally:
        process.terminate()
        process.communicate(timeout=15)


def test_every_dashboard_query_returns_data_from_a_live_daemon(prometheus: str) -> None:
    wait_for(lambda: instant(prometheus, 'up{job="monitor"} == 1'), timeout=30, every=0.5)
    missing = []
    for title, expr in queries():
        try:
            wait_for(functools.partial(instant, prometheus, expr), timeout=20, every=0.5)
        except AssertionError:
            missing.append(f"{title}: {expr}")
    assert not missing, "no data:\n" + "\n".join(missing)
    assert instant(prometheus, 'monitor_check_up{target="down"} == 0')
    assert instant(prometheus, 'monitor_check_up{target="up"} == 1')
    assert instant(prometheus, "sum(monitor_llm_tokens_total) > 0")  # the model panels draw real requests


def test_the_dashboard_covers_what_an_operator_asks_and_uses_the_provisioned_datasource() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    text = json.dumps(dashboard)
    for series in (
        "monitor_check_up",
        "monitor_check_phase_duration_seconds_bucket",
        "monitor_incidents_open",
        "monitor_agent_runs_total",
        "monitor_llm_request_duration_seconds_bucket",
        "monitor_llm_tokens_total",
        "monitor_agent_memory_tokens_estimate",
        "monitor_db_size_bytes",
        "monitor_notifications_pending",
    ):
        assert series in text, series
    provisioned = (GRAFANA / "provisioning" / "datasources" / "prometheus.yaml").read_text()
    assert "uid: prometheus" in provisioned
    # Every query goes through the $datasource variable: the provisioned datasource here (its default), and
    # whichever Prometheus the user picks where the dashboard is imported into a Grafana of their own.
    [variable] = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
    assert variable["name"] == "datasource" and variable["query"] == "prometheus"
    assert variable["current"]["value"] == "prometheus"
    users = [p for p in dashboard["panels"] if p["type"] != "row"]
    users += [t for p in users for t in p["targets"]] + [v for v in dashboard["templating"]["list"] if v["type"] == "query"]
    assert {u["datasource"]["uid"] for u in users} == {"${datasource}"}
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


def test_dashboard_queries_are_valid_promql(tmp_path: Path) -> None:
    """promtool parses each query as a rule expression: a typo fails here even without a Prometheus."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (.ci/run installs it)")
    rules = {
        "groups": [
            {"name": "dashboard", "rules": [{"record": f"dashboard:query{i}", "expr": expr} for i, (_, expr) in enumerate(queries())]}
        ]
    }
    path = tmp_path / "dashboard-rules.yml"
    path.write_text(json.dumps(rules))
    done = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
