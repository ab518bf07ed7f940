"""Issue #33, item 3: a symlink loop under ``target_files`` does not hang config loading, a file named twice is read
once, the walk is bounded, and the daemon stops on SIGTERM while a long reload is under way."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from servers import Misbehaving, wait_for

from monitor.config import load
from monitor.config.globs import TooLarge, Walk
from monitor.store import Store


def fleet(tmp_path: Path) -> Path:
    """``targets/`` with two links to itself, a directory, a second name of that directory, and a link to a file."""
    targets = tmp_path / "targets"
    (targets / "sub").mkdir(parents=True)
    (targets / "a.yaml").write_text("- {name: a, url: 'http://127.0.0.1:9/a'}\n")
    (targets / "sub" / "b.yaml").write_text("- {name: b, url: 'http://127.0.0.1:9/b'}\n")
    (targets / ".hidden.yaml").write_text("- {name: hidden, url: 'http://127.0.0.1:9/h'}\n")
    os.symlink(".", targets / "self1")
    os.symlink(".", targets / "self2")
    os.symlink("sub", targets / "alias")
    os.symlink("a.yaml", targets / "again.yaml")
    config = tmp_path / "monitor.yaml"
    config.write_text("target_files: ['targets/**/*.yaml']\n")
    return config


def test_symlink_loops_end_and_each_file_is_read_once(tmp_path: Path) -> None:
    config = fleet(tmp_path)
    done = subprocess.run([sys.executable, "-m", "monitor", "validate", str(config)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(t.name for t in load(config).targets) == ["a", "b"]  # not 41 copies, nor "used twice"


def test_a_walk_reads_a_bounded_number_of_entries(tmp_path: Path) -> None:
    for n in range(60):
        (tmp_path / f"t{n}.yaml").write_text("[]\n")
    assert len(Walk(limit=100).glob("**/*.yaml", tmp_path)) == 60
    with pytest.raises(TooLarge, match="more than 50 files and directories walked"):
        Walk(limit=50).glob("**/*.yaml", tmp_path)


def test_globs_match_what_the_standard_library_matches(tmp_path: Path) -> None:
    import glob

    for name in ("x/a.yaml", "x/y/b.yaml", "x/y/z/c.json", "x/.h/d.yaml", "e.yaml", ".f.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("[]\n")
    for pattern in (
        "**/*.yaml",
        "x/**/*.yaml",
        "x/*/*.yaml",
        "x/y/**",
        "*.yaml",
        ".*.yaml",
        "x/?/b.yaml",
        "x/[y]/*",
        "**/*.json",
        "x/.h/*.yaml",
    ):
        expected = {tmp_path / p for p in glob.glob(pattern, root_dir=tmp_path, recursive=True)}
        found = set(Walk().glob(pattern, tmp_path))
        assert {p for p in found if p.is_file()} == {p for p in expected if p.is_file()}, pattern


def bytes_read(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


@pytest.mark.timeout(120)
def test_sigterm_stops_the_daemon_during_a_long_reload(web: Misbehaving, tmp_path: Path, store_location: Any) -> None:
    """A reload of 100,000 targets takes half a minute; SIGTERM in the middle of it stops the daemon at once."""
    (tmp_path / "targets").mkdir()
    (tmp_path / "targets" / "a.yaml").write_text(f"- {{name: a, url: '{web.url('/healthy')}', interval: 200ms}}\n")
    config, db = tmp_path / "m.yaml", tmp_path / "m.db"
    config.write_text(
        f"database: {store_location(db)}\nworkers: 1\nmodel: {{id: builtin}}\nmetrics: {{port: 0}}\n"
        "agent: {mode: off}\ntarget_files: ['targets/*.yaml']\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "monitor", "run", "--config", str(config)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    stdout = process.stdout
    assert stdout is not None  # stdout=PIPE
    reader = threading.Thread(target=lambda: lines.extend(iter(stdout.readline, "")), daemon=True)
    reader.start()
    try:
        wait_for(lambda: Store(db).results.count_results("a") >= 2, timeout=30)
        (tmp_path / "targets" / "big.yaml").write_text(
            "".join(f"- {{name: t{n}, url: 'http://127.0.0.1:9/{n}', interval: 1h}}\n" for n in range(99_000))
        )
        size, before = (tmp_path / "targets" / "big.yaml").stat().st_size, bytes_read(process.pid)
        process.send_signal(signal.SIGHUP)
        wait_for(lambda: bytes_read(process.pid) - before >= size)  # the reload read the file: it parses it now
        stopped = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=15)
        print(f"stopped {time.monotonic() - stopped:.1f} s after SIGTERM, during a reload")
        assert process.returncode == 0 and "config reloaded" not in "".join(lines), "".join(lines)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        reader.join(5)  # the pipe's end: the daemon has exited
        stdout.close()
