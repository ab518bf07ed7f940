"""A check kind from outside monitor: a distribution installed beside it names its kind's module in the
``monitor.kinds`` entry point group, and ``monitor validate``, ``monitor check``, ``monitor run`` and the fork
server's workers find it there, as they find the built-in kinds in monitor's own entry points.

The plugin is a real installed distribution, written as an installer writes one (a ``*.dist-info`` folder with its
``METADATA`` and ``entry_points.txt`` beside its module) into a folder the monitor processes get on their path.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from servers import free_port, wait_for
from test_workers import health

from monitor.checks import registry
from monitor.core import kinds
from monitor.store import Store

ROOT = Path(__file__).parent.parent
PLUGIN = '''"""``flag:/path`` is up while the file exists."""

from pathlib import Path

from monitor.core import kinds
from monitor.core.results import CRITICAL, OK, Result


class Flag:
    def __init__(self, context):
        self.clock = context.clock

    async def check(self, target, *, worker=0):
        up = Path(target.url.removeprefix("flag:")).exists()
        return Result(
            name=target.name, url=target.url, ok=up, severity=OK if up else CRITICAL, status_code=None, latency_ms=0.0,
            error=None if up else "flag_down", detail=f"the flag is {'up' if up else 'down'}", checked_at=self.clock(),
            kind="flag",
        )

    async def aclose(self):
        pass


KIND = kinds.Kind("flag", schemes=("flag",), errors={"flag_down": "no flag file"}, check=Flag)
'''


def install(site: Path) -> Path:
    """The ``flagkind`` distribution, installed into ``site``: its declaration is the entry point (``module:KIND``)."""
    info = site / "flagkind-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "flagkind.py").write_text(PLUGIN)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flagkind\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[monitor.kinds]\nflag = flagkind:KIND\n")
    (info / "RECORD").write_text("flagkind.py,,\nflagkind-0.1.dist-info/METADATA,,\nflagkind-0.1.dist-info/entry_points.txt,,\n")
    return site


@pytest.fixture
def plugged(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A config of two flag targets (one up, one down) and the environment of a monitor with the plugin installed."""
    site = install(tmp_path / "site")
    (tmp_path / "up").touch()
    config = tmp_path / "monitor.yaml"
    config.write_text(
        f"database: {tmp_path / 'monitor.db'}\nmodel: {{id: builtin}}\nagent: {{mode: 'off'}}\nmetrics: {{enabled: false}}\n"
        f"targets:\n  - {{name: up, url: 'flag:{tmp_path / 'up'}'}}\n  - {{name: down, kind: flag, url: 'flag:{tmp_path / 'no'}'}}\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return config, env


def monitor(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True, text=True, env=env, timeout=60)


def test_the_built_in_kinds_are_monitors_own_entry_points() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][kinds.GROUP]
    assert declared == registry.BUILTIN  # the checker's own list of its modules says the same
    installed = {p.name: p.value for p in entry_points(group=kinds.GROUP) if p.dist is not None and p.dist.name == kinds.DISTRIBUTION}
    assert installed == declared, "the installed metadata is stale: pip install -e ."
    assert list(kinds.BUILTIN) == list(declared)


def test_validate_finds_a_kind_an_installed_package_declares(plugged: tuple[Path, dict[str, str]]) -> None:
    config, env = plugged
    done = monitor(env, "validate", str(config))
    assert done.returncode == 0, done.stderr
    assert "OK, 2 targets" in done.stdout


def test_a_plugins_settings_are_validated_as_a_built_in_kinds(plugged: tuple[Path, dict[str, str]]) -> None:
    config, env = plugged
    config.write_text(config.read_text().replace("kind: flag", "kind: flags"))
    done = monitor(env, "validate", str(config))
    assert done.returncode == 3
    assert "'heartbeat' or 'flag'" in done.stderr  # the installed kind is listed with the built-in ones


def test_check_runs_a_target_of_a_plugins_kind(plugged: tuple[Path, dict[str, str]]) -> None:
    config, env = plugged
    done = monitor(env, "check", "--config", str(config), "--json")
    assert done.returncode == 2, done.stderr  # one of the two is down
    assert '"error": "flag_down"' in done.stdout and '"kind": "flag"' in done.stdout


def test_the_fork_server_loads_the_plugins_kinds_before_it_forks(plugged: tuple[Path, dict[str, str]]) -> None:
    _, env = plugged
    code = "import sys, monitor.checks.preload; print('flagkind' in sys.modules, 'monitor.checks.icmp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    assert done.stdout.split() == ["True", "True"]


@pytest.mark.sqlite_only("the daemon runs in a child on the SQLite file its config names, which the test reads back")
def test_monitor_run_checks_a_plugins_targets_in_its_workers(plugged: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    config, env = plugged
    port = free_port()
    text = config.read_text().replace("metrics: {enabled: false}", f"metrics: {{host: 127.0.0.1, port: {port}}}")
    config.write_text(f"workers: 2\ndefaults: {{interval: 1s, timeout: 2s}}\n{text}")
    with (tmp_path / "run.log").open("ab") as log:
        daemon = subprocess.Popen([sys.executable, "-m", "monitor", "run", "--config", str(config)], stdout=log, stderr=log, env=env)
    try:
        wait_for(lambda: health(port)[1].get("status") == "ok", timeout=60, every=0.1)
        assert len(health(port)[1]["workers"]) == 2
        store = Store(str(tmp_path / "monitor.db"))
        seen = wait_for(lambda: (lambda got: got if len(got) == 2 else None)(store.results.latest_of(["up", "down"])), timeout=30)
        assert {name: row.ok for name, row in seen.items()} == {"up": 1, "down": 0}
        store.close()
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(timeout=30)
