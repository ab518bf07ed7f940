"""`monitor check` as cron or Nagios runs it: a real process, exit codes, JSON, recording."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from servers import Misbehaving, free_port

from monitor.store import Store
from monitor.store.writes import IncidentWrites


def monitor(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "monitor", *args], capture_output=True, text=True, timeout=60)


def test_healthy_url_exits_ok_and_prints_json(web: Misbehaving) -> None:
    done = monitor("check", web.url("/healthy"), "--json")
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    assert {k: row[k] for k in ("ok", "status_code", "error")} == {"ok": True, "status_code": 200, "error": None}
    assert {"name", "url", "latency_ms", "detail"} <= row.keys()


def test_slow_answer_is_a_warning(web: Misbehaving) -> None:
    done = monitor("check", web.url("/slowish"), "--max-latency", "20ms")
    assert done.returncode == 1, done.stdout
    assert done.stdout.startswith("WARNING") and "over 20 ms" in done.stdout


def test_any_target_down_is_critical(web: Misbehaving) -> None:
    done = monitor("check", web.url("/healthy"), f"http://127.0.0.1:{free_port()}/", "--json")
    assert done.returncode == 2
    assert [r["error"] for r in json.loads(done.stdout)] == [None, "connection_refused"]


def test_timeout_option_bounds_the_check(web: Misbehaving) -> None:
    done = monitor("check", web.url("/hang"), "--timeout", "300ms", "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)[0]["error"] == "timeout"


def test_expect_status_accepts_the_500(web: Misbehaving) -> None:
    assert monitor("check", web.url("/500"), "--expect-status", "500").returncode == 0
    assert monitor("check", web.url("/healthy"), "--body-contains", "nope").returncode == 2


def test_bad_usage_and_bad_config_are_unknown(tmp_path: Path) -> None:
    assert monitor("check").returncode == 3
    bad = tmp_path / "bad.yaml"
    bad.write_text("targets:\n- {name: a, url: 'http://a/', timeout: soon}\n")
    done = monitor("check", "--config", str(bad))
    assert done.returncode == 3
    assert "targets[0].timeout: 'soon' is not a duration" in done.stderr
    assert "Traceback" not in done.stderr
    assert monitor("check", "http://a/", "--timeout", "never").returncode == 3


def test_config_targets_are_recorded_in_its_database(web: Misbehaving, tmp_path: Path, store_location: Any) -> None:
    cfg = tmp_path / "m.yaml"
    cfg.write_text(
        f"database: {store_location('m.db', relative_to=tmp_path)}\ntargets:\n- {{name: up, url: '{web.url('/healthy')}'}}\n"
        f"- {{name: down, url: '{web.url('/500')}'}}\n"
    )
    Store(tmp_path / "m.db").close()  # the daemon's database: check records into it, but never makes one
    done = monitor("check", "--config", str(cfg), "--target", "up")
    assert done.returncode == 0, done.stderr
    store = Store(tmp_path / "m.db")
    assert store.results.count_results("up") == 1 and store.results.count_results("down") == 0
    assert monitor("check", "--config", str(cfg), "--target", "nope").returncode == 3


def test_a_heartbeat_without_the_daemons_database_is_unknown_and_the_rest_are_checked(web: Misbehaving, tmp_path: Path) -> None:
    """Hostile input, round three, finding 16: one heartbeat made check give up on every target, and the
    config's database was created anyway."""
    cfg = tmp_path / "m.yaml"
    cfg.write_text(
        f"database: monitor.db\ntargets:\n- {{name: up, url: '{web.url('/healthy')}'}}\n"
        f"- {{name: backup, kind: heartbeat, heartbeat: {{token: {'t' * 20 + 'oken-of-32-characters'}, "
        "period: 1h}}\n"
    )
    done = monitor("check", "--config", str(cfg), "--json")
    assert done.returncode == 3, done.stdout + done.stderr  # nothing failed, one could not be judged
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["up"]["severity"] == "ok" and rows["up"]["ok"] is True
    assert rows["backup"]["severity"] == "unknown" and rows["backup"]["ok"] is False
    assert "no daemon database" in rows["backup"]["detail"] and "monitor.db" in rows["backup"]["detail"]
    assert not (tmp_path / "monitor.db").exists() and not Path("monitor.db").exists()
    done = monitor("check", "--config", str(cfg))
    assert done.returncode == 3 and "UNKNOWN  backup" in done.stdout and "OK       up" in done.stdout


def test_urls_are_recorded_only_with_db(web: Misbehaving, tmp_path: Path, store_location: Any) -> None:
    monitor("check", web.url("/healthy"))
    assert not list(tmp_path.iterdir())
    monitor("check", web.url("/healthy"), "--db", store_location(tmp_path / "x.db"))
    assert Store(tmp_path / "x.db").results.count_results() == 1


def test_check_never_imports_the_agent_stack(web: Misbehaving) -> None:
    code = (
        "import sys; from monitor.cli.main import main\n"
        "try: main(['check', sys.argv[1]])\n"
        "except SystemExit: pass\n"
        "print(sorted(m for m in ('litellm', 'smolagents', 'rich', 'sqlite_utils') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code, web.url("/healthy")], capture_output=True, text=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_run_once_checks_detects_investigates_and_exits_with_nagios_code(web: Misbehaving, tmp_path: Path, store_location: Any) -> None:
    cfg = tmp_path / "m.yaml"
    cfg.write_text(
        f"database: {store_location('m.db', relative_to=tmp_path)}\nmodel: {{id: builtin}}\n"
        "detectors: {consecutive: 1}\nmetrics: {port: 0}\n"
        f"targets:\n- {{name: api, url: '{web.url('/500')}'}}\n- {{name: web, url: '{web.url('/healthy')}'}}\n"
    )
    done = monitor("run", "--config", str(cfg), "--once")
    assert done.returncode == 2, done.stderr
    assert "CRITICAL api" in done.stdout and "OK       web" in done.stdout
    store = Store(tmp_path / "m.db")
    [incident] = store.incidents.open_incidents()
    assert incident.target == "api" and incident.agent_state == "success"
    assert incident.root_cause == "server_error" and "error statuses" in (incident.suspected_cause or "")


def test_investigate_a_url_always(web: Misbehaving, tmp_path: Path) -> None:
    done = monitor("investigate", web.url("/healthy"), "--always", "--model", "builtin", "--db", str(tmp_path / "i.db"))
    assert done.returncode == 0, done.stderr
    assert "agent run #1 ended in success after 5 steps" in done.stdout
    assert "diagnosis: recovered (medium confidence)" in done.stdout  # high: only a past fix the evidence decides
    assert "step 1 [" in done.stdout and "check_target(name=" in done.stdout  # progress, step by step
    assert "model: builtin triage model, because model.id is builtin" in done.stderr
    assert monitor("investigate", "nope", "--db", str(tmp_path / "i.db")).returncode == 3


def test_method_and_headers_for_urls(web: Misbehaving) -> None:
    assert monitor("check", web.url("/healthy"), "--method", "HEAD", "--header", "X-Probe: 1").returncode == 0
    bad = monitor("check", web.url("/healthy"), "--header", "no colon")
    assert bad.returncode == 3 and "is not 'Name: value'" in bad.stderr


def test_validate_reports_ok_or_the_problems(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("targets:\n- {name: a, url: 'http://a/'}\n")
    done = monitor("validate", str(good))
    assert done.returncode == 0 and "OK, 1 targets" in done.stdout
    from monitor.core.cpus import cpus

    assert done.stdout.splitlines()[0].endswith(f", workers auto, at most {cpus()}"), done.stdout  # auto: a core each (its quota's)
    bad = tmp_path / "bad.yaml"
    bad.write_text("targets:\n- {name: a, url: 'http://a/', expect: {status: [999]}}\n")
    done = monitor("validate", str(bad))
    assert done.returncode == 3 and "targets[0].expect.status: 999 is not a status code" in done.stderr


@pytest.mark.parametrize(
    ("path", "error", "code"),
    [
        ("/healthy", None, 0),
        ("/500", "unexpected_status", 2),
        ("/slow", "timeout", 2),
        ("/hang", "timeout", 2),
        ("/drip", "timeout", 2),
        ("/endless", "body_too_large", 2),
        ("/reset", "connection_reset", 2),
        ("/loop", "too_many_redirects", 2),
        ("/garbage", "protocol", 2),
        ("/slowish", None, 0),
    ],
)
def test_every_misbehaviour_gives_its_error_kind_and_exit_code_in_time(web: Misbehaving, path: str, error: str | None, code: int) -> None:
    started = time.monotonic()
    done = monitor("check", web.url(path), "--timeout", "1s", "--json")
    # the check itself ends at its timeout; the whole command adds the interpreter's start-up (about 0.6 s of
    # CPU for the imports, several seconds of wall time on a loaded 2-core machine)
    assert json.loads(done.stdout)[0]["latency_ms"] < 1000 + 500
    assert time.monotonic() - started < 1.0 + 6.0
    assert (done.returncode, json.loads(done.stdout)[0]["error"]) == (code, error)


@pytest.mark.parametrize(
    ("url", "error"),
    [(f"http://127.0.0.1:{free_port()}/", "connection_refused"), ("http://no-such-host.invalid/", "dns")],
    ids=["connection_refused", "dns"],  # the same names in every xdist worker, whatever port is free
)
def test_unreachable_targets_are_critical(url: str, error: str) -> None:
    done = monitor("check", url, "--timeout", "1s", "--json")
    assert (done.returncode, json.loads(done.stdout)[0]["error"]) == (2, error)


def test_a_json_field_with_the_wrong_value_is_critical(web: Misbehaving, tmp_path: Path) -> None:
    cfg = tmp_path / "j.yaml"
    cfg.write_text(f"targets:\n- {{name: j, url: '{web.url('/json-wrong')}', expect: {{json: {{path: status, equals: ok}}}}}}\n")
    done = monitor("check", "--config", str(cfg), "--json")
    assert done.returncode == 2 and json.loads(done.stdout)[0]["error"] == "condition_failed"


def test_status_shows_the_last_result_of_each_target_and_open_incidents(web: Misbehaving, tmp_path: Path, store_location: Any) -> None:
    db = str(tmp_path / "s.db")
    assert monitor("status", "--db", db).returncode == 3
    monitor("check", web.url("/healthy"), web.url("/500"), "--db", store_location(db))
    store = Store(db)
    IncidentWrites(store).open_incident("127.0.0.1", "consecutive", "down")
    store.close()
    done = monitor("status", "--db", store_location(db), "--json")
    data = json.loads(done.stdout)
    assert done.returncode == 2
    assert [(r["target"].rsplit("/", 1)[-1], r["severity"]) for r in data["targets"]] == [("500", "critical"), ("healthy", "ok")]
    assert [i["summary"] for i in data["open_incidents"]] == ["down"]
    assert "open incidents: 1" in monitor("status", "--db", store_location(db)).stdout
