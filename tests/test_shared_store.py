"""What a database shared by replicas adds: one memory of incidents, each replica's own runs and
notifications, migrations that race, a server that goes away. Against a real PostgreSQL (the
``postgres_url`` fixture: a fresh schema each test) and, where the behaviour is the same, SQLite too."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from past import known

from monitor import wiring
from monitor.checks.engine import Result
from monitor.cli.main import main
from monitor.core.incidents import IncidentCount
from monitor.core.results import Slice
from monitor.core.runs import NewStep
from monitor.store import SCHEMA_VERSION, Store
from monitor.store.postgres import Postgres
from monitor.store.schema_pg import PG_MIGRATIONS
from monitor.store.writes import IncidentWrites


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database two stores can share: a SQLite file, or a PostgreSQL schema."""
    if request.param == "sqlite":
        return str(tmp_path / "shared.db")
    return str(request.getfixturevalue("postgres_url"))


def result(name: str, ok: bool, at: float, latency: float = 12.5) -> Result:
    return Result(
        name=name,
        url=f"http://{name}.example/health",
        ok=ok,
        severity="ok" if ok else "critical",
        status_code=200 if ok else 503,
        latency_ms=latency,
        error=None if ok else "status 503",
        detail="",
        checked_at=at,
    )


def test_an_incident_resolved_on_one_replica_is_recalled_by_another(postgres_url: str) -> None:
    a, b = Store(postgres_url, replica=0), Store(postgres_url, replica=1)
    first = IncidentWrites(a).open_incident("shop.local", "consecutive", "3 consecutive failures: connection refused")
    IncidentWrites(a).close_incident(first, "restarted the payments worker; its pool was exhausted")
    mine = IncidentWrites(b).open_incident("checkout", "consecutive", "3 consecutive failures: connection refused")
    recalled = b.incidents.similar_incidents("checkout", "consecutive", exclude=mine)
    assert [r.id for r in recalled] == [first]
    assert "payments worker" in (recalled[0].resolution or "")
    # punctuation separates words, as in SQLite's FTS5: shop.local holds "shop"
    assert [r.id for r in b.incidents.search_incidents("shop")] == [first]
    assert b.incidents.search_incidents("données 超时 !!") == []


def test_search_ranks_resolved_incidents_first_then_by_relevance(location: str) -> None:
    store = Store(location)
    loose = IncidentWrites(store).open_incident("a", "window", "timeout")
    IncidentWrites(store).close_incident(loose)
    close = IncidentWrites(store).open_incident("b", "window", "timeout timeout upstream timeout")
    IncidentWrites(store).close_incident(close)
    fixed = IncidentWrites(store).open_incident("c", "window", "timeout")
    IncidentWrites(store).close_incident(fixed, "raised the upstream timeout")
    found = [r.id for r in store.incidents.search_incidents("upstream timeout")]
    assert found[0] == fixed  # a resolution note first
    assert found.index(close) < found.index(loose)  # then the better match
    assert all(json.loads(json.dumps(r.to_json()))["id"] == r.id for r in store.incidents.search_incidents("timeout"))


def test_each_replica_delivers_its_own_notifications_and_keeps_its_own_working_memory(location: str) -> None:
    a, b = Store(location, replica=0, clock=lambda: 100.0), Store(location, replica=1, clock=lambda: 100.0)
    a.outbox.enqueue("webhook", {"from": "a"})
    b.outbox.enqueue("webhook", {"from": "b"})
    assert [n.message for n in a.outbox.due_notifications(200.0)] == [{"from": "a"}]
    assert [n.message for n in b.outbox.due_notifications(200.0)] == [{"from": "b"}]
    assert a.outbox.due_receivers(200.0) == b.outbox.due_receivers(200.0) == ["webhook"]
    assert a.outbox.pending_notifications() == b.outbox.pending_notifications() == 1
    a.memory.save_memory("working", ["a's steps"])
    b.memory.save_memory("working", ["b's steps"])
    assert (a.memory.load_memory("working"), b.memory.load_memory("working")) == (["a's steps"], ["b's steps"])


def test_a_restarting_replica_marks_only_its_own_runs_interrupted(location: str) -> None:
    a, b = Store(location, replica=0), Store(location, replica=1)
    incident = IncidentWrites(a).open_incident("api", "consecutive", "down")
    running = a.runs.start_run("Investigate api", target="api", incident_id=incident)
    b.runs.start_run("Investigate web", target="web")
    assert IncidentWrites(Store(location, replica=1)).mark_interrupted_runs() == 1
    assert known(a.runs.run(running)).state == "running"  # replica 0 is still investigating: not b's to end
    assert "cut short" not in (known(a.incidents.incident(incident)).notes or "")
    assert IncidentWrites(a).mark_interrupted_runs() == 1
    assert known(a.runs.run(running)).state == "interrupted" and "cut short" in (known(a.incidents.incident(incident)).notes or "")


def test_two_replicas_cannot_open_two_incidents_for_one_target_nor_both_resolve_it(location: str) -> None:
    a, b = Store(location, replica=0), Store(location, replica=1)
    opened = IncidentWrites(a).open_incident_unless_open("api", "consecutive", "down")
    assert opened is not None
    assert IncidentWrites(b).open_incident_unless_open("api", "window", "down too") is None
    assert [IncidentWrites(a).close_incident(opened, "fixed"), IncidentWrites(b).close_incident(opened, "fixed again")] == [True, False]
    assert known(b.incidents.incident(opened)).resolution == "fixed again"  # a later note still lands


def test_replicas_starting_together_migrate_once(postgres_url: str) -> None:
    stores: list[Store] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            stores.append(Store(postgres_url))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == [] and len(stores) == 3
    assert stores[0].version == SCHEMA_VERSION
    versions = stores[0]._rows("SELECT version FROM schema_version ORDER BY version")
    assert [v["version"] for v in versions] == [version for version, _ in PG_MIGRATIONS]  # each once
    assert len({s.incidents.install_id for s in stores}) == 1


def test_a_lost_server_connection_fails_one_write_then_reconnects(postgres_url: str) -> None:
    import psycopg

    store = Store(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        assert isinstance(store.engine, Postgres)
        admin.execute("SELECT pg_terminate_backend(%s)", (store.engine.conn.info.backend_pid,))
    with pytest.raises(store.errors) as failed:
        store.results.add_results([result("api", True, 1000.0)])
    assert store.engine.passing(failed.value)  # the daemon keeps the batch for the next cycle
    store.results.add_results([result("api", True, 1001.0)])
    assert [r.checked_at for r in store.results.recent_results("api")] == [1001.0]


def test_numbers_come_back_as_python_numbers_not_decimals(location: str) -> None:
    store = Store(location)
    store.results.add_results([result("api", ok, 3600.0 * 10 + i, latency=10.0 + i) for i, ok in enumerate([True, False, True])])
    uptime = store.results.uptime("api", {"day": 86400}, now=3600.0 * 11)["day"]
    assert (uptime.checks, uptime.passed, uptime.up) == (3, 2, 2) and uptime.ratio == pytest.approx(2 / 3)
    assert all(type(v) is int for v in (uptime.checks, uptime.passed, uptime.up))
    buckets = store.results.latency_buckets("api", 3600.0 * 10, 3600.0 * 11, buckets=1)
    assert buckets == [Slice(0, 3, 1, 11.0, 12.0)]
    hourly = store.results.latency_buckets("api", 0.0, 3600.0 * 24, buckets=2)
    assert hourly == [Slice(0, 3, 1, 11.0, 12.0)]
    incident = IncidentWrites(store).open_incident("api", "window", "flaky")
    IncidentWrites(store).close_incident(incident, "fixed")
    counts = store.incidents.incident_counts()
    assert counts == [IncidentCount("api", "window", 1, 0, 1)]
    assert all(type(v) is int for v in counts[0].to_json().values() if not isinstance(v, str))


def test_a_password_in_the_url_is_never_shown(postgres_url: str) -> None:
    from urllib.parse import urlsplit

    parts = urlsplit(postgres_url)
    wrong = postgres_url.replace(f"{parts.hostname}:", f"nobody:hunter2-secret@{parts.hostname}:", 1)
    wrong = wrong.replace(f"//{parts.username}@", "//", 1) if parts.username else wrong
    out = CliRunner().invoke(main, ["incidents", "list", "--db", wrong])
    assert out.exit_code != 0
    assert "hunter2-secret" not in out.output and "nobody:***@" in out.output


def test_the_daemon_on_postgres_is_the_same_daemon(postgres_url: str, tmp_path: Path) -> None:
    """``database:`` takes the URL; the daemon's store writes there and a second process reads it."""
    from monitor import config as config_module

    path = tmp_path / "monitor.yaml"
    path.write_text(f"database: {postgres_url}\ntargets: []\n")
    loaded: Any = config_module.load(path)
    assert loaded.database == postgres_url  # not made relative to the config's directory
    store = Store(loaded.database)
    store.results.add_results([result("api", False, 50.0)])
    assert known(Store(postgres_url).results.latest_result("api")).ok == 0


def test_a_read_after_the_server_dropped_an_idle_connection_just_works(postgres_url: str) -> None:
    import psycopg

    store = Store(postgres_url)
    store.results.add_results([result("api", True, 1000.0)])
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        assert isinstance(store.engine, Postgres)
        admin.execute("SELECT pg_terminate_backend(%s)", (store.engine.conn.info.backend_pid,))
    assert known(store.results.latest_result("api")).checked_at == 1000.0  # a page or a scrape does not fail once


def test_any_replica_takes_a_ping_and_the_one_that_checks_it_sees_it(postgres_url: str) -> None:
    from monitor.checks import heartbeat
    from monitor.checks.heartbeat import Heartbeats
    from monitor.config import Target

    token = heartbeat.new_token()
    job = Target.model_validate({"name": "backup", "kind": "heartbeat", "heartbeat": {"token": token, "period": "1h", "grace": "10m"}})
    now = [1_000_000.0]
    owner = Heartbeats(Store(postgres_url, replica=0), [job], clock=lambda: now[0])
    other = Heartbeats(Store(postgres_url, replica=1), [job], clock=lambda: now[0])
    now[0] += 30
    assert other.record(token, "fail") == "backup"
    assert heartbeat.judge(job, owner, now[0]).error == heartbeat.FAILED
    now[0] += 30
    other.record(token)
    assert heartbeat.judge(job, owner, now[0]).ok


def test_the_agent_budget_is_each_replicas_own(location: str) -> None:
    a, b = Store(location, replica=0), Store(location, replica=1)
    for _ in range(3):
        a.runs.start_run("Investigate api", target="api")
    b.runs.start_run("Investigate web", target="web")
    assert (a.runs.runs_since(0), b.runs.runs_since(0)) == (3, 1)


def test_two_daemons_cannot_be_the_same_replica_of_one_database(postgres_url: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    first = Store(postgres_url, replica=1)
    assert first.claim_replica()
    assert not Store(postgres_url, replica=1).claim_replica()
    assert Store(postgres_url, replica=2).claim_replica()
    config = tmp_path / "monitor.yaml"
    config.write_text(
        "replicas: 3\nreplica_index: 1\nmetrics: {port: 0}\nagent: {mode: off}\ntargets:\n  - {name: api, url: 'http://127.0.0.1:9/'}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "run", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MONITOR_DATABASE": postgres_url},
    )
    assert done.returncode != 0 and "another daemon already runs as replica 1" in done.stderr, done.stderr
    first.close()  # the process holding it went away: its number is free again
    assert Store(postgres_url, replica=1).claim_replica()


def test_text_with_nul_bytes_is_stored_not_refused(location: str) -> None:
    """PostgreSQL's text holds no NUL: a target's body quoted in an agent step, a result's detail or a note
    with one is stored with U+FFFD in its place, where SQLite keeps it, rather than failing the write."""
    store = Store(location)
    body = "what the target answered:\n```\nerror\x00detail\x00here\n```"
    store.results.add_results(
        [
            Result(
                name="api",
                url="http://api/",
                ok=False,
                severity="critical",
                status_code=500,
                latency_ms=1.0,
                error="status",
                detail="status 500 \x00",
                checked_at=1.0,
            )
        ]
    )
    run = store.runs.start_run("Investigate api\x00", target="api")
    store.runs.add_step(run, NewStep(1, "action", observations=body))
    incident = IncidentWrites(store).open_incident("api", "consecutive", "down\x00")
    IncidentWrites(store).append_incident_note(incident, "acknowledged\x00 in the web UI")
    stored = [
        store.results.recent_results("api")[0].detail,
        store.runs.steps(run)[0].observations,
        known(store.incidents.incident(incident)).notes,
        known(store.runs.run(run)).task,
    ]
    originals = ["status 500 \x00", body, "acknowledged\x00 in the web UI", "Investigate api\x00"]
    assert [(text or "").replace("\ufffd", "\x00").strip() for text in stored] == originals


def test_a_database_not_in_utf8_is_refused_with_a_clear_error(postgres_server: str) -> None:
    """A LATIN1 database cannot hold "超时", and a SQL_ASCII one hands text back as bytes: refuse both at open."""
    import secrets

    import psycopg
    from postgres import with_params

    name = f"monitor_latin1_{secrets.token_hex(3)}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        try:
            admin.execute(f"CREATE DATABASE {name} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
        except psycopg.errors.InsufficientPrivilege:
            pytest.skip("this PostgreSQL user may not create databases")
        try:
            from urllib.parse import urlsplit

            url = urlsplit(postgres_server)._replace(path=f"/{name}").geturl()
            out = CliRunner().invoke(main, ["incidents", "list", "--db", with_params(url, application_name=name)])
            assert out.exit_code == 3
            assert "encoded in LATIN1" in out.output and "UTF8" in out.output and "Traceback" not in out.output
        finally:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
            admin.execute(f"DROP DATABASE {name}")


def _one_line_error(url: str) -> str:
    out = CliRunner().invoke(main, ["incidents", "list", "--db", url])
    assert out.exit_code == 3, out.output
    assert "Traceback" not in out.output and out.output.strip().count("\n") == 0, out.output
    return out.output


def test_a_server_that_is_not_there_is_one_line_naming_it() -> None:
    from servers import free_port

    said = _one_line_error(f"postgresql://monitor:hunter2@127.0.0.1:{free_port()}/monitor")
    assert "Connection refused" in said and "hunter2" not in said and "monitor:***@" in said


def test_no_part_of_a_password_written_without_percent_encoding_is_shown() -> None:
    """``@``, ``:``, ``%`` or ``/`` in a password must be percent-encoded in a URL; one that is not must not
    leak its pieces through the URL shown or the parser's message quoting them."""
    said = _one_line_error("postgresql://monitor:s3cr@t:pa%ss/w?rd@127.0.0.1:1/monitor")
    for piece in ("s3cr", "t:pa", "pa%ss", "%ss", "w?rd", "ss/w"):
        assert piece not in said, said


def test_a_search_path_schema_that_does_not_exist_is_named(postgres_url: str) -> None:
    from postgres import with_params

    said = _one_line_error(with_params(postgres_url, options="-csearch_path=nosuchschema"))
    assert "nosuchschema" in said or "search_path" in said
    assert "LINE 1" not in said


def test_a_user_without_create_rights_uses_a_database_its_owner_migrated(postgres_url: str) -> None:
    """A least-privilege role (SELECT, INSERT, UPDATE, DELETE) works on tables made by the schema's owner;
    on an empty schema it is told what it lacks."""
    import secrets
    from urllib.parse import parse_qsl, urlsplit

    import psycopg

    from monitor.store.engines import describe

    schema = dict(parse_qsl(urlsplit(postgres_url).query))["options"].split("=", 1)[1]
    role = f"monitor_dml_{secrets.token_hex(3)}"
    as_role = urlsplit(postgres_url)._replace(netloc=f"{role}@{urlsplit(postgres_url).hostname}:{urlsplit(postgres_url).port}").geturl()
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        try:
            admin.execute(f"CREATE ROLE {role} LOGIN")
        except psycopg.errors.InsufficientPrivilege:
            pytest.skip("this PostgreSQL user may not create roles")
        try:
            admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
            with pytest.raises(psycopg.errors.InsufficientPrivilege) as denied:
                Store(as_role)  # what monitor run or check meets: told what it lacks, in one line
            said = describe(denied.value, as_role)
            assert "permission denied" in said and "CREATE" in said and "\n" not in said
            Store(postgres_url).close()  # the owner creates the tables
            admin.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}")
            admin.execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}")
            store = Store(as_role)
            store.results.add_results([result("api", False, 50.0)])
            assert IncidentWrites(store).open_incident_unless_open("api", "consecutive", "down") is not None
            store.close()
        finally:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,))
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def test_validate_reads_a_database_url_without_connecting(tmp_path: Path) -> None:
    config = tmp_path / "monitor.yaml"
    config.write_text("database: 'postgresql://monitor:50%off@db.internal/monitor'\ntargets: []\n")
    out = CliRunner().invoke(main, ["validate", str(config)])
    assert out.exit_code == 3 and "percent-encoded" in out.output and "50%off" not in out.output, out.output
    config.write_text("database: 'postgresql://monitor:50%25off@db.internal/monitor'\ntargets: []\n")
    out = CliRunner().invoke(main, ["validate", str(config)])
    assert out.exit_code == 0 and "monitor:***@db.internal" in out.output, out.output


def test_two_installations_in_two_schemas_of_one_database_are_each_replica_0(postgres_schemas: Any) -> None:
    """The replica numbers held are those of one schema's monitor, not of the whole database."""
    first, second = (Store(postgres_schemas.fresh()[1]) for _ in range(2))
    assert first.claim_replica() and second.claim_replica()
    assert not Store(first.engine.location).claim_replica()


def test_a_daemon_outlives_its_database_and_stores_what_it_checked_meanwhile(own_server: Any, tmp_path: Path) -> None:
    """``pg_ctl stop -m fast`` under a running ``monitor run``: it keeps checking, says so once (not a traceback a
    check), /healthz says why, and once the server is back it stores what it checked meanwhile: an incident that
    began during the outage is opened once."""
    import os
    import signal
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request

    from servers import Misbehaving, free_port, wait_for

    with Misbehaving() as web:
        port = free_port()
        config = tmp_path / "monitor.yaml"
        config.write_text(
            f"workers: 1\nmetrics: {{port: {port}}}\nagent: {{mode: off}}\n"
            f"targets:\n  - {{name: api, url: '{web.url('/state')}', interval: 1s}}\n"
            f"  - {{name: www, url: '{web.url('/healthy')}', interval: 1s}}\n"
        )
        log_path = tmp_path / "daemon.log"
        env = {**os.environ, "MONITOR_DATABASE": own_server.url}
        with log_path.open("wb") as log:
            daemon = subprocess.Popen([sys.executable, "-m", "monitor", "run", "--config", str(config)], stdout=log, stderr=log, env=env)
        try:
            wait_for(lambda: Store(own_server.url).results.count_results("www") >= 2, timeout=30)
            paused = time.time()  # before the pause: a check that ends as the server stops is one of those unsaved
            own_server.pause()
            web.state = "error"  # api fails while nothing can be written: its incident waits too

            def degraded() -> dict[str, Any] | None:
                """/healthz once it says that six results or more wait for the database."""
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as reply:
                        health = json.loads(reply.read())
                except urllib.error.HTTPError as error:
                    health = json.loads(error.read())
                return dict(health) if health.get("unsaved_results", 0) >= 6 else None

            said = wait_for(degraded, timeout=60, every=0.2)
            outage = log_path.read_text()
            own_server.resume()
            resumed = time.time()
            wait_for(lambda: Store(own_server.url).incidents.open_incidents("api"), timeout=30)
        finally:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(30)
    store = Store(own_server.url)
    during = [r for t in ("api", "www") for r in store.results.recent_results(t, 1000) if paused < r.checked_at < resumed]
    assert len(during) >= said["unsaved_results"], "every check made while the server was down is stored"
    assert len(store.incidents.recent_incidents()) == 1 and store.incidents.recent_incidents()[0].target == "api"
    assert said["status"] == "degraded" and "Connection refused" in said["database"], said
    assert "Traceback" not in outage, outage[-3000:]
    assert len(outage.splitlines()) < 15, outage[-3000:]


def test_an_investigation_cut_short_by_a_lost_server_ends_interrupted_once_it_is_back(own_server: Any) -> None:
    """The server goes away between two steps: the run does not stay 'running' for ever; once the database
    answers, it ends as interrupted, and its incident says so."""
    from servers import Misbehaving

    from monitor.config import Config

    with Misbehaving() as web:
        config = Config.model_validate({"targets": [{"name": "api", "url": web.url("/500"), "timeout": 1}], "model": {"id": "builtin"}})
        store = Store(own_server.url)
        incident = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")
        investigator = wiring.investigator(config, store)
        with pytest.raises(store.errors):
            investigator.investigate("api", incident=incident, pattern="consecutive", on_step=lambda step: own_server.pause())
        own_server.resume()
        investigator.settle()  # what the daemon's housekeeping and its next investigation do
    run = known(store.runs.run(store.runs.last_run_id() or 0))
    assert run.state == "interrupted" and "database" in (run.error or ""), run
    assert known(store.incidents.incident(incident)).agent_state == "interrupted"
    assert f"agent run #{run.id} ended in interrupted" in (known(store.incidents.incident(incident)).notes or "")


def test_the_last_resolved_incident_is_the_last_closed_whatever_the_engine_does_with_nulls(location: str) -> None:
    """An imported resolved incident may have no ``closed_at``; PostgreSQL sorts NULL first in DESC order, SQLite
    last: the last resolved incident (what a restarted flap names) is the last one closed on both."""
    store = Store(location, clock=lambda: 500.0)
    IncidentWrites(store).load_dump(
        {"incidents": [{"id": 1, "target": "api", "pattern": "consecutive", "status": "resolved", "opened_at": 10.0, "closed_at": None}]}
    )
    closed = IncidentWrites(store).open_incident("api", "consecutive", "down")
    IncidentWrites(store).close_incident(closed)
    assert known(store.incidents.last_resolved_incident("api")).id == closed


@pytest.fixture
def pooler(postgres_server: str) -> Any:
    """A URL through PgBouncer in transaction mode (Debian's is 1.18: no prepared statements), to a database
    of this test's own (PgBouncer drops the URL's search_path)."""
    import os
    import pwd
    import secrets
    import shutil
    import subprocess
    import tempfile
    from urllib.parse import urlsplit

    import psycopg
    from servers import free_port, wait_for

    if shutil.which("pgbouncer") is None:
        pytest.skip("PgBouncer is not installed (Debian: apt-get install pgbouncer)")
    name, server = f"monitor_pool_{secrets.token_hex(3)}", urlsplit(postgres_server)
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        try:
            admin.execute(f"CREATE DATABASE {name}")
        except psycopg.errors.InsufficientPrivilege:
            pytest.skip("this PostgreSQL user may not create databases")
        port, where = free_port(), Path(tempfile.mkdtemp(prefix="monitor-pgbouncer-"))  # not under root's 0700 dirs
        (where / "users.txt").write_text(f'"{server.username or "postgres"}" ""\n')
        (where / "pgbouncer.ini").write_text(
            f"[databases]\n{name} = host={server.hostname} port={server.port} dbname={name}\n"
            f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\nauth_type = trust\n"
            f"auth_file = {where / 'users.txt'}\npool_mode = transaction\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
        )
        command = ["pgbouncer", "-q", str(where / "pgbouncer.ini")]
        if os.geteuid() == 0:  # PgBouncer refuses root
            os.chown(where, pwd.getpwnam("postgres").pw_uid, -1)
            command = ["runuser", "-u", "postgres", "--", *command]
        bouncer = subprocess.Popen(command)
        try:
            url = f"postgresql://{server.username or 'postgres'}@127.0.0.1:{port}/{name}"

            def accepts() -> bool:
                try:
                    psycopg.connect(url).close()
                    return True
                except psycopg.OperationalError:
                    return False

            wait_for(accepts, timeout=10, every=0.05)
            yield url
        finally:
            bouncer.terminate()
            bouncer.wait(10)
            shutil.rmtree(where, ignore_errors=True)
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
            admin.execute(f"DROP DATABASE {name}")


def test_behind_a_transaction_pooler_prepared_statements_lose_no_write(pooler: str) -> None:
    """Through PgBouncer in transaction mode, two daemons' prepared statements meet on one server session
    ("prepared statement _pg3_0 already exists"): that batch is kept as for a lost server, and from then on
    nothing is prepared, so every result is stored and no read fails."""
    stores = [Store(pooler, replica=0), Store(pooler, replica=1)]
    for i in range(20):
        for store in stores:
            batch = [result(f"t{store.replica}", True, float(i))]
            try:
                store.results.add_results(batch)
            except store.errors as exc:  # what the daemon does: keep it for the next cycle
                assert store.engine.passing(exc)
                store.results.add_results(batch)
            assert known(store.results.latest_result(f"t{store.replica}")).checked_at == float(i)
    assert [store.results.count_results(f"t{store.replica}") for store in stores] == [20, 20]


def test_the_urls_connect_timeout_is_the_one_that_counts() -> None:
    """A server that accepts and never answers: the URL's ``connect_timeout`` (as for psql) bounds the wait,
    not the store's 30 s busy timeout."""
    import socket
    import time

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        started = time.monotonic()
        said = _one_line_error(f"postgresql://monitor@127.0.0.1:{silent.getsockname()[1]}/monitor?connect_timeout=1")
    assert "timeout" in said and time.monotonic() - started < 15


def test_the_web_ui_says_the_database_is_unavailable_instead_of_a_server_error(own_server: Any, caplog: pytest.LogCaptureFixture) -> None:
    """While PostgreSQL is down, pages and the API answer 503 naming the database, with a line in the log,
    not a 500 and a traceback a request; once it is back they work again."""
    import logging

    from starlette.testclient import TestClient

    from monitor.config import Config
    from monitor.web.app import create_app

    store = Store(own_server.url)
    store.results.add_results([result("api", True, 1000.0)])
    client = TestClient(create_app(store, Config()), raise_server_exceptions=False, base_url="http://127.0.0.1")
    assert client.get("/api/v1/targets").status_code == 200
    own_server.pause()
    with caplog.at_level(logging.WARNING):
        pages = [client.get(path) for path in ("/", "/api/v1/targets", "/incidents", "/api/v1/incidents")]
    own_server.resume()
    assert [page.status_code for page in pages] == [503] * 4
    assert "database" in pages[0].text and "database" in pages[1].json()["error"]
    assert not any(record.exc_info for record in caplog.records)
    assert client.get("/api/v1/targets").status_code == 200


def test_a_ping_the_database_cannot_take_is_answered_503_so_the_job_pings_again(own_server: Any) -> None:
    """A ping is stored before it is answered: while PostgreSQL is down, the job hears 503 (not a connection
    closed without a word), so that curl --retry or the next run tries again."""
    import urllib.error
    import urllib.request

    from prometheus_client import CollectorRegistry

    from monitor.checks import heartbeat
    from monitor.checks.heartbeat import Heartbeats
    from monitor.config import Target
    from monitor.listener import MetricsServer
    from monitor.metrics import Metrics

    token = heartbeat.new_token()
    job = Target.model_validate({"name": "backup", "kind": "heartbeat", "heartbeat": {"token": token, "period": "1h", "grace": "10m"}})
    beats = Heartbeats(Store(own_server.url), [job])
    server = MetricsServer(Metrics(CollectorRegistry()), "127.0.0.1", 0, 60, pings=beats.record).start()
    try:
        own_server.pause()
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{server.url}/ping/{token}", timeout=30)
        own_server.resume()
        assert refused.value.code == 503 and b"database" in refused.value.read()
        with urllib.request.urlopen(f"{server.url}/ping/{token}", timeout=30) as reply:
            assert reply.status == 200
    finally:
        server.stop()


def test_a_read_only_command_on_a_schema_without_monitor_tables_creates_none(postgres_url: str) -> None:
    """As for a SQLite path that does not exist: ``monitor status`` pointed at the wrong database (or schema)
    says so, and does not create monitor's tables there."""
    import psycopg

    for command in (["status"], ["incidents", "list"], ["memory", "stats"]):
        out = CliRunner().invoke(main, [*command, "--db", postgres_url])
        assert out.exit_code == 3 and "no monitor tables" in out.output, out.output
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").fetchone() == (0,)
