"""The ``monitor`` command line: thin wrappers that parse, call, print and pick an exit code.

Exit codes follow the Nagios plugin convention: 0 OK, 1 WARNING, 2 CRITICAL,
3 UNKNOWN (bad usage or config). Heavy modules (litellm, smolagents, rich) are
imported inside the commands that need them, so ``monitor check`` starts fast.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from typing import Any, NoReturn

# httpx imports its own CLI (click + rich) when both are installed; we never use it.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import click  # noqa: E402

from monitor.config import Config, ConfigError  # noqa: E402

UNKNOWN = 3
ROW_ID = click.IntRange(1, 2**63 - 1)  # SQLite's integer range: larger ids are a usage error, not an OverflowError
_opened: list[str] = []  # the databases this process opened, named in database errors


class UsageError(click.UsageError):
    exit_code = UNKNOWN


def fail(message: str) -> NoReturn:
    """Print a clear error and exit UNKNOWN (3)."""
    click.echo(f"monitor: {message}", err=True)
    sys.exit(UNKNOWN)


def load_config(path: str | None) -> Config:
    from monitor import config

    if path is None:
        return Config()
    try:
        return config.load(path)
    except ConfigError as exc:
        fail(str(exc))


def open_store(path: str | None, *, existing: bool = False, replica: int = 0) -> Any:
    """The store at ``path`` (a file or a postgresql:// URL); with ``existing``, a missing file is an error
    instead of a new database."""
    if path is None:
        return None
    from monitor.store import Store, is_url
    from monitor.store.engines import describe, shown

    if existing and path != ":memory:" and not is_url(path) and not os.path.exists(path):
        fail(f"no database {path} (check --db, or the config's database)")
    _opened.append(shown(path))
    try:
        return Store(path, replica=replica, create=not (existing and is_url(path)))
    except LookupError:
        fail(f"no monitor database at {shown(path)}: its schema has no monitor tables (check --db, or the config's "
             "database and its search_path; monitor run creates them)")
    except Exception as exc:  # sqlite3.Error, psycopg.Error, OSError: the message names the database
        fail(f"cannot open database {shown(path)}: {describe(exc, path)}")


def database_error(exc: BaseException) -> str:
    """A database failure met after opening, as one line naming the database and what to do."""
    from monitor.store import BUSY_TIMEOUT
    from monitor.store.engines import describe

    where = _opened[-1] if _opened else "the database"
    text = str(exc).strip()
    if not isinstance(exc, sqlite3.Error):
        return f"database {where}: {describe(exc)}"
    if "locked" in text:
        hint = f"another process held its write lock longer than {BUSY_TIMEOUT:g} s; try again"
    elif "readonly" in text or "read-only" in text:
        hint = "this user cannot write the file or its directory"
    elif "malformed" in text or "not a database" in text:
        hint = "the file is damaged: restore a backup, or move it away to start a new one"
    else:
        hint = "see the SQLite message"
    return f"database {where}: {text} ({hint})"


class Group(click.Group):
    def main(self, *args: Any, **kwargs: Any) -> Any:
        try:
            kwargs["standalone_mode"] = False
            return super().main(*args, **kwargs)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted.", err=True)
            sys.exit(130)
        except click.ClickException as exc:
            exc.show()
            sys.exit(UNKNOWN)
        except Exception as exc:
            from monitor.store import database_errors

            if not isinstance(exc, database_errors()):
                raise
            fail(database_error(exc))


@click.group(cls=Group)
@click.version_option(package_name="monitor-agent", prog_name="monitor")
def main() -> None:
    """monitor: HTTP health checks that remember and reason.

    \b
    monitor check https://example.com/health     one-shot check (Nagios exit codes)
    monitor run --config config/monitor.yaml     the daemon
    monitor demo --mode full                     see every feature on a fresh machine
    """


def url_options(timeout: str | None, expect_status: str | None, max_latency: str | None,
                body_contains: str | None, method: str | None, headers: tuple[str, ...]) -> dict[str, Any]:
    """``monitor check URL`` options as target defaults (validated by config.for_urls)."""
    expect: dict[str, Any] = {}
    if expect_status:
        expect["status"] = [s.strip() for s in expect_status.split(",")]
    if max_latency:
        expect["max_latency"] = max_latency
    if body_contains is not None:
        expect["body_contains"] = body_contains
    options: dict[str, Any] = {"expect": expect} if expect else {}
    if timeout:
        options["timeout"] = timeout
    if method:
        options["method"] = method
    if headers:
        options["headers"] = parse_headers(headers)
    return options


def parse_headers(headers: tuple[str, ...]) -> dict[str, str]:
    parsed = {}
    for header in headers:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header {header!r} is not 'Name: value'")
        parsed[name.strip()] = value.strip()
    return parsed


def print_results(results: list[Any], as_json: bool) -> None:
    if as_json:
        keys = ["name", "kind", "url", "ok", "severity", "status_code", "latency_ms", "error", "detail",
                "checked_at", "cert_expires_at", "phases"]
        click.echo(json.dumps([{k: getattr(r, k) for k in keys} for r in results], indent=2))
        return
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table("target", "state", "status", "latency", "detail")
        colour = {"ok": "green", "warning": "yellow", "critical": "red"}
        for r in results:
            table.add_row(r.name, f"[{colour[r.severity]}]{r.severity.upper()}[/]",
                          str(r.status_code or "-"), f"{r.latency_ms:.0f} ms", r.error and f"{r.error}: {r.detail}" or r.detail)
        Console().print(table)
        return
    for r in results:
        reason = f"{r.error}: {r.detail}" if r.error else r.detail
        click.echo(f"{r.severity.upper():8} {r.name} {r.status_code or '-'} {r.latency_ms:.0f}ms {reason}")


@main.command()
@click.argument("urls", nargs=-1)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config file with targets.")
@click.option("--target", "names", multiple=True, help="Check only this target of the config (repeatable).")
@click.option("--timeout", help="Whole-check timeout for URLs, e.g. 5s or 500ms.")
@click.option("--expect-status", help="Allowed status codes for URLs, e.g. 200,204 or 2xx.")
@click.option("--max-latency", help="Slower than this is a WARNING, e.g. 800ms.")
@click.option("--body-contains", help="The body must contain this text.")
@click.option("--method", type=click.Choice(["GET", "HEAD", "POST", "PUT", "OPTIONS"]), help="HTTP method for URLs.")
@click.option("--header", "headers", multiple=True, help="Request header for URLs, 'Name: value' (repeatable).")
@click.option("--dns-server", help="The server dns: addresses ask, e.g. 1.1.1.1 or 127.0.0.1:5353 (default: the system's).")
@click.option("--db", help="Record the results in this SQLite file.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, one object per target.")
def check(urls: tuple[str, ...], config_path: str | None, names: tuple[str, ...], timeout: str | None,
          expect_status: str | None, max_latency: str | None, body_contains: str | None, method: str | None,
          headers: tuple[str, ...], dns_server: str | None, db: str | None, as_json: bool) -> None:
    """Check URLs or configured targets once and exit with a Nagios code.

    \b
    monitor check https://example.com/health --max-latency 800ms
    monitor check tcp://db.internal:5432 tls://example.com:443 dns:example.com/MX
    monitor check --config config/monitor.yaml --target api --json
    Exit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
    """
    # httpcore imports trio when it is installed (0.1 s); a one-shot check never runs on trio.
    sys.modules.setdefault("trio", None)  # type: ignore[arg-type]
    from monitor import config as config_module
    from monitor.checks.engine import Checker, exit_code

    if bool(urls) == bool(config_path):
        raise UsageError("give either URLs or --config FILE")
    try:
        if config_path:
            cfg = load_config(config_path)
            targets = [cfg.target(n) for n in names] if names else cfg.targets
            if not targets:
                fail(f"{config_path}: no targets configured")
        else:
            http_only = [flag for flag, given in (("--expect-status", expect_status), ("--body-contains", body_contains),
                                                  ("--method", method), ("--header", headers)) if given]
            kinds = {config_module.kind_of(url) or "http" for url in urls}
            if http_only and "http" not in kinds:  # ignored by every URL given: say so rather than pass unchecked
                raise UsageError(f"{http_only[0]} is for http(s):// URLs; these are {', '.join(sorted(kinds))} checks")
            options = url_options(timeout, expect_status, max_latency, body_contains, method, headers)
            cfg = config_module.for_urls(list(urls), dns={"server": dns_server} if dns_server else None, **options)
            targets = cfg.targets
    except ConfigError as exc:
        fail(str(exc))
    store = open_store(db or cfg.database)
    heartbeats = None
    beating = [t.name for t in targets if t.kind == "heartbeat"]
    if store is None and beating:  # without the daemon's pings there is nothing to judge: UNKNOWN, not CRITICAL
        fail(f"heartbeat target {beating[0]} is judged on the pings the daemon stored: give --db or database:")
    unwatched = [name for name in beating if store.heartbeat(name) is None]
    if unwatched:  # a wrong --db, or a daemon that never ran: "waiting for the first ping" would be a false OK
        fail(f"no daemon has watched heartbeat target {unwatched[0]} in {store.path} (is it the daemon's database?)")
    if store is not None and beating:
        from monitor.checks.heartbeat import Heartbeats

        heartbeats = Heartbeats(store, targets)  # the pings a running daemon stored
    # Large batches are split over processes (fork): this command is single-threaded.
    results = Checker(concurrency=cfg.concurrency, processes=os.cpu_count() or 1, heartbeats=heartbeats).run(targets)
    if store is not None:
        store.add_results(results)
        store.close()
    print_results(results, as_json)
    sys.exit(exit_code(results))


@main.command()
def token() -> None:
    """Print a new random token for a heartbeat target (256 bits, URL-safe).

    \b
    monitor token          # then, in the config:
      - name: nightly-backup
        kind: heartbeat
        heartbeat: {token: ${BACKUP_PING_TOKEN}, period: 1d, grace: 1h}
    and the job ends with: curl -fsS -m 10 http://monitor:9108/ping/$BACKUP_PING_TOKEN
    """
    from monitor.checks.heartbeat import new_token

    click.echo(new_token())


# -- shared options for commands that work on the database ---------------------------------------


def config_option(f: Any) -> Any:
    return click.option("--config", "config_path", type=click.Path(dir_okay=False),
                        envvar="MONITOR_CONFIG", help="Config file (or $MONITOR_CONFIG).")(f)


def db_option(f: Any) -> Any:
    return click.option("--db", envvar="MONITOR_DATABASE",
                        help="SQLite file or postgresql:// URL (or $MONITOR_DATABASE; default: the config's database, "
                             "else monitor.db).")(f)


def open_database(config_path: str | None, db: str | None, *, existing: bool = False) -> tuple[Config, Any]:
    """The config and its store; ``existing`` for commands that only read: they never create a database."""
    cfg = load_config(config_path)
    return cfg, open_store(db or cfg.database or "monitor.db", existing=existing, replica=cfg.replica_index or 0)


def setup_logging(verbose: bool = False) -> None:
    import logging

    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("httpx", "httpcore", "LiteLLM", "litellm", "apscheduler"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


@main.command()
@click.argument("config_path", type=click.Path(dir_okay=False))
def validate(config_path: str) -> None:
    """Validate a config file without checking anything (exit 0, or 3 with the problems).

    \b
    monitor validate config/monitor.yaml
    """
    from monitor.store.engines import check_url, is_url, shown

    cfg = load_config(config_path)
    if cfg.database and is_url(cfg.database):
        try:
            check_url(cfg.database)
        except ValueError as exc:
            fail(f"{config_path}: database {shown(cfg.database)}: {exc}")
    click.echo(f"{config_path}: OK, {len(cfg.targets)} targets, database {shown(cfg.database) if cfg.database else 'none'}, "
               f"agent {cfg.agent.mode} on model {cfg.model.id}")
    if not cfg.targets:
        click.echo(f"{config_path}: no targets: monitor run needs at least one")


@main.command()
@config_option
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def status(config_path: str | None, db: str | None, as_json: bool) -> None:
    """The last result of every target and the open incidents, from the database.

    \b
    monitor status --config config/monitor.yaml
    Exit code: Nagios, from the last results (3 when nothing was recorded yet).
    """
    _, store = open_database(config_path, db, existing=True)
    latest, open_incidents = store.latest_results(), store.open_incidents()
    if as_json:
        click.echo(json.dumps({"targets": latest, "open_incidents": open_incidents}, indent=2))
    else:
        from monitor.report import print_incidents, when

        for row in latest:
            reason = f"{row['error']}: {row['detail']}" if row["error"] else row["detail"]
            click.echo(f"{(row['severity'] or '').upper():8} {row['target']:<20} {when(row['checked_at'])} "
                       f"{row['latency_ms'] or 0:.0f}ms {reason}")
        click.echo(f"\nopen incidents: {len(open_incidents)}")
        if open_incidents:
            print_incidents(open_incidents)
    severities = {row["severity"] for row in latest}
    sys.exit(3 if not latest else 2 if "critical" in severities else 1 if "warning" in severities else 0)


# -- the daemon ----------------------------------------------------------------------------------


@main.command()
@config_option
@db_option
@click.option("--once", is_flag=True, help="Run one cycle over every target and exit (Nagios exit code).")
@click.option("--verbose", is_flag=True, help="Debug logging.")
@click.option("--metrics-listen", envvar="MONITOR_METRICS_LISTEN", metavar="HOST:PORT",
              help="Serve /metrics and /healthz here, whatever the config says ($MONITOR_METRICS_LISTEN).")
def run(config_path: str | None, db: str | None, once: bool, verbose: bool, metrics_listen: str | None) -> None:
    """Run the monitoring daemon: scheduled checks, incidents, the agent, alerts, /metrics.

    \b
    monitor run --config config/monitor.yaml
    monitor run --config config/monitor.yaml --once
    monitor run --config config/monitor.yaml --metrics-listen 0.0.0.0:9108
    Stops cleanly on SIGTERM or SIGINT; memory and open incidents come back on the next start.
    """
    setup_logging(verbose)
    if config_path is None:
        raise UsageError("monitor run needs --config FILE (or $MONITOR_CONFIG)")
    cfg, store = open_database(config_path, db)
    if not cfg.targets:
        fail(f"{config_path}: no targets configured")
    if metrics_listen:
        try:
            cfg.metrics.listening_on(metrics_listen)
        except ConfigError as exc:
            fail(str(exc))
    from monitor.daemon import Daemon

    daemon = Daemon(cfg, store=store, config_path=config_path, listen=metrics_listen)
    if once:
        from monitor.checks.engine import exit_code

        results = daemon.run_once()
        print_results(results, as_json=False)
        sys.exit(exit_code(results))
    if not store.claim_replica():
        fail(f"another daemon already runs as replica {store.replica} of {store.path}: the two would check the same "
             f"targets twice (give each replica its own replica_index, or stop the other)")
    try:
        daemon.run_forever()
    except OSError as exc:  # the metrics port is taken, most often
        fail(f"cannot start: {exc}")


# -- the agent -----------------------------------------------------------------------------------


@main.command()
@click.argument("targets", nargs=-1, required=True)
@config_option
@db_option
@click.option("--always", is_flag=True, help="Investigate even targets that pass.")
@click.option("--model", "model_id", help="Override model.id: auto, builtin or a litellm id.")
@click.option("--api-base", help="Override model.api_base, e.g. http://127.0.0.1:8090/v1.")
def investigate(targets: tuple[str, ...], config_path: str | None, db: str | None, always: bool,
                model_id: str | None, api_base: str | None) -> None:
    """Check targets now and let the agent investigate the failing ones.

    \b
    monitor investigate --config config/monitor.yaml api
    monitor investigate --always --model builtin http://127.0.0.1:8080/health
    Prints each diagnosis and its run id (see `monitor replay RUN_ID`). Exit codes as `monitor check`.
    """
    from monitor import config as config_module

    setup_logging()
    cfg, store = open_database(config_path, db)
    try:
        cfg, chosen = config_module.with_urls(cfg, list(targets))
        if model_id:
            cfg.model.id = model_id
        if api_base:
            cfg.model.api_base = api_base  # assignment marks it as named, like the config file would
    except ConfigError as exc:
        fail(str(exc))
    from monitor.checks.engine import Checker, exit_code
    from monitor.daemon import investigate_results
    from monitor.report import Progress

    results = Checker(concurrency=cfg.concurrency).run(chosen)
    store.add_results(results)
    print_results(results, as_json=False)
    progress = Progress()
    for outcome, target in investigate_results(cfg, store, results, always=always, on_step=progress.step):
        click.echo(f"{target}: agent run #{outcome.run_id} ended in {outcome.state} after {outcome.steps} steps, "
                   f"{progress.elapsed():.1f}s")
        if outcome.diagnosis is not None:
            click.echo(f"diagnosis: {outcome.diagnosis}")
        else:
            reason = outcome.error or "the model never called record_diagnosis"
            click.echo(f"no diagnosis recorded ({reason}); the detection stands")
        progress.reset()
    store.close()
    sys.exit(exit_code(results))


@main.command()
@click.argument("run_id", type=ROW_ID, required=False)
@config_option
@db_option
@click.option("--detailed", is_flag=True, help="Show whole observations, model output and errors.")
def replay(run_id: int | None, config_path: str | None, db: str | None, detailed: bool) -> None:
    """Show a past agent run from the database: task, tool calls, observations, outcome.

    \b
    monitor replay            the latest run
    monitor replay 12 --detailed
    """
    from monitor.report import print_run

    _, store = open_database(config_path, db, existing=True)
    run_id = run_id or store.last_run_id()
    run = store.run(run_id) if run_id else None
    if run is None:
        fail(f"no agent run {'#' + str(run_id) if run_id else 'recorded yet'} in {store.path}")
    print_run(run, store.steps(run["id"]), detailed=detailed)


@main.command()
@config_option
@db_option
@click.option("--listen", help="host:port to serve on (default: the config's web.listen, 127.0.0.1:9110).")
def web(config_path: str | None, db: str | None, listen: str | None) -> None:
    """Serve the web UI and JSON API from the database alone, checking nothing.

    \b
    monitor web --config config/monitor.yaml
    monitor web --db monitor.db --listen 127.0.0.1:9200
    For another host or after a crash: it only reads. Stops on SIGINT or SIGTERM.
    """
    from monitor.config import WebConfig

    cfg, store = open_database(config_path, db, existing=True)
    try:
        listen_on = WebConfig(listen=listen) if listen else cfg.web
    except ValueError as exc:
        raise UsageError(f"--listen: {exc}") from None
    from monitor.web.app import create_app, serve

    app = create_app(store, cfg, refresh=cfg.web.refresh)
    try:
        serve(app, listen_on.host, listen_on.port, ready=lambda url: click.echo(f"monitor web: serving {url}/", err=True))
    except OSError as exc:  # the port is taken, most often
        fail(f"cannot listen on {listen_on.listen}: {exc}")
    finally:
        store.close()


@main.group()
def memory() -> None:
    """Inspect, export and import the agent's memory."""


@memory.command("stats")
@config_option
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def memory_stats(config_path: str | None, db: str | None, as_json: bool) -> None:
    """Steps by type, bytes, estimated tokens, tool success rate and time.

    \b
    monitor memory stats --config config/monitor.yaml
    """
    from monitor.memory import working as memory_module
    from monitor.report import print_stats

    _, store = open_database(config_path, db, existing=True)
    stats = memory_module.report(store)
    if as_json:
        click.echo(json.dumps(stats, indent=2))
    else:
        print_stats(stats)


@memory.command("export")
@click.argument("path", type=click.Path(dir_okay=False, writable=True))
@config_option
@db_option
@click.option("--format", "form", type=click.Choice(["dump", "full", "succinct", "messages"]), default="dump",
              help="dump: everything, for backup; full, succinct, messages: agent runs as smolagents gives them "
                   "to another agent (get_full_steps, get_succinct_steps, write_memory_to_messages).")
@click.option("--run", "run_id", type=ROW_ID, help="Only this agent run (full, succinct, messages).")
@click.option("--since", help="Only agent runs started this long ago or later, e.g. 7d (full, succinct, messages).")
def memory_export(path: str, config_path: str | None, db: str | None, form: str, run_id: int | None,
                  since: str | None) -> None:
    """Write incidents, agent runs, steps and working memory to a JSON file.

    \b
    monitor memory export backup.json --db monitor.db
    monitor memory export week.json --format messages --since 7d
    """
    from monitor.cli.review import export_runs
    from monitor.memory import working as memory_module

    cfg, store = open_database(config_path, db, existing=True)
    try:
        counts = memory_module.export(store, path) if form == "dump" else export_runs(
            cfg, store, path, form, run_id=run_id, since=since)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
    click.echo(f"exported {', '.join(f'{n} {t}' for t, n in counts.items())} to {path}")


@memory.command("import")
@click.argument("path", type=click.Path(dir_okay=False))
@config_option
@db_option
def memory_import(path: str, config_path: str | None, db: str | None) -> None:
    """Add the incidents, runs and working memory of a JSON export to the database.

    Every entry is checked first: a bad one is reported with its place in the file, and nothing
    is written. Imported working-memory steps go after the current ones, then the oldest fold
    into the summary (memory.keep_steps); importing a file twice adds nothing.

    \b
    monitor memory import backup.json --db monitor.db
    """
    from monitor.memory import transcripts

    cfg, store = open_database(config_path, db)
    try:
        counts = transcripts.import_(store, path, cfg.memory)
    except ValueError as exc:
        fail(str(exc))
    click.echo(f"imported {', '.join(f'{n} {t}' for t, n in counts.items())} from {path}")


@main.group()
def incidents() -> None:
    """List, show and resolve incidents."""


@incidents.command("list")
@click.option("--status", type=click.Choice(["open", "resolved", "all"]), default="all", show_default=True)
@click.option("--limit", type=int, default=50, show_default=True)
@config_option
@db_option
def incidents_list(status: str, limit: int, config_path: str | None, db: str | None) -> None:
    """List incidents, newest first.

    \b
    monitor incidents list --status open
    """
    from monitor.report import print_incidents

    _, store = open_database(config_path, db, existing=True)
    print_incidents(store.incidents(None if status == "all" else status, limit))


@incidents.command("show")
@click.argument("incident_id", type=ROW_ID)
@config_option
@db_option
def incidents_show(incident_id: int, config_path: str | None, db: str | None) -> None:
    """Show one incident in full, with its agent runs.

    \b
    monitor incidents show 12
    """
    from monitor.report import print_incident

    _, store = open_database(config_path, db, existing=True)
    incident = store.incident(incident_id)
    if incident is None:
        fail(f"no incident #{incident_id} in {store.path}")
    print_incident(incident, [r for r in store.runs(1000) if r["incident_id"] == incident_id])


@incidents.command("resolve")
@click.argument("incident_id", type=ROW_ID)
@click.option("--note", required=True, help="How it was fixed: later investigations recall this.")
@config_option
@db_option
def incidents_resolve(incident_id: int, note: str, config_path: str | None, db: str | None) -> None:
    """Resolve an incident with a note of what fixed it.

    An incident that already resolved itself keeps the time it closed; the note is added.

    \b
    monitor incidents resolve 12 --note "rolled back deploy 4711"
    """
    from monitor.core.urls import redact_text

    _, store = open_database(config_path, db, existing=True)
    incident = store.incident(incident_id)
    if incident is None:
        fail(f"no incident #{incident_id} in {store.path}")
    elif incident["status"] != "open":
        store.update_incident(incident_id, resolution=redact_text(note))
        click.echo(f"incident #{incident_id} was already resolved; its note is now: {note}")
        return
    store.close_incident(incident_id, resolution=note)
    click.echo(f"incident #{incident_id} resolved: {note}")


# -- the diagnosis eval --------------------------------------------------------------------------


def default_scenarios() -> str:
    """The repository's eval/scenarios next to the package, else ./eval/scenarios."""
    from pathlib import Path

    import monitor

    beside = Path(monitor.__file__).parents[1] / "eval" / "scenarios"
    return str(beside if beside.is_dir() else Path("eval") / "scenarios")


@main.command("eval")
@click.option("--model", "models", multiple=True, default=("builtin",), show_default=True,
              help="Model to score: builtin or a litellm id (repeatable).")
@click.option("--api-base", help="Model server for litellm ids, e.g. http://127.0.0.1:8090/v1.")
@click.option("--scenarios", "scenarios_dir", type=click.Path(file_okay=False),
              help="Directory of scenario folders (default: the repository's eval/scenarios).")
@click.option("--tag", "tags", multiple=True, help="Only scenarios with this tag (repeatable).")
@click.option("--only", multiple=True, help="Only this scenario (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON instead of tables.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the JSON results to this file.")
@click.option("--baseline/--no-baseline", default=True, show_default=True,
              help="Add the detector-only row: what the alerts alone say, with no model.")
def eval_(models: tuple[str, ...], api_base: str | None, scenarios_dir: str | None, tags: tuple[str, ...],
          only: tuple[str, ...], as_json: bool, out: str | None, baseline: bool) -> None:
    """Score the agent's diagnoses on scripted incidents (eval/scenarios), per model and per tag.

    \b
    monitor eval
    monitor eval --tag memory --only http-500-known-fix --json
    monitor eval --model builtin --model openai/qwen2.5-coder:0.5b --api-base http://127.0.0.1:8090/v1 --out eval.json
    Each scenario runs for real on loopback; a progress line per run goes to stderr.
    """
    from monitor.eval import harness as evaluation
    from monitor.eval.scenario import ScenarioError, load_all

    try:
        scenarios = load_all(scenarios_dir or default_scenarios(), tags=tags, only=only)
    except ScenarioError as exc:
        fail(str(exc))
    data = evaluation.evaluate(scenarios, models, api_base=api_base, baseline=baseline,
                               progress=lambda model, v: click.echo(evaluation.progress_line(model, v), err=True))
    if out:
        try:
            with open(out, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2)
        except OSError as exc:
            fail(f"cannot write {out}: {exc.strerror or exc}")
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        evaluation.render(data)


@main.command()
@click.option("--mode", type=click.Choice(["replay", "inject", "step_by_step", "full"]), default="full",
              show_default=True)
@click.option("--model", "model_id", default="auto", show_default=True,
              help="auto (llama3.2 on Ollama if present, else builtin), builtin, or a litellm id.")
@click.option("--api-base", help="The model server, e.g. http://127.0.0.1:8090/v1 for llama.cpp's server.")
@click.option("--keep", type=click.Path(file_okay=False), help="Keep the demo database in this directory.")
def demo(mode: str, model_id: str, api_base: str | None, keep: str | None) -> None:
    """See every memory feature work, on a fresh machine, in seconds.

    \b
    monitor demo --mode full
    monitor demo --mode step_by_step --keep ./demo   then: monitor replay --db demo/demo.db
    monitor demo --model openai/qwen2.5-coder:0.5b --api-base http://127.0.0.1:8090/v1
    """
    import logging

    logging.basicConfig(level=logging.ERROR)
    from monitor.demo import modes

    modes.run(mode, workdir=keep, model_id=model_id, api_base=api_base)


from monitor.cli.review import review  # noqa: E402  (it uses the options above)

main.add_command(review)

if __name__ == "__main__":
    main()
