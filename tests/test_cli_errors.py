"""Hostile conditions the CLI turns into a clear message and exit 3, never a traceback (issue 8, finding 15)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from click.testing import CliRunner, Result

from monitor.checks.engine import Result as Check
from monitor.cli.main import main
from monitor.store import Store
from monitor.store.writes import IncidentWrites


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def run_once(config: Path, db: Path) -> SimpleNamespace:
    """``monitor run --once`` in its own process (the daemon registers process-wide metrics)."""
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "run", "--once", "--config", str(config), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return SimpleNamespace(exit_code=done.returncode, output=done.stdout + done.stderr, exception=None)


def assert_clear(result: Result | SimpleNamespace, *words: str) -> None:
    """Exit 3 with a ``monitor: ...`` message naming ``words``, and no traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output
    for word in words:
        assert word in result.output


def seeded(path: Path) -> Path:
    store = Store(path)
    IncidentWrites(store).open_incident("api", "consecutive", "api down")
    store.close()
    return path


def once_config(tmp_path: Path) -> Path:
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "agent": {"mode": "off"},
                "metrics": {"enabled": False},
                "targets": [{"name": "api", "url": "http://127.0.0.1:9/", "timeout": "1s"}],
            }
        )
    )
    return config


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """A database the process cannot write: immutable for root (who ignores modes), mode 0444 otherwise."""
    path = seeded(tmp_path / "ro.db")
    if os.geteuid() == 0:
        if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not supported here")
        yield path
        subprocess.run(["chattr", "-i", str(path)], check=True)
    else:
        path.chmod(0o444)
        yield path


def test_an_incident_id_too_large_for_sqlite_is_a_usage_error(tmp_path: Path) -> None:
    db = str(seeded(tmp_path / "m.db"))
    assert_clear(invoke("incidents", "resolve", "99999999999999999999", "--note", "x", "--db", db), "99999999999999999999")
    assert_clear(invoke("incidents", "show", "99999999999999999999", "--db", db))
    assert_clear(invoke("replay", "99999999999999999999", "--db", db))


def test_read_only_commands_never_create_a_missing_database(tmp_path: Path) -> None:
    typo = tmp_path / "typo.db"
    for command in (
        ["incidents", "list"],
        ["incidents", "show", "1"],
        ["incidents", "resolve", "1", "--note", "x"],
        ["status"],
        ["replay"],
        ["memory", "stats"],
        ["memory", "export", str(tmp_path / "x.json")],
    ):
        assert_clear(invoke(*command, "--db", str(typo)), "no database", str(typo))
        assert not typo.exists(), command
    assert list(tmp_path.iterdir()) == []


@pytest.mark.sqlite_only("a read-only SQLite file")
def test_a_read_only_database_is_a_clear_error(read_only: Path, tmp_path: Path) -> None:
    assert_clear(invoke("incidents", "resolve", "1", "--note", "x", "--db", str(read_only)), "read", str(read_only))
    export = tmp_path / "e.json"
    export.write_text(
        '{"format": "monitor-memory", "version": 1, "incidents": [{"target": "web", '
        '"pattern": "consecutive", "status": "open", "opened_at": 1.0}]}'
    )
    assert_clear(invoke("memory", "import", str(export), "--db", str(read_only)), "read", str(read_only))
    assert_clear(run_once(once_config(tmp_path), read_only), "read", str(read_only))
    assert invoke("incidents", "list", "--db", str(read_only)).exit_code == 0  # reading still works


@pytest.mark.sqlite_only("a damaged SQLite file")
def test_a_page_damaged_database_is_a_clear_error_for_run_once(tmp_path: Path) -> None:
    db = tmp_path / "damaged.db"
    store = Store(db)
    for n in range(200):
        IncidentWrites(store).open_incident(f"api-{n}", "consecutive", f"api down {n} " + "x" * 400)
    store.results.add_results([Check("api", "http://api/", True, "ok", 200, 1.0, None, "", float(t)) for t in range(3000)])
    store.close()
    with open(db, "r+b") as f:  # the second half of the pages (results and their indexes) is overwritten
        size = f.seek(0, 2)
        for offset in range(size // 2 - size // 2 % 4096, size, 4096):
            f.seek(offset)
            f.write(b"\xa5" * 4096)
    assert_clear(run_once(once_config(tmp_path), db), str(db), "the file is damaged")  # whichever table is hit


@pytest.mark.sqlite_only("SQLite's busy timeout and its 'database is locked'")
def test_a_lock_held_past_the_busy_timeout_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import monitor.store
    import monitor.store.engines

    monkeypatch.setattr(monitor.store.engines, "BUSY_TIMEOUT", 0.1)  # what the store waits
    monkeypatch.setattr(monitor.store, "BUSY_TIMEOUT", 0.1)  # what the message says
    db = seeded(tmp_path / "m.db")
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert_clear(invoke("incidents", "resolve", "1", "--note", "x", "--db", str(db)), "locked", str(db))
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert invoke("incidents", "resolve", "1", "--note", "x", "--db", str(db)).exit_code == 0
