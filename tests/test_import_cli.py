"""``monitor import``: the config to stdout or -o, the report to stderr or --report, exit 3 only for unreadable input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def monitor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True, text=True, timeout=120)


def test_the_config_goes_to_stdout_and_the_report_to_stderr(tmp_path: Path) -> None:
    done = monitor("import", "gatus", str(FIXTURES / "gatus" / "config.yaml"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# converted by `monitor import`") and "name: front-end" in done.stdout
    assert "7 targets converted, 2 fields not carried" in done.stderr and "[DOMAIN_EXPIRATION] > 720h" in done.stderr
    (tmp_path / "monitor.yaml").write_text(done.stdout)
    checked = monitor("validate", str(tmp_path / "monitor.yaml"))
    assert checked.returncode == 0 and "OK, 7 targets" in checked.stdout


def test_output_and_report_files(tmp_path: Path) -> None:
    out, report = tmp_path / "monitor.yaml", tmp_path / "report.txt"
    blackbox = FIXTURES / "blackbox"
    files = (str(blackbox / "example.yml"), str(blackbox / "prometheus.yml"))
    done = monitor("import", "blackbox", *files, "-o", str(out), "--report", str(report))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert "probe:" in out.read_text() and "not a probe job" in report.read_text()


def test_unreadable_input_exits_3_and_says_why(tmp_path: Path) -> None:
    (tmp_path / "kuma.db").write_text("not a database")
    done = monitor("import", "uptime-kuma", str(tmp_path / "kuma.db"))
    assert done.returncode == 3 and "not an SQLite database" in done.stderr and done.stdout == ""


def test_a_fleet_goes_into_target_files_beside_the_config(tmp_path: Path) -> None:
    endpoints = "".join(f"  - {{name: web-{n}, url: 'https://10.0.0.{n}/health', conditions: ['[STATUS] == 200']}}\n" for n in range(1, 40))
    (tmp_path / "config.yaml").write_text(f"endpoints:\n{endpoints}")
    out = tmp_path / "monitor.yaml"
    done = monitor("import", "gatus", str(tmp_path / "config.yaml"), "-o", str(out), "--target-files")
    assert done.returncode == 0 and "39 targets converted" in done.stderr and "does not validate" not in done.stderr
    assert "target_files:\n- monitor-targets/*.json" in out.read_text() and "10.0.0.1/health" not in out.read_text()
    assert (tmp_path / "monitor-targets" / "0000.json").is_file()
    checked = monitor("validate", str(out))
    assert checked.returncode == 0 and "OK, 39 targets (39 from 1 target file)" in checked.stdout


def test_the_config_names_its_database_and_serves_its_status_pages(tmp_path: Path) -> None:
    """issue 43: an import wrote no database: (MCP looked in the working directory) and no web: (pages unserved)."""
    out = tmp_path / "gatus.yaml"
    done = monitor("import", "gatus", str(FIXTURES / "gatus" / "config.yaml"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines()[1] == "database: gatus.db"  # its own, beside the config
    assert "web:\n  status_listen: 127.0.0.1:8080\nstatus_pages:" in out.read_text()
    assert "note: the status pages are served on 127.0.0.1:8080 (web.status_listen)" in done.stderr
    assert "http://127.0.0.1:8080/status/status" in done.stderr
    from monitor import config

    loaded = config.load(out)
    assert loaded.database == str(tmp_path / "gatus.db") and loaded.web.status_listen == "127.0.0.1:8080"
    printed = monitor("import", "gatus", str(FIXTURES / "gatus" / "config.yaml"))
    assert printed.stdout.splitlines()[1] == "database: monitor.db"
