"""What the daemon does when its database misbehaves under it: a PostgreSQL server that stops answering, a
replica number taken by another daemon, a schema or a SQLite file removed, a second daemon on one SQLite file.
Against real databases: SQLite files in tmp_path, and PostgreSQL clusters of the test's own (``own_server``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from monitor.cli.main import main
from monitor.store import Store

HOLD = ("import sys, time\nfrom monitor.store import Store\nstore = Store(sys.argv[1])\n"
        "print(store.claim_replica(), flush=True)\ntime.sleep(60)\n")


def config_file(tmp_path: Path, database: str, extra: str = "") -> Path:
    path = tmp_path / "monitor.yaml"
    path.write_text(f"database: {database}\nmetrics: {{port: 0}}\nagent: {{mode: off}}\n{extra}"
                    "targets:\n  - {name: api, url: 'http://127.0.0.1:9/', interval: 1s}\n")
    return path


@pytest.mark.sqlite_only("a SQLite file's lock file")
def test_a_second_daemon_on_one_sqlite_file_refuses_naming_the_first(tmp_path: Path) -> None:
    """Two daemons on one SQLite file would check every target twice: the second exits (3) naming the
    database and the process (pid, host) that holds it, before it changes anything."""
    db = tmp_path / "monitor.db"
    first = Store(db)
    assert first.claim_replica()
    out = CliRunner().invoke(main, ["run", "--config", str(config_file(tmp_path, str(db)))])
    assert out.exit_code == 3, out.output
    assert str(db) in out.output and f"pid {os.getpid()}" in out.output and socket.gethostname() in out.output, out.output
    assert not Store(db).claim_replica()
    first.close()  # closed: the file is free again
    assert Store(db).claim_replica()


@pytest.mark.sqlite_only("a SQLite file's lock file")
def test_a_crashed_daemon_does_not_keep_its_sqlite_file(tmp_path: Path) -> None:
    """SIGKILL leaves the lock file behind, with its pid: a new daemon starts anyway (the lock is the kernel's)."""
    db = tmp_path / "monitor.db"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        assert not Store(db).claim_replica()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    assert Store(db).claim_replica()
