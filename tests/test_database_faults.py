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
from servers import wait_for

from monitor.cli.main import main
from monitor.store import Store

HOLD = ("import sys, time\nfrom monitor.store import Store\nstore = Store(sys.argv[1])\n"
        "print(store.claim_replica(), flush=True)\ntime.sleep(60)\n")


def config_file(tmp_path: Path, database: str, extra: str = "", targets: int = 1) -> Path:
    """A daemon's config: ``targets`` targets checked each second (a closed port: they fail at once)."""
    path = tmp_path / "monitor.yaml"
    listed = "".join(f"  - {{name: t{i}, url: 'http://127.0.0.1:9/', interval: 1s}}\n" for i in range(targets))
    path.write_text(f"database: {database}\nmetrics: {{port: 0}}\nagent: {{mode: off}}\n{extra}targets:\n{listed}")
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


def start_daemon(config: Path, log_path: Path, database: str) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as log:
        return subprocess.Popen([sys.executable, "-m", "monitor", "run", "--config", str(config)], stdout=log,
                                stderr=log, env={**os.environ, "MONITOR_DATABASE": database})


def stopped(daemon: subprocess.Popen[bytes], timeout: float) -> int | None:
    try:
        return daemon.wait(timeout)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait(10)
        return None


def test_a_replica_whose_number_another_daemon_took_exits(postgres_url: str, tmp_path: Path) -> None:
    """Replica 1 is frozen, its session ended, and another replica 1 starts: when the first wakes and finds its
    number taken, it says so and exits (3), rather than checking the same targets as the other."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    name = conninfo_to_dict(postgres_url)["application_name"]
    config = config_file(tmp_path, postgres_url, "replicas: 2\nreplica_index: 1\n", targets=6)
    log_path = tmp_path / "daemon.log"
    daemon = start_daemon(config, log_path, postgres_url)
    try:
        wait_for(lambda: "monitoring" in log_path.read_text(), timeout=30)
        daemon.send_signal(signal.SIGSTOP)
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s "
                          "AND pid <> pg_backend_pid()", (name,))
        other = Store(postgres_url, replica=1)
        assert wait_for(other.claim_replica, timeout=10)
        daemon.send_signal(signal.SIGCONT)
        code = stopped(daemon, 20)
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGCONT)
            daemon.kill()
    said = log_path.read_text()
    assert code == 3, said[-3000:]
    assert "replica 1" in said and "another daemon" in said, said[-3000:]
