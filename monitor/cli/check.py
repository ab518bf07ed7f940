"""``monitor check``: URLs or configured targets, once, with a Nagios exit code."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from monitor.cli.common import UNKNOWN, UsageError, fail, load_config, open_store, print_results
from monitor.config import Config, ConfigError, Target


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


@click.command()
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
    from monitor.checks.engine import Checker

    if bool(urls) == bool(config_path):
        raise UsageError("give either URLs or --config FILE")
    try:
        if config_path:
            cfg, targets = configured(config_path, names)
        else:
            cfg = for_urls(urls, dns_server, timeout=timeout, expect_status=expect_status, max_latency=max_latency,
                           body_contains=body_contains, method=method, headers=headers)
            targets = cfg.targets
    except ConfigError as exc:
        fail(str(exc))
    store = open_store(db or daemons_database(cfg.database))
    heartbeats, unjudged = stored_pings(store, targets, db or cfg.database)
    targets = [t for t in targets if t.name not in unjudged]
    # Large batches are split over processes (fork): this command is single-threaded.
    results = Checker(concurrency=cfg.concurrency, processes=os.cpu_count() or 1, heartbeats=heartbeats).run(targets)
    if store is not None:
        record(store, cfg, results)
    unknown = [unknown_result(t, unjudged[t.name]) for t in cfg.targets if t.name in unjudged]
    print_results(results + unknown, as_json)
    sys.exit(nagios_code(results, unknown))


def record(store: Any, cfg: Config, results: list[Any]) -> None:
    """Results stored, as the daemon's are; incidents stay the daemon's."""
    from monitor.incidents.recorder import Recorder
    from monitor.incidents.tracker import Tracker

    recorder = Recorder(store, Tracker(store, cfg.detectors))
    recorder.record(results, detect=False)
    recorder.flush()  # a database that stayed locked: the error says so
    store.close()


def nagios_code(results: list[Any], unknown: list[Any]) -> int:
    """A CRITICAL is known; a target that could not be judged outranks a WARNING."""
    from monitor.checks.engine import exit_code

    code = exit_code(results)
    return UNKNOWN if unknown and code != 2 else code


def configured(config_path: str, names: tuple[str, ...]) -> tuple[Config, list[Target]]:
    """The config file's targets, or those of them named with ``--target``."""
    cfg = load_config(config_path)
    targets = [cfg.target(n) for n in names] if names else cfg.targets
    if not targets:
        fail(f"{config_path}: no targets configured")
    return cfg, targets


def for_urls(urls: tuple[str, ...], dns_server: str | None, *, timeout: str | None, expect_status: str | None,
             max_latency: str | None, body_contains: str | None, method: str | None,
             headers: tuple[str, ...]) -> Config:
    """A config for the URLs given, with the options as their defaults; an http-only option on no http URL
    is a usage error, not an option silently ignored."""
    from monitor import config as config_module

    http_only = [flag for flag, given in (("--expect-status", expect_status), ("--body-contains", body_contains),
                                          ("--method", method), ("--header", headers)) if given]
    kinds = {config_module.kind_of(url) or "http" for url in urls}
    if http_only and "http" not in kinds:
        raise UsageError(f"{http_only[0]} is for http(s):// URLs; these are {', '.join(sorted(kinds))} checks")
    options = url_options(timeout, expect_status, max_latency, body_contains, method, headers)
    return config_module.for_urls(list(urls), dns={"server": dns_server} if dns_server else None, **options)


def daemons_database(path: str | None) -> str | None:
    """The config's database if it is there: check records into the daemon's database, and never makes one."""
    if path is None or path == ":memory:" or "://" in path:  # a PostgreSQL URL: the daemon's schema or none
        return path
    return path if os.path.exists(path) else None


def stored_pings(store: Any, targets: list[Target], database: str | None) -> tuple[Any, dict[str, str]]:
    """The pings a running daemon stored, for heartbeat targets (None without any), and why each heartbeat
    target that no daemon watched in this database cannot be judged: UNKNOWN, not CRITICAL, nor "waiting for the
    first ping", a false OK."""
    beating = [t.name for t in targets if t.kind == "heartbeat"]
    if not beating:
        return None, {}
    if store is None:
        where = f"no daemon database at {database}" if database else "no daemon database (give --db or database:)"
        return None, dict.fromkeys(beating, f"judged on the pings a daemon stored: {where}")
    unwatched = {name: f"no daemon has watched it in {store.path} (is it the daemon's database?)"
                 for name in beating if store.heartbeat(name) is None}
    from monitor.checks.heartbeat import Heartbeats

    return Heartbeats(store, targets), unwatched


def unknown_result(target: Target, reason: str) -> Any:
    """What check prints for a target it could not judge (not stored: it is no result of the target's)."""
    import time

    from monitor.core.results import Result

    return Result(target.name, target.url, False, "unknown", None, 0.0, None, reason, time.time(), kind=target.kind)
