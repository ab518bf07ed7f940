"""Issue #33, item 6: replicas are run so that a dead one's share moves: with ``replicas`` > 1 the lease is on by
default, ``lease: off`` asks for the static split, and on a SQLite file ``monitor run`` says what to do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from monitor.config import ConfigError, parse
from monitor.config.schema import DEFAULT_LEASE

TARGET = "targets: [{name: a, url: 'http://127.0.0.1:9/'}]\n"


def test_replicas_hold_a_lease_unless_told_off() -> None:
    assert parse(f"replicas: 3\nreplica_index: 1\n{TARGET}").lease == DEFAULT_LEASE == 15.0
    assert parse(f"replicas: 3\nreplica_index: 1\nlease: 6s\n{TARGET}").lease == 6.0
    assert parse(f"replicas: 3\nreplica_index: 1\nlease: off\n{TARGET}").lease is None
    assert parse(TARGET).lease is None  # one daemon: nobody to hand over to
    with pytest.raises(ConfigError, match="it needs a lease, not lease: off"):
        parse(
            "replicas: 3\nreplica_index: 1\nlease: off\n"
            "targets: [{name: a, url: 'http://127.0.0.1:9/', quorum: {locations: 2, agree: 2}}]\n"
        )


def test_replicas_on_a_sqlite_file_are_refused_with_what_to_do(tmp_path: Path) -> None:
    config = tmp_path / "monitor.yaml"
    config.write_text(f"database: {tmp_path / 'm.db'}\nreplicas: 2\nreplica_index: 0\nagent: {{mode: off}}\n{TARGET}")
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "run", "--once", "--config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "lease is on by default with replicas" in done.stderr and "or lease: off" in done.stderr
    config.write_text(config.read_text().replace("replicas: 2\n", "replicas: 2\nlease: off\n"))
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "run", "--once", "--config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and done.stdout.startswith("CRITICAL a "), done.stdout + done.stderr  # checked, statically


def test_an_empty_lease_is_refused_by_name_not_read_as_off() -> None:
    with pytest.raises(ConfigError, match="lease: is empty"):
        parse(f"replicas: 3\nreplica_index: 1\nlease:\n{TARGET}")
