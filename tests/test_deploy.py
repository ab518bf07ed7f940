"""The files in deploy/ are valid for the real tools that read them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

DEPLOY = Path(__file__).parent.parent / "deploy"


def run_tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which(name)
    if binary is None:
        pytest.skip(f"{name} is not installed (.ci/run installs it)")
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=60)


def test_prometheus_config_and_rules_are_valid() -> None:
    done = run_tool("promtool", "check", "config", str(DEPLOY / "prometheus" / "prometheus.yml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 rules found" in done.stdout


def test_alertmanager_config_is_valid() -> None:
    done = run_tool("amtool", "check-config", str(DEPLOY / "prometheus" / "alertmanager.yml"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_rules_use_series_that_monitor_exports() -> None:
    from prometheus_client import CollectorRegistry

    from monitor.metrics import Metrics

    metrics = Metrics(CollectorRegistry())
    metrics.watch_memory(lambda: {"steps": {}, "bytes": 0, "tokens_estimate": 0, "incidents": 0, "db_bytes": 0})
    exported = {m.name for m in metrics.registry.collect()}
    rules = (DEPLOY / "prometheus" / "rules.yml").read_text()
    used = {word for word in rules.replace("(", " ").replace(")", " ").split() if word.startswith("monitor_")}
    used = {u.split("{")[0] for u in used}
    assert used <= exported | {f"{n}_total" for n in exported}, used - exported


def test_the_dockerfile_copies_files_that_exist_and_its_config_validates(monkeypatch: pytest.MonkeyPatch) -> None:
    root = DEPLOY.parent
    lines = (root / "Dockerfile").read_text().splitlines()
    copied = [line.split()[1:-1] for line in lines if line.startswith("COPY ")]
    assert copied and all((root / source).exists() for sources in copied for source in sources)
    from monitor import config

    monkeypatch.setenv("MONITOR_METRICS_HOST", "0.0.0.0")
    cfg = config.load(root / "config" / "monitor.yaml")
    assert cfg.metrics.host == "0.0.0.0" and cfg.targets
