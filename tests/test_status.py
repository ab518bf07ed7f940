"""``monitor status`` says what the database says now, in the same words and JSON as ``monitor check`` and the
web API (hostile input, round three, finding 18)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from servers import Misbehaving

from monitor.checks import heartbeat
from monitor.checks.heartbeat import Heartbeats
from monitor.cli.main import main
from monitor.config import ConfigError, Target, parse
from monitor.core.results import Result
from monitor.core.state import state_of
from monitor.incidents.history import Held
from monitor.incidents.patterns import consecutive
from monitor.store import Store
from monitor.store.writes import IncidentWrites

TOKEN = "T" * 20 + "ok_-token-of-test-0123456789"


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_status_json_and_check_json_agree_on_types(web: Misbehaving, tmp_path: Path) -> None:
    """status printed "ok": 0 and phases as a string where check printed false and an object."""
    db = str(tmp_path / "s.db")
    checked = cli("check", web.url("/healthy"), web.url("/500"), "--db", db, "--json")
    status = cli("status", "--db", db, "--json")
    assert checked.exit_code == status.exit_code == 2, status.output
    by_check = {row["name"]: row for row in json.loads(checked.output)}
    for row in json.loads(status.output)["targets"]:
        other = by_check[row["target"]]
        assert row["ok"] is other["ok"] and isinstance(row["ok"], bool)
        assert row["phases"] == other["phases"] and isinstance(row["phases"], dict)


def test_status_says_stale_when_the_daemon_stopped(tmp_path: Path) -> None:
    """status showed OK 48 s after the daemon stopped, while the API said stale."""
    config = tmp_path / "m.yaml"
    config.write_text(
        "database: s.db\ntargets:\n- {name: api, url: 'http://127.0.0.1:1/', interval: 5s}\n"
        "- {name: shop, url: 'http://127.0.0.1:1/', interval: 1h}\n"
    )
    store = Store(tmp_path / "s.db")
    for name in ("api", "shop"):
        store.results.add_results([Result(name, "http://127.0.0.1:1/", True, "ok", 200, 5.0, None, "", time.time() - 48)])
    store.close()
    done = cli("status", "--config", str(config))
    lines = {line.split()[1]: line for line in done.output.splitlines() if line.startswith(("STALE", "OK"))}
    assert lines["api"].startswith("STALE") and "no check for 48s" in lines["api"]
    assert lines["shop"].startswith("OK")
    assert done.exit_code == 3  # what the daemon last saw may no longer hold: not an OK
    data = json.loads(cli("status", "--config", str(config), "--json").output)
    assert {row["target"]: row["state"] for row in data["targets"]} == {"api": "stale", "shop": "up"}


def target() -> Target:
    return Target.model_validate({"name": "backup", "kind": "heartbeat", "heartbeat": {"token": TOKEN, "period": "60s", "grace": "10s"}})


def test_a_heartbeat_waiting_for_its_first_ping_reads_waiting(tmp_path: Path) -> None:
    """It read OK (status) and up (the web UI) though no job had ever pinged."""
    store = Store(tmp_path / "s.db")
    now = time.time()
    beats = Heartbeats(store, [target()], clock=lambda: now - 30)
    result = heartbeat.judge(target(), beats, now)
    assert result.ok and result.error == "heartbeat_waiting" and "waiting for the first ping" in result.detail
    store.results.add_results([result])
    latest = store.results.latest_states(["backup"])["backup"]
    assert state_of(latest) == "waiting"
    store.close()
    config = tmp_path / "m.yaml"
    config.write_text(
        f"database: s.db\ntargets:\n- {{name: backup, kind: heartbeat, heartbeat: {{token: {TOKEN}, period: 60s, grace: 10s}}}}\n"
    )
    done = cli("status", "--config", str(config))
    assert done.output.split()[:2] == ["WAITING", "backup"] and "OK" not in done.output.split("open incidents")[0]


def test_a_silent_heartbeat_reads_as_silence_not_a_count_of_failures() -> None:
    """Its incident read "35 consecutive failures of backup"."""
    rows = [
        Held(100.0 - n, 0, severity="critical", error="heartbeat_missed", detail="no ping for 2.0h (period 1h + grace 5m)")
        for n in range(35)
    ]
    pattern = consecutive("backup", rows, 3)
    assert pattern is not None and "consecutive" not in pattern.summary
    assert pattern.summary == "backup: silent: no ping for 2.0h (period 1h + grace 5m)"


def test_an_address_without_a_scheme_lists_every_kind() -> None:
    try:
        parse("targets:\n- {name: a, url: example.com/health}\n")
    except ConfigError as exc:
        message = str(exc)
    assert "'example.com/health' has no scheme" in message
    assert all(s in message for s in ("http://", "https://", "tcp://", "tls://", "icmp://", "dns:")), message
    # the same rule for monitor check's URLs:
    done = cli("check", "example.com")
    assert done.exit_code == 3 and "tcp://" in done.output and "dns:" in done.output


def test_status_and_incidents_list_keep_their_columns(tmp_path: Path) -> None:
    """MAINTENANCE pushed its row's columns out of line, and a summary 8 characters too long for its column
    ended in '… [8 more characters]', longer than what it left out."""
    config = tmp_path / "m.yaml"
    config.write_text(
        "database: s.db\ntargets:\n- {name: api, url: 'http://127.0.0.1:1/', interval: 1h}\n"
        "- {name: batch, url: 'http://127.0.0.1:1/', interval: 1h}\n"
        "maintenance:\n- {targets: [batch], start: 2000-01-01T00:00:00Z, end: 2100-01-01T00:00:00Z}\n"
    )
    store = Store(tmp_path / "s.db")
    for name, ok in (("api", True), ("batch", False)):
        store.results.add_results(
            [
                Result(
                    name,
                    "http://127.0.0.1:1/",
                    ok,
                    "ok" if ok else "critical",
                    200 if ok else 500,
                    5.0,
                    None if ok else "unexpected_status",
                    "",
                    time.time() - 5,
                )
            ]
        )
    summary = "15 consecutive failures of checkout; 10 failures in last 10 checks of checkout"
    IncidentWrites(store).open_incident("api", "consecutive", summary)
    store.close()
    rows = cli("status", "--config", str(config)).output.split("\n\n")[0].splitlines()
    assert sorted(line.split()[0] for line in rows) == ["MAINTENANCE", "OK"], rows
    assert len({line.index(line.split()[1]) for line in rows}) == 1, rows  # the names start in one column
    listed = cli("incidents", "list", "--config", str(config)).output
    assert summary in listed and "more characters" not in listed
