"""``monitor check``: URLs or configured targets, once, with a Nagios exit code.

A one-shot check's time is mostly its start-up, so this command loads only what its check needs: for URLs the
target models alone (:mod:`monitor.config.adhoc`), not a whole config's; the store only with ``--db`` or a
config's existing database; never the agent, the web or litellm (tests/test_cli_startup.py).
"""

from __future__ import annotations

import gc
import os
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from monitor.cli.common import UNKNOWN, UsageError, fail, load_config, open_store, print_results

if TYPE_CHECKING:
    from monitor.checks.heartbeat import Heartbeats
    from monitor.config import Config, Target
    from monitor.core.results import Result
    from monitor.store import Store

# The options that shape the targets of URLs (a config's targets say their own).
URL_OPTIONS = (
    click.option("--timeout", help="Whole-check timeout for URLs, e.g. 5s or 500ms."),
    click.option("--expect-status", help="Allowed status codes for URLs, e.g. 200,204 or 2xx."),
    click.option("--max-latency", help="Slower than this is a WARNING, e.g. 800ms."),
    click.option("--body-contains", help="The body must contain this text."),
    click.option("--method", type=click.Choice(["GET", "HEAD", "POST", "PUT", "OPTIONS"]), help="HTTP method for URLs."),
    click.option("--header", "headers", multiple=True, help="Request header for URLs, 'Name: value' (repeatable)."),
    click.option("--dns-server", help="The server dns: addresses ask, e.g. 1.1.1.1 or 127.0.0.1:5353 (default: the system's)."),
)


# More targets than this are checked with the garbage collector on (it is off while a check starts).
MANY = 100
# Those of the URL options for http(s):// URLs only, by parameter.
HTTP_ONLY = {"expect_status": "--expect-status", "body_contains": "--body-contains", "method": "--method", "headers": "--header"}


def url_options(command: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(URL_OPTIONS):
        command = option(command)
    return command


@click.command()
@click.argument("urls", nargs=-1)
@click.option("--config", "config_path", type=click.Path(dir_okay=False), help="Config file with targets.")
@click.option("--target", "names", multiple=True, help="Check only this target of the config (repeatable).")
@url_options
@click.option("--db", help="Record the results in this SQLite file.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, one object per target.")
def check(urls: tuple[str, ...], config_path: str | None, names: tuple[str, ...], db: str | None, as_json: bool, **given: Any) -> None:
    """Check URLs or configured targets once and exit with a Nagios code.

    \b
    monitor check https://example.com/health --max-latency 800ms
    monitor check tcp://db.internal:5432 tls://example.com:443 dns:example.com/MX
    monitor check --config config/monitor.yaml --target api --json
    Exit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
    """
    # httpcore imports trio when it is installed (0.1 s), and has no setting that stops it; a one-shot check never
    # runs on trio. A None in sys.modules is the import system's own "not installed", which httpcore catches
    # (tests/test_cli_startup.py fails when httpcore stops importing it, or stops taking the answer). The imports
    # allocate objects by the hundred thousand and hold on to them: the collector's passes over them were 7% of a
    # check's time (see run()).
    gc.disable()
    sys.modules.setdefault("trio", None)  # type: ignore[arg-type]
    without_pydantic_plugins()
    if bool(urls) == bool(config_path):
        raise UsageError("give either URLs or --config FILE")
    cfg, targets = configured(config_path, names) if config_path else (None, for_urls(urls, **given))
    database = db or daemons_database(cfg.database if cfg else None)
    store = open_store(database)
    heartbeats, unjudged = stored_pings(store, targets, db or (cfg.database if cfg else None))
    results = run(targets, cfg, heartbeats, skip=unjudged)
    if store is not None:
        record(store, cfg, results)
    unknown = [unknown_result(t, unjudged[t.name]) for t in (cfg.targets if cfg else targets) if t.name in unjudged]
    print_results(results + unknown, as_json)
    gc.freeze()  # the interpreter's teardown collects once more: frozen, the imports' objects are not gone through
    sys.exit(nagios_code(results, unknown))


def without_pydantic_plugins() -> None:
    """No pydantic plugins in this process, unless ``$PYDANTIC_DISABLE_PLUGINS`` names only some: a one-shot check's
    config models use none, and pydantic reads the entry points of every installed package to find them when it
    builds its first model (50 ms), after importing importlib.metadata (25 ms, done even when they are disabled).
    ``PYDANTIC_DISABLE_PLUGINS`` is pydantic's public setting and is set; no public means skips that import, so its
    private loader is answered with one that finds none (tests/test_cli_startup.py fails when pydantic no longer
    imports it, or no longer asks the loader by that name)."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] in ("__all__", "1", "true"):  # what pydantic reads as all disabled
        loader = types.ModuleType("pydantic.plugin._loader", "pydantic's plugin loader, finding none")
        loader.get_plugins = tuple  # type: ignore[attr-defined]  # get_plugins() -> ()
        sys.modules.setdefault(loader.__name__, loader)


def run(targets: list[Target], cfg: Config | None, heartbeats: Heartbeats | None, *, skip: dict[str, str]) -> list[Result]:
    """Each target checked but those in ``skip``: URLs at the engine's concurrency, a config's at its own."""
    from monitor.checks.engine import Checker

    if len(targets) > MANY:
        gc.enable()  # a large batch's garbage is collected as usual; a few targets are checked before it matters

    concurrency: dict[str, Any] = {"concurrency": cfg.concurrency} if cfg else {}
    # Large batches are split over processes (fork): this command is single-threaded.
    checker = Checker(**concurrency, processes=os.cpu_count() or 1, heartbeats=heartbeats)
    return checker.run([t for t in targets if t.name not in skip])


def record(store: Store, cfg: Config | None, results: list[Result]) -> None:
    """Results stored, as the daemon's are; incidents stay the daemon's. URLs' are recorded under a default config."""
    from monitor import wiring
    from monitor.config import Config

    recorder = wiring.incidents(cfg or Config(), store).recorder
    recorder.record(results, detect=False)
    recorder.flush()  # a database that stayed locked: the error says so
    store.close()


def nagios_code(results: list[Result], unknown: list[Result]) -> int:
    """A CRITICAL is known; a target that could not be judged outranks a WARNING."""
    from monitor.core.results import exit_code

    code = exit_code(results)
    return UNKNOWN if unknown and code != 2 else code


def configured(config_path: str, names: tuple[str, ...]) -> tuple[Config, list[Target]]:
    """The config file's targets, or those of them named with ``--target``."""
    from monitor.config import ConfigError

    cfg = load_config(config_path)
    try:
        targets = [cfg.target(n) for n in names] if names else cfg.targets
    except ConfigError as exc:
        fail(str(exc))
    if not targets:
        fail(f"{config_path}: no targets configured")
    return cfg, targets


def for_urls(urls: tuple[str, ...], *, dns_server: str | None, **options: Any) -> list[Target]:
    """The targets of the URLs given, with the options as their defaults; an http-only option on no http URL
    is a usage error, not an option silently ignored."""
    from monitor.config import ConfigError, adhoc, kind_of

    http_only = [flag for name, flag in HTTP_ONLY.items() if options[name]]
    kinds = {kind_of(url) or "http" for url in urls}
    if http_only and "http" not in kinds:
        raise UsageError(f"{http_only[0]} is for http(s):// URLs; these are {', '.join(sorted(kinds))} checks")
    try:
        return adhoc.targets(list(urls), dns={"server": dns_server} if dns_server else None, **defaults(options))
    except ConfigError as exc:
        fail(str(exc))


def defaults(options: dict[str, Any]) -> dict[str, Any]:
    """The URL options given (:data:`URL_OPTIONS` but ``--dns-server``) as target defaults, validated with the targets."""
    expect: dict[str, Any] = {}
    if options["expect_status"]:
        expect["status"] = [s.strip() for s in options["expect_status"].split(",")]
    if options["max_latency"]:
        expect["max_latency"] = options["max_latency"]
    if options["body_contains"] is not None:
        expect["body_contains"] = options["body_contains"]
    written: dict[str, Any] = {"expect": expect} if expect else {}
    if options["timeout"]:
        written["timeout"] = options["timeout"]
    if options["method"]:
        written["method"] = options["method"]
    if options["headers"]:
        written["headers"] = parse_headers(options["headers"])
    return written


def parse_headers(headers: tuple[str, ...]) -> dict[str, str]:
    parsed = {}
    for header in headers:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header {header!r} is not 'Name: value'")
        parsed[name.strip()] = value.strip()
    return parsed


def daemons_database(path: str | None) -> str | None:
    """The config's database if it is there: check records into the daemon's database, and never makes one."""
    if path is None or path == ":memory:" or "://" in path:  # a PostgreSQL URL: the daemon's schema or none
        return path
    return path if os.path.exists(path) else None


def stored_pings(store: Store | None, targets: list[Target], database: str | None) -> tuple[Heartbeats | None, dict[str, str]]:
    """The pings a running daemon stored, for heartbeat targets (None without any), and why each heartbeat
    target that no daemon watched in this database cannot be judged: UNKNOWN, not CRITICAL, nor "waiting for the
    first ping", a false OK."""
    beating = [t.name for t in targets if t.kind == "heartbeat"]
    if not beating:
        return None, {}
    if store is None:
        where = f"no daemon database at {database}" if database else "no daemon database (give --db or database:)"
        return None, dict.fromkeys(beating, f"judged on the pings a daemon stored: {where}")
    unwatched = [name for name in beating if store.results.heartbeat(name) is None]
    from monitor.checks.heartbeat import Heartbeats

    return Heartbeats(store, targets), dict.fromkeys(unwatched, f"no daemon has watched it in {store.path} (is it the daemon's database?)")


def unknown_result(target: Target, reason: str) -> Result:
    """What check prints for a target it could not judge (not stored: it is no result of the target's)."""
    import time

    from monitor.core.results import Result

    return Result(target.name, target.url, False, "unknown", None, 0.0, None, reason, time.time(), kind=target.kind)
