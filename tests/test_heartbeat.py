"""Heartbeat (push) targets: pings sent by curl to the daemon's endpoint, judged against period + grace."""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from past import known
from prometheus_client import CollectorRegistry
from servers import wait_for

from monitor.checks import heartbeat
from monitor.checks.heartbeat import Heartbeats
from monitor.config import Config, ConfigError, Target, parse
from monitor.daemon import Daemon
from monitor.listener import MetricsServer
from monitor.metrics import Metrics
from monitor.store import Store

TOKEN = "T" * 20 + "ok_-token-of-test-0123456789"


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def target(period: str = "60s", grace: str = "10s", token: str = TOKEN) -> Target:
    return Target.model_validate({"name": "backup", "kind": "heartbeat", "heartbeat": {"token": token, "period": period, "grace": grace}})


def curl(url: str, *args: str) -> tuple[int, str]:
    """The status and body a ping through curl gets."""
    done = subprocess.run(
        ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "5", *args, url], capture_output=True, text=True, timeout=10
    )
    body, _, code = done.stdout.rpartition("\n")
    return int(code), body.strip()


@pytest.fixture
def store(db_path: str) -> Iterator[Store]:
    with_store = Store(db_path)
    yield with_store
    with_store.close()


@pytest.fixture
def endpoint(store: Store) -> Iterator[tuple[str, Heartbeats, Clock]]:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    clock = Clock()
    beats = Heartbeats(store, [target()], clock=clock)
    server = MetricsServer(Metrics(CollectorRegistry()), "127.0.0.1", 0, 60, pings=beats.record).start()
    yield server.url, beats, clock
    server.stop()


def judge(beats: Heartbeats, clock: Clock, t: Target | None = None) -> tuple[str, str | None, str]:
    result = heartbeat.judge(t or target(), beats, clock())
    return result.severity, result.error, result.detail


def test_pings_by_curl_get_and_post_are_recorded(endpoint: tuple[str, Heartbeats, Clock], store: Store) -> None:
    url, beats, clock = endpoint
    assert curl(f"{url}/ping/{TOKEN}") == (200, "OK")
    assert known(store.results.heartbeat("backup"))["last_ping"] == clock.now
    clock.now += 5
    assert curl(f"{url}/ping/{TOKEN}/start", "-X", "POST") == (200, "OK")
    clock.now += 3
    assert curl(f"{url}/ping/{TOKEN}", "--data-binary", "backup done: 12 GB\n" * 50) == (200, "OK")
    state = store.results.heartbeat("backup")
    assert state is not None and state["last_ping"] - state["last_start"] == 3
    result = heartbeat.judge(target(), beats, clock())
    assert result.ok and result.latency_ms == 3000 and result.detail == "last ping 0s ago; the last run took 3.0s"


def test_unknown_tokens_and_oversized_bodies_are_refused(endpoint: tuple[str, Heartbeats, Clock], store: Store, tmp_path: Path) -> None:
    url, _, _ = endpoint
    assert curl(f"{url}/ping/{'x' * 43}")[0] == 404
    assert curl(f"{url}/ping/{TOKEN}/bogus")[0] == 404
    (tmp_path / "huge").write_bytes(b"x" * (2 << 20))
    assert curl(f"{url}/ping/{TOKEN}", "--data-binary", f"@{tmp_path / 'huge'}")[0] == 413
    assert curl(f"{url}/metrics", "-X", "POST")[0] == 405
    assert known(store.results.heartbeat("backup"))["last_ping"] is None


def test_silence_past_period_and_grace_is_missed_and_a_fail_is_failed(endpoint: tuple[str, Heartbeats, Clock]) -> None:
    url, beats, clock = endpoint
    assert judge(beats, clock) == ("ok", "heartbeat_waiting", "waiting for the first ping (0s so far)")
    clock.now += 71
    assert judge(beats, clock) == ("critical", heartbeat.MISSED, "no ping since monitoring began 71s ago (period 60s + grace 10s)")
    curl(f"{url}/ping/{TOKEN}")
    assert judge(beats, clock)[:2] == ("ok", None)
    clock.now += 69
    assert judge(beats, clock) == ("ok", None, "last ping 69s ago")
    clock.now += 2
    assert judge(beats, clock) == ("critical", heartbeat.MISSED, "no ping for 71s (period 60s + grace 10s)")
    curl(f"{url}/ping/{TOKEN}/fail")
    assert judge(beats, clock) == ("critical", heartbeat.FAILED, "the job reported a failure 0s ago")


def test_a_failing_job_says_why_and_the_check_says_it_after_a_restart(
    endpoint: tuple[str, Heartbeats, Clock], store: Store, db_path: str
) -> None:
    """A job's /fail may POST its output (``curl --data-raw "$output"``): the check says its tail, printable, with
    URLs' secrets redacted; a later /fail without a body says nothing old, and a success passes. Before, the
    body was read and dropped: a failure said only when."""
    url, beats, clock = endpoint
    output = "step 1 ok\n" * 300 + (
        'upload step exited 255: "Host key verification failed."\x07 (https://ops:hunter2@sftp.bank.example/in?token=abc)\n'
    )
    assert curl(f"{url}/ping/{TOKEN}/fail", "--data-binary", output) == (200, "OK")
    severity, error, detail = judge(beats, clock)
    assert (severity, error) == ("critical", heartbeat.FAILED)
    assert heartbeat.judge(target(), beats, clock()).excerpt == detail.split(" ago: ", 1)[1]  # what the job said
    said = detail.removeprefix("the job reported a failure 0s ago: ")
    assert (
        said.endswith('step 1 ok upload step exited 255: "Host key verification failed." (https://***@sftp.bank.example/in?token=***')
        and len(said) <= heartbeat.MESSAGE_CHARS
        and "hunter2" not in detail
    )
    again = Store(db_path)  # stored: another process (a restart, a replica) reads it
    try:
        assert judge(Heartbeats(again, [target()], clock=clock), clock)[2] == detail
    finally:
        again.close()
    long_output = "compiling module\n" * 4000 + "ERROR: disk quota exceeded on /srv/build\n"  # 68 kB
    assert curl(f"{url}/ping/{TOKEN}/fail", "--data-binary", long_output) == (200, "OK")  # was 413: the failure lost
    assert judge(beats, clock)[2].endswith("compiling module compiling module ERROR: disk quota exceeded on /srv/build")
    assert curl(f"{url}/ping/{TOKEN}/1") == (200, "OK")  # a failure by its exit status, without a body
    assert judge(beats, clock)[2] == "the job reported a failure 0s ago"
    clock.now += 1
    curl(f"{url}/ping/{TOKEN}", "--data-binary", "all good")
    assert judge(beats, clock)[:2] == ("ok", None)


def test_an_exit_status_in_the_path_is_a_success_or_a_failure(endpoint: tuple[str, Heartbeats, Clock]) -> None:
    url, beats, clock = endpoint
    assert curl(f"{url}/ping/{TOKEN}/1") == (200, "OK")
    assert judge(beats, clock)[1] == heartbeat.FAILED
    clock.now += 1
    assert curl(f"{url}/ping/{TOKEN}/0") == (200, "OK")
    assert judge(beats, clock)[:2] == ("ok", None)
    assert curl(f"{url}/ping/{TOKEN}/1234")[0] == 404
    assert curl(f"{url}/ping/{TOKEN}/256")[0] == 404  # an exit status is 0 to 255, as Healthchecks takes it
    assert judge(beats, clock)[:2] == ("ok", None)


def test_a_head_request_is_a_ping_as_healthchecks_takes_it(endpoint: tuple[str, Heartbeats, Clock]) -> None:
    url, beats, clock = endpoint
    assert curl(f"{url}/ping/{TOKEN}/fail") == (200, "OK")
    clock.now += 1
    assert curl(f"{url}/ping/{TOKEN}", "-I")[0] == 200  # curl -I: HEAD, the headers alone
    assert judge(beats, clock)[:2] == ("ok", None)
    assert curl(f"{url}/metrics", "-I")[0] == 405


def test_a_start_not_followed_by_a_ping_within_grace_is_missed(endpoint: tuple[str, Heartbeats, Clock]) -> None:
    url, beats, clock = endpoint
    curl(f"{url}/ping/{TOKEN}")
    clock.now += 1
    curl(f"{url}/ping/{TOKEN}/start")
    clock.now += 10
    assert judge(beats, clock)[0] == "ok"
    clock.now += 1
    assert judge(beats, clock) == ("critical", heartbeat.MISSED, "the job started 11s ago and has not pinged within its grace of 10s")


def test_a_ping_without_a_start_of_its_own_has_no_run_time(store: Store) -> None:
    clock = Clock()
    beats = Heartbeats(store, [target()], clock=clock)
    beats.record(TOKEN, "start")
    clock.now += 3
    beats.record(TOKEN)
    assert heartbeat.judge(target(), beats, clock()).latency_ms == 3000
    clock.now += 50
    beats.record(TOKEN)  # the next run did not say /start: it took no known time, not 53 s
    result = heartbeat.judge(target(), beats, clock())
    assert (result.latency_ms, result.detail) == (0, "last ping 0s ago")
    assert heartbeat.judge(target(), Heartbeats(store, [target()], clock=clock), clock()).latency_ms == 0  # restarted
    beats.record(TOKEN, "start")
    clock.now += 2
    beats.record(TOKEN, "fail")  # a failure ends the run too
    clock.now += 40
    beats.record(TOKEN)
    assert heartbeat.judge(target(), beats, clock()).latency_ms == 0


def test_two_heartbeats_with_one_token_and_a_guessable_token_are_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        parse(
            f"targets:\n- {{name: a, kind: heartbeat, heartbeat: {{token: {TOKEN}, period: 1h}}}}\n"
            f"- {{name: b, kind: heartbeat, heartbeat: {{token: {TOKEN}, period: 1h}}}}\n"
        )
    message = str(caught.value)
    assert "<config>:3: targets[1].heartbeat.token: the same token as target 'a'" in message and TOKEN not in message
    for guessable in ("a" * 32, "password" * 4):
        with pytest.raises(ConfigError, match=r"targets\[0\].heartbeat.token: .* guess") as caught:
            parse(f"targets:\n- {{name: b, kind: heartbeat, heartbeat: {{token: {guessable}, period: 1h}}}}\n")
        assert guessable not in str(caught.value)


def test_pings_survive_a_restart(db_path: str) -> None:
    clock = Clock()
    first = Store(db_path)
    Heartbeats(first, [target()], clock=clock).record(TOKEN)
    first.close()
    clock.now += 30
    again = Store(db_path)
    try:
        assert judge(Heartbeats(again, [target()], clock=clock), clock) == ("ok", None, "last ping 30s ago")
    finally:
        again.close()


def test_tokens_are_long_secret_and_never_shown() -> None:
    assert len(heartbeat.new_token()) >= 43 and heartbeat.new_token() != heartbeat.new_token()
    with pytest.raises(ConfigError, match=r"targets\[0\].heartbeat.token: heartbeat token must be 32 to 128"):
        parse("targets:\n- {name: b, kind: heartbeat, heartbeat: {token: short, period: 1h}}\n")
    with pytest.raises(ConfigError, match=r"targets\[0\]: a heartbeat target needs heartbeat:"):
        parse("targets:\n- {name: b, kind: heartbeat}\n")
    config = parse(f"targets:\n- {{name: b, kind: heartbeat, heartbeat: {{token: {TOKEN}, period: 1h}}}}\n")
    assert TOKEN not in repr(config) and TOKEN not in config.model_dump_json()
    assert config.targets[0].url == "heartbeat:b"


def test_monitor_check_on_a_heartbeat_without_a_database_is_unknown(tmp_path: Path) -> None:
    import sys

    path = tmp_path / "monitor.yaml"
    path.write_text(f"targets:\n- {{name: backup, kind: heartbeat, heartbeat: {{token: {TOKEN}, period: 1h}}}}\n")
    done = subprocess.run([sys.executable, "-m", "monitor", "check", "--config", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stdout  # monitor cannot know: not a CRITICAL that pages someone
    assert "UNKNOWN  backup" in done.stdout and "judged on the pings a daemon stored: no daemon database" in done.stdout
    fresh = str(tmp_path / "typo.db")  # a database no daemon wrote: not OK "waiting for the first ping"
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "check", "--config", str(path), "--db", fresh], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3, done.stdout
    assert f"no daemon has watched it in {fresh}" in done.stdout


def test_monitor_token_prints_a_new_token() -> None:
    import sys

    done = subprocess.run([sys.executable, "-m", "monitor", "token"], capture_output=True, text=True, timeout=60)
    token = done.stdout.strip()
    assert done.returncode == 0 and len(token) == 43
    assert parse(f"targets:\n- {{name: b, kind: heartbeat, heartbeat: {{token: {token}, period: 1h}}}}\n")


def test_a_heartbeat_that_stops_opens_an_incident_and_a_ping_resolves_it(db_path: str, caplog: pytest.LogCaptureFixture) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    period, grace, interval = 1.0, 0.5, 0.2
    config = Config.model_validate(
        {
            "database": db_path,
            "agent": {"mode": "off"},
            "metrics": {"port": 0},
            "targets": [
                {
                    "name": "backup",
                    "kind": "heartbeat",
                    "interval": interval,
                    "heartbeat": {"token": TOKEN, "period": period, "grace": grace},
                }
            ],
        }
    )
    caplog.set_level(logging.DEBUG)
    daemon = Daemon(config, registry=CollectorRegistry())
    daemon.start()
    try:
        assert daemon.server is not None
        url = f"{daemon.server.url}/ping/{TOKEN}"
        assert curl(url)[0] == 200
        pinged = time.time()
        [incident] = wait_for(lambda: daemon.store.incidents.open_incidents("backup"), timeout=20)
        # a missed heartbeat opens an incident at its first failed check: within period + grace + one interval
        assert incident.opened_at - pinged <= period + grace + interval + 1.0  # + slack for a loaded machine
        assert incident.pattern == "consecutive" and incident.root_cause == "job_missing"
        assert (incident.summary or "").startswith("backup: silent: no ping for")  # its first missed check, not the third
        assert curl(url)[0] == 200
        wait_for(lambda: not daemon.store.incidents.open_incidents("backup"), timeout=20)
        assert daemon.store.results.recent_results("backup", 1)[0].ok
    finally:
        daemon.stop()
    assert TOKEN not in caplog.text


def test_a_reload_swaps_tokens_and_keeps_the_pings(tmp_path: Path) -> None:
    from monitor import config as config_module

    def write(token: str) -> None:
        path.write_text(
            f"database: {tmp_path / 'm.db'}\nagent: {{mode: off}}\ntargets:\n"
            f"- {{name: backup, kind: heartbeat, heartbeat: {{token: {token}, period: 1h}}}}\n"
        )

    path = tmp_path / "monitor.yaml"
    write(TOKEN)
    daemon = Daemon(config_module.load(path), registry=CollectorRegistry(), config_path=str(path))
    try:
        assert daemon.heartbeats.record(TOKEN) == "backup"
        rotated = heartbeat.new_token()
        write(rotated)
        assert daemon.reload()
        assert daemon.heartbeats.record(TOKEN) is None  # the old token no longer pings
        state = daemon.heartbeats.state("backup")
        assert state is not None and state["last_ping"] is not None
        assert daemon.heartbeats.record(rotated, "start") == "backup"
    finally:
        daemon.close()


@pytest.mark.sqlite_only("each replica's own SQLite file; on a shared PostgreSQL any replica takes any ping (test_shared_store)")
def test_a_replica_takes_the_pings_of_its_own_heartbeats_only(tmp_path: Path) -> None:
    from monitor.checks.schedule import replica_of

    owner = replica_of("backup", 2)
    for index in (0, 1):
        config = Config.model_validate(
            {
                "database": str(tmp_path / f"r{index}.db"),
                "agent": {"mode": "off"},
                "replicas": 2,
                "replica_index": index,
                "lease": "off",
                "targets": [{"name": "backup", "kind": "heartbeat", "heartbeat": {"token": TOKEN, "period": "1h"}}],
            }
        )
        daemon = Daemon(config, registry=CollectorRegistry())
        try:  # the other replica answers 404, so a misrouted ping fails loudly instead of being lost
            assert daemon.heartbeats.record(TOKEN) == ("backup" if index == owner else None)
        finally:
            daemon.close()


def test_a_database_from_before_keeps_its_pings_and_learns_what_a_job_said(db_path: str) -> None:
    """Migration 22 adds ``last_message`` to a database made before it; the pings it had stay."""
    clock = Clock()
    old = Store(db_path)
    Heartbeats(old, [target()], clock=clock).record(TOKEN)
    if old.shared:
        old.close()
        pytest.skip("PostgreSQL's migrations are versioned in schema_version: one run each")
    old.engine.execute("ALTER TABLE heartbeats DROP COLUMN last_message")
    old.engine.execute("PRAGMA user_version = 21")
    old.close()
    clock.now += 30
    again = Store(db_path)
    try:
        beats = Heartbeats(again, [target()], clock=clock)
        assert judge(beats, clock) == ("ok", None, "last ping 30s ago")
        beats.record(TOKEN, "fail", "disk full")
        assert judge(beats, clock)[2] == "the job reported a failure 0s ago: disk full"
    finally:
        again.close()


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"curl https://admin:TopSecret@example.com/api?token=abcdef failed " + b"y" * 960, "failed " + "y" * 960),
        (b"connection to postgresql://backup:Hunter2@db.internal/prod failed", "connection to postgresql://***@db.internal/prod failed"),
        (b"ok \xe2\x80\xae\xc2\x9b evil \x1b[31mred\x1b[0m \xff", "ok evil red \ufffd"),
        (b"   \n\t ", None),
    ],
)
def test_what_a_job_said_is_one_printable_line_with_no_secret_left(body: bytes, said: str | None) -> None:
    """Redacted before it is cut, and cut at a word: a URL cut in two kept its password ("ret@example.com");
    a URL of another scheme kept its user and password; bidi overrides and terminal colours went to alerts."""
    assert heartbeat.message_of(body) == said
