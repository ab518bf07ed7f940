"""What the daemon does when its database misbehaves under it: a PostgreSQL server that stops answering, a
replica number taken by another daemon, a schema or a SQLite file removed, a second daemon on one SQLite file.
Against real databases: SQLite files in tmp_path, and PostgreSQL clusters of the test's own (``own_server``)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from postgres import Cluster
from servers import wait_for

from monitor.cli.main import main
from monitor.store import Store

HOLD = (
    "import sys, time\nfrom monitor.store import Store\nstore = Store(sys.argv[1])\n"
    "print(store.claim_replica(), flush=True)\ntime.sleep(60)\n"
)


def results_in(location: str | Path, target: str) -> int:
    """How many results of ``target`` the store at ``location`` holds, read by a store closed at once."""
    store = Store(location)
    try:
        return store.results.count_results(target)
    finally:
        store.close()


def config_file(tmp_path: Path, database: str, extra: str = "", targets: int = 1) -> Path:
    """A daemon's config: ``targets`` targets checked each second (a closed port: they fail at once)."""
    path = tmp_path / "monitor.yaml"
    listed = "".join(f"  - {{name: t{i}, url: 'http://127.0.0.1:9/', interval: 1s}}\n" for i in range(targets))
    path.write_text(f"database: {database}\nworkers: 1\nmetrics: {{port: 0}}\nagent: {{mode: off}}\n{extra}targets:\n{listed}")
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
        if holder.stdout is not None:
            holder.stdout.close()
    assert Store(db).claim_replica()


def start_daemon(config: Path, log_path: Path, database: str) -> subprocess.Popen[bytes]:
    with log_path.open("wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "monitor", "run", "--config", str(config)],
            stdout=log,
            stderr=log,
            env={**os.environ, "MONITOR_DATABASE": database},
        )


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
    config = config_file(tmp_path, postgres_url, "replicas: 2\nreplica_index: 1\nlease: off\n", targets=6)
    log_path = tmp_path / "daemon.log"
    daemon = start_daemon(config, log_path, postgres_url)
    try:
        wait_for(lambda: "monitoring" in log_path.read_text(), timeout=30)
        daemon.send_signal(signal.SIGSTOP)
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s AND pid <> pg_backend_pid()", (name,)
            )
        other = Store(postgres_url, replica=1)  # holds replica 1 while it is open
        assert wait_for(other.claim_replica, timeout=10)
        daemon.send_signal(signal.SIGCONT)
        code = stopped(daemon, 60)  # a deadline, not a wait: under a loaded machine the reconnect can take a while
        other.close()
    finally:
        if daemon.poll() is None:
            daemon.send_signal(signal.SIGCONT)
            daemon.kill()
    said = log_path.read_text()
    assert code == 3, said[-3000:]
    assert "replica 1" in said and "another daemon" in said, said[-3000:]


def health(port: int) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as reply:
            return dict(json.loads(reply.read()))
    except urllib.error.HTTPError as error:
        return dict(json.loads(error.read()))


def test_a_frozen_postgresql_is_degraded_within_seconds_and_loses_nothing(own_server: Cluster, tmp_path: Path) -> None:
    """SIGSTOP on every server process: the kernel still accepts and acknowledges, nothing answers. Within
    10 s /healthz says degraded and the log says why (one line, no traceback); a ping is answered (503) within
    seconds; after SIGCONT what was checked meanwhile is stored."""
    from servers import free_port

    port = free_port()
    url = f"{own_server.url}?connect_timeout=2"
    config = config_file(tmp_path, url, f"metrics: {{port: {port}}}\n", targets=2).read_text()
    config = config.replace("metrics: {port: 0}\n", "", 1)
    (tmp_path / "monitor.yaml").write_text(config)
    log_path = tmp_path / "daemon.log"
    daemon = start_daemon(tmp_path / "monitor.yaml", log_path, url)
    try:
        wait_for(lambda: results_in(url, "t1") >= 2, timeout=30)
        own_server.freeze()
        frozen = time.time()
        said = wait_for(lambda: (lambda h: h if h["status"] == "degraded" else None)(health(port)), timeout=10, every=0.2)
        outage = log_path.read_text()
        started = time.monotonic()
        with pytest.raises(urllib.error.HTTPError):  # no such token: what matters is that it is answered
            urllib.request.urlopen(f"http://127.0.0.1:{port}/ping/abcdefghijklmnop", timeout=15)
        ping_took = time.monotonic() - started
        own_server.thaw()
        thawed = time.time()
        wait_for(lambda: health(port)["status"] == "ok", timeout=20, every=0.2)
    finally:
        own_server.thaw()
        daemon.send_signal(signal.SIGTERM)
        stopped(daemon, 30)
    store = Store(url)
    during = [r for t in ("t0", "t1") for r in store.results.recent_results(t, 1000) if frozen < r.checked_at < thawed]
    store.close()
    assert said["unsaved_results"] >= 1 and len(during) >= said["unsaved_results"], said
    assert "Traceback" not in outage and len(outage.splitlines()) < 8, outage[-3000:]
    assert ping_took < 12, ping_took


def test_a_dropped_schema_is_one_line_and_degraded_not_a_traceback_a_flush(postgres_url: str, tmp_path: Path) -> None:
    """DROP SCHEMA ... CASCADE under a running daemon: one clear line (not a traceback every 0.2 s), and
    /healthz degraded with the results kept."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict
    from servers import free_port

    schema = conninfo_to_dict(postgres_url)["application_name"]
    port = free_port()
    config = config_file(tmp_path, postgres_url, targets=2).read_text().replace("{port: 0}", f"{{port: {port}}}")
    (tmp_path / "monitor.yaml").write_text(config)
    log_path = tmp_path / "daemon.log"
    daemon = start_daemon(tmp_path / "monitor.yaml", log_path, postgres_url)
    try:
        wait_for(lambda: results_in(postgres_url, "t1") >= 2, timeout=30)
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
        said = wait_for(lambda: (lambda h: h if h.get("unsaved_results", 0) >= 4 else None)(health(port)), timeout=15)
        time.sleep(1)  # five flushes more
        outage = log_path.read_text()
    finally:
        daemon.send_signal(signal.SIGTERM)
        stopped(daemon, 30)
    assert said["status"] == "degraded" and "does not exist" in said["database"], said
    assert "Traceback" not in outage and len(outage.splitlines()) < 8, outage[-3000:]


def test_housekeeping_during_an_outage_is_one_line(own_server: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from prometheus_client import CollectorRegistry

    from monitor.config import Config
    from monitor.daemon import Daemon

    config = Config.model_validate({"agent": {"mode": "off"}, "targets": [{"name": "api", "url": "http://127.0.0.1:9/"}]})
    daemon = Daemon(config, store=Store(own_server.url), registry=CollectorRegistry())
    own_server.pause()
    try:
        with caplog.at_level(logging.WARNING):
            daemon.housekeeping()
    finally:
        own_server.resume()
        daemon.store.close()
    said = [r for r in caplog.records if r.name == "monitor.daemon"]
    assert said and not any(r.exc_info for r in said), [r.getMessage() for r in said]
    assert "housekeeping" in said[0].getMessage() and "database" in said[0].getMessage()


@pytest.mark.sqlite_only("a SQLite file deleted")
def test_a_sqlite_file_deleted_under_the_daemon_is_noticed_and_written_back(tmp_path: Path) -> None:
    """rm monitor.db under a running daemon: its connection still writes the deleted file, which nobody will
    read again. The daemon notices at its next write, says so, and writes what it holds back to the path."""
    from servers import free_port

    db = tmp_path / "monitor.db"
    port = free_port()
    config = config_file(tmp_path, str(db), targets=2).read_text().replace("{port: 0}", f"{{port: {port}}}")
    (tmp_path / "monitor.yaml").write_text(config)
    log_path = tmp_path / "daemon.log"
    daemon = start_daemon(tmp_path / "monitor.yaml", log_path, str(db))
    try:
        wait_for(lambda: "monitoring" in log_path.read_text(), timeout=30)
        wait_for(lambda: results_in(db, "t1") >= 2, timeout=30)
        for path in tmp_path.glob("monitor.db*"):
            if not path.name.endswith(".lock"):
                path.unlink()
        deleted = time.time()
        wait_for(lambda: "deleted" in log_path.read_text(), timeout=10)
        wait_for(lambda: db.exists() and results_in(db, "t1") >= 4, timeout=10)
        said = health(port)
    finally:
        daemon.send_signal(signal.SIGTERM)
        stopped(daemon, 30)
    checked = [r.checked_at for r in Store(db).results.recent_results("t1", 1000)]
    assert min(checked) < deleted < max(checked), "what was stored before the deletion is there, and what came after"
    assert said["status"] == "ok", said
    assert "Traceback" not in log_path.read_text()


@pytest.mark.sqlite_only("a SQLite file replaced")
def test_a_sqlite_file_replaced_under_a_store_is_refused_as_an_outage_and_a_deleted_one_written_back(tmp_path: Path) -> None:
    """Another file moved to the path: writes are refused (kept by the recorder, /healthz degraded), never
    written to the file nobody reads; a deleted one comes back whole, for every connection of the process."""
    from monitor.core.results import Result

    def batch(at: float) -> list[Result]:
        return [
            Result(
                name="api", url="http://api/", ok=True, severity="ok", status_code=200, latency_ms=1.0, error=None, detail="", checked_at=at
            )
        ]

    db, other = tmp_path / "monitor.db", tmp_path / "other.db"
    store, reader = Store(db), Store(db)
    store.results.add_results(batch(1.0))
    os.unlink(db)
    store.results.add_results(batch(2.0))
    reader.results.add_results(batch(3.0))
    assert Store(db).results.count_results("api") == 3
    Store(other).close()
    os.replace(other, db)
    with pytest.raises(store.errors) as refused:
        store.results.add_results(batch(4.0))
    assert store.engine.passing(refused.value) and "replaced" in str(refused.value)
