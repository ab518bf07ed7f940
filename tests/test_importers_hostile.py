"""``monitor import`` fed hostile input (issue 42, item 3): each import returns within 10 s, under 300 MB, with a
refusal that names the problem; it reads only what it was given, writes only where it was told, and never shows
a file's lines.

Each import runs as the user runs it, ``python -m monitor import ...``, in a child whose time and peak memory
(``wait4``'s ``ru_maxrss``, taken by a small launcher) are measured; the child's address space is capped at 2 GiB so
that a regression fails the test instead of the machine."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import kuma
import pytest

from monitor.importers import uptime_kuma

SECONDS, MEGABYTES = 10.0, 300
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SECRETS_FILE = f"[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key: {SECRET}\n  : x\n"


@dataclass
class Run:
    returncode: int | None  # None: killed at the deadline
    stdout: str
    stderr: str
    seconds: float
    megabytes: float


# The import runs under a small launcher that reports its child's own peak: a child forked from this test process
# (hundreds of MB late in a run) would count this process's pages too, since the kernel keeps the peak across exec.
LAUNCHER = """
import os, resource, subprocess, sys
def capped():
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
child = subprocess.Popen(sys.argv[2:], preexec_fn=capped)
_, status, usage = os.wait4(child.pid, 0)
child.returncode = 0
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def monitor(*args: str | Path, cwd: Path) -> Run:
    """``monitor import ARGS`` in a child; its wall time and peak RSS; killed after ``SECONDS`` (returncode None)."""
    out, err, peak = cwd / ".stdout", cwd / ".stderr", cwd / ".peak"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    command = [sys.executable, "-c", LAUNCHER, str(peak), sys.executable, "-m", "monitor", "import", *map(str, args)]
    start = time.monotonic()
    with out.open("wb") as stdout, err.open("wb") as stderr:
        child = subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env, cwd=cwd, start_new_session=True)  # noqa: S603
        status = _wait(child, start + SECONDS)
    code = os.waitstatus_to_exitcode(status) if status is not None else None
    kilobytes = int(peak.read_text()) if peak.exists() and peak.read_text() else 0
    return Run(code, out.read_text(), err.read_text(), time.monotonic() - start, kilobytes / 1024)


def _wait(child: subprocess.Popen[bytes], deadline: float) -> int | None:
    """The launcher's wait status, or None when the import ran past ``deadline`` (then it and its child are killed)."""
    while time.monotonic() < deadline:
        done, status = os.waitpid(child.pid, os.WNOHANG)
        if done:
            child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
            return status
        time.sleep(0.02)
    os.killpg(child.pid, signal.SIGKILL)
    child.wait()
    return None


def refused(run: Run, *words: str) -> None:
    """Returned in time, within memory, exit 3, and the message names the problem."""
    assert run.returncode is not None, f"still running after {SECONDS:g} s: {run.stderr[-500:]}"
    assert run.seconds < SECONDS and run.megabytes < MEGABYTES, (run.seconds, run.megabytes)
    assert run.returncode == 3, run.stderr[-2000:]
    assert run.stdout == "" and all(word in run.stderr for word in words), run.stderr[-2000:]


def alias_bomb(top: str = "endpoints:\n  - name: x\n    group: *i\n    url: https://example.com\n") -> str:
    """A billion laughs: nine levels of nine aliases each, 387 million strings once expanded."""
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi", strict=True)]
    text = "\n".join(lines) + "\n" + top
    assert len(text) < 1024
    return text


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo.yaml"
    os.mkfifo(path)
    return path


def test_a_gatus_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(alias_bomb())
    run = monitor("gatus", tmp_path / "config.yaml", "-o", tmp_path / "monitor.yaml", cwd=tmp_path)
    refused(run, "config.yaml: refused at line", "aliases expand to more than")
    assert not (tmp_path / "monitor.yaml").exists()


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_gatus_file_that_is_not_a_regular_file_is_refused(special: str, fifo: Path, tmp_path: Path) -> None:
    path = fifo if special == "fifo" else Path(special)
    run = monitor("gatus", path, cwd=tmp_path)
    refused(run, f"{path}: not a regular file ({'a FIFO' if special == 'fifo' else 'a character device'}): refused")


@pytest.mark.parametrize("which", ["blackbox", "prometheus"])
def test_blackbox_files_that_are_bombs_fifos_or_devices_are_refused(which: str, fifo: Path, tmp_path: Path) -> None:
    (tmp_path / "blackbox.yml").write_text("modules:\n  http_2xx:\n    prober: http\n")
    (tmp_path / "prometheus.yml").write_text("scrape_configs: []\n")
    (tmp_path / "bomb.yml").write_text(alias_bomb("modules: {m: {prober: http, http: {headers: {x: *i}}}}\n"))
    for hostile, words in ((tmp_path / "bomb.yml", "aliases expand"), (fifo, "a FIFO"), (Path("/dev/zero"), "a character device")):
        files = (hostile, tmp_path / "prometheus.yml") if which == "blackbox" else (tmp_path / "blackbox.yml", hostile)
        refused(monitor("blackbox", *files, cwd=tmp_path), f"{hostile}: ", words)


def test_file_sd_files_that_are_fifos_devices_or_bombs_are_reported_and_skipped(fifo: Path, tmp_path: Path) -> None:
    (tmp_path / "blackbox.yml").write_text("modules:\n  http_2xx:\n    prober: http\n")
    (tmp_path / "bomb.yml").write_text("- targets: &a [a, a, a, a, a, a, a, a, a]\n" + "".join(
        f"- targets: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
    ))  # fmt: skip
    (tmp_path / "good.yml").write_text("- targets: [https://example.com]\n")
    files = ["good.yml", "fifo.yaml", "bomb.yml", "/dev/zero"]
    job = {"job_name": "b", "metrics_path": "/probe", "params": {"module": ["http_2xx"]}, "file_sd_configs": [{"files": files}]}
    (tmp_path / "prometheus.yml").write_text(json.dumps({"scrape_configs": [job]}))
    run = monitor("blackbox", tmp_path / "blackbox.yml", tmp_path / "prometheus.yml", "--allow-outside", cwd=tmp_path)
    assert run.returncode == 0 and run.seconds < SECONDS and run.megabytes < MEGABYTES, (run.stderr, run.seconds, run.megabytes)
    assert "1 targets converted" in run.stderr and "https://example.com" in run.stdout
    assert f"refused as unsafe: scrape_configs[0] (b).file_sd_configs: {fifo}: not a regular file (a FIFO)" in run.stderr
    assert "/dev/zero: not a regular file (a character device)" in run.stderr
    assert "bomb.yml: refused at line" in run.stderr and "aliases expand" in run.stderr


def test_file_sd_outside_the_prometheus_folder_is_refused_unless_asked(tmp_path: Path) -> None:
    (tmp_path / "secrets.ini").write_text("- targets: [https://outside.example]\n")
    conf = tmp_path / "prometheus"
    conf.mkdir()
    (conf / "blackbox.yml").write_text("modules:\n  http_2xx:\n    prober: http\n")
    (conf / "linked.yml").symlink_to(tmp_path / "secrets.ini")
    files = ["../secrets.ini", str(tmp_path / "secrets.ini"), "linked.yml"]
    job = {"job_name": "b", "metrics_path": "/probe", "params": {"module": ["http_2xx"]}, "file_sd_configs": [{"files": files}]}
    (conf / "prometheus.yml").write_text(json.dumps({"scrape_configs": [job]}))
    run = monitor("blackbox", conf / "blackbox.yml", conf / "prometheus.yml", cwd=tmp_path)
    assert run.returncode == 0 and "0 targets converted" in run.stderr and "outside.example" not in run.stdout
    for where in ("files: ../secrets.ini", f"files: {tmp_path / 'secrets.ini'}"):
        assert f"refused as unsafe: scrape_configs[0] (b).file_sd_configs.{where}: it names a file outside" in run.stderr
    assert f"file_sd_configs.files: {conf / 'linked.yml'}: a link leads it outside the Prometheus config's folder" in run.stderr
    assert "--allow-outside reads it" in run.stderr
    asked = monitor("blackbox", conf / "blackbox.yml", conf / "prometheus.yml", "--allow-outside", cwd=tmp_path)
    assert asked.returncode == 0 and "3 targets converted" in asked.stderr and "outside.example" in asked.stdout


def test_parse_errors_name_the_line_and_never_quote_it(tmp_path: Path) -> None:
    (tmp_path / "blackbox.yml").write_text("modules:\n  http_2xx:\n    prober: http\n")
    (tmp_path / "credentials").write_text(SECRETS_FILE)
    job = {"job_name": "b", "metrics_path": "/probe", "file_sd_configs": [{"files": ["credentials"]}]}
    (tmp_path / "prometheus.yml").write_text(json.dumps({"scrape_configs": [job]}))
    run = monitor("blackbox", tmp_path / "blackbox.yml", tmp_path / "prometheus.yml", cwd=tmp_path)
    assert run.returncode == 0 and "credentials: not read: not valid YAML at line 2, column 1" in run.stderr
    (tmp_path / "config.yaml").write_text(SECRETS_FILE)
    gatus = monitor("gatus", tmp_path / "config.yaml", cwd=tmp_path)
    refused(gatus, "config.yaml: not valid YAML at line 2, column 1")
    for text in (run.stderr, gatus.stderr):
        assert "AKIA" not in text and SECRET[:8] not in text and "aws_" not in text


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_a_kuma_database_that_is_not_a_regular_file_is_refused(special: str, fifo: Path, tmp_path: Path) -> None:
    path = fifo if special == "fifo" else Path(special)
    refused(monitor("uptime-kuma", path, cwd=tmp_path), f"{path}: not a regular file: refused")


def kuma_db(path: Path, *columns: str, monitors: int = 1) -> Path:
    db = kuma.create(path, "2.x")
    db.execute("BEGIN")
    for _ in range(monitors):
        kuma.monitor(db, "Web", "http", url="https://example.com/")
    db.execute("COMMIT")
    for column in columns:
        db.execute(f"ALTER TABLE monitor ADD COLUMN {column}")
    db.execute("VACUUM")
    db.close()
    return path


def test_a_kuma_value_of_900_mb_is_refused_before_it_is_made(tmp_path: Path) -> None:
    path = kuma_db(tmp_path / "kuma.db", "huge BLOB GENERATED ALWAYS AS (zeroblob(900000000)) VIRTUAL")
    assert path.stat().st_size < 400_000
    refused(monitor("uptime-kuma", path, cwd=tmp_path), "kuma.db: table monitor has a value longer than 4 MiB: refused")


def test_a_kuma_database_that_computes_for_ever_is_stopped(tmp_path: Path) -> None:
    slow = "instr(" + "lower(upper(" * 4 + "hex(hex(zeroblob(1000000 + id)))" + "))" * 4 + ", 'x')"  # 40 ms a row (its own), 300 rows
    path = kuma_db(tmp_path / "kuma.db", f"slow INTEGER GENERATED ALWAYS AS ({slow}) VIRTUAL", monitors=300)
    refused(monitor("uptime-kuma", path, cwd=tmp_path), "kuma.db: reading table monitor took longer than 5 s: refused")


def test_a_wal_mode_kuma_database_gets_nothing_written_beside_it(tmp_path: Path) -> None:
    path = kuma_db(tmp_path / "kuma.db")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode = WAL").fetchone() == ("wal",)
    db.close()
    before = sorted(tmp_path.iterdir())
    imported = uptime_kuma.read(path)
    assert sorted(tmp_path.iterdir()) == before and "Web" in imported.yaml()  # no kuma.db-shm, no kuma.db-wal


def test_what_kuma_has_not_checkpointed_is_named(tmp_path: Path) -> None:
    path = kuma_db(tmp_path / "kuma.db")
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        writer.execute("PRAGMA journal_mode = WAL")
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        kuma.monitor(writer, "Written since", "http", url="https://example.org/")
        imported = uptime_kuma.read(path)
    finally:
        writer.close()
    assert "kuma.db-wal holds" in imported.report() and "stop Kuma" in imported.report()
    assert [t["name"] for t in imported.targets] == ["Web"]


def test_a_kuma_webhook_to_a_file_is_refused_and_named(tmp_path: Path) -> None:
    path = kuma_db(tmp_path / "kuma.db")
    db = sqlite3.connect(path, isolation_level=None)
    hook = {"type": "webhook", "webhookURL": "file:///etc/passwd", "webhookContentType": "json"}
    note = kuma.insert(db, "notification", name="Hook", config=json.dumps(hook), active=1, user_id=1)
    kuma.insert(db, "monitor_notification", monitor_id=1, notification_id=note)
    db.close()
    imported = uptime_kuma.read(path)
    assert "file:" not in imported.yaml() and "alerts" not in imported.config
    assert "refused as unsafe: notification 1 (Hook).webhookURL: not a webhook this daemon may call: url: 'file:///etc/passwd'" in (
        imported.report()
    )


def test_target_files_are_not_written_through_a_link(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "monitor-targets").symlink_to(elsewhere)
    (tmp_path / "config.yaml").write_text("endpoints:\n  - {name: web, url: 'https://example.com/'}\n")
    run = monitor("gatus", tmp_path / "config.yaml", "-o", tmp_path / "monitor.yaml", "--target-files", cwd=tmp_path)
    refused(run, "monitor-targets: a symbolic link: refused")
    assert list(elsewhere.iterdir()) == []


def test_kuma_json_that_nests_past_the_parser_or_is_not_kuma_s_is_reported(tmp_path: Path) -> None:
    path = kuma_db(tmp_path / "kuma.db")
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("UPDATE monitor SET headers = ?", ["[" * 100_000 + "]" * 100_000])
    note = kuma.insert(db, "notification", name="Odd", config="[1, 2]", active=1, user_id=1)
    kuma.insert(db, "monitor_notification", monitor_id=1, notification_id=note)
    weekly = kuma.insert(db, "maintenance", title="Weekly", description="", strategy="recurring-weekday", user_id=1, active=1,
                         start_time='{"hours": "two"}', end_time="03:00", weekdays="[9]", timezone="UTC")  # fmt: skip
    kuma.insert(db, "monitor_maintenance", monitor_id=1, maintenance_id=weekly)
    db.close()
    report = uptime_kuma.read(path).report()
    assert "monitor 1 (Web).headers: not JSON, so not read" in report
    assert "notification 1 (Odd): its settings are not a JSON object" in report
    assert "maintenance 1 (Weekly): its schedule cannot be read" in report
