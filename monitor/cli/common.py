"""What every command shares: the exit code for bad usage, loading the config, opening the database,
the ``--config`` and ``--db`` options, logging, and printing check results."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from dataclasses import fields
from typing import TYPE_CHECKING, Any, NoReturn, overload

import click

from monitor.core.results import Result

if TYPE_CHECKING:
    from monitor.config import Config
    from monitor.store import Store

UNKNOWN = 3
DEFAULT_DATABASE = "monitor.db"  # without --db, $MONITOR_DATABASE or a config file (database_of)
# what ``--json`` shows of each result (docs/cli.md): its fields, name and kind first, but those only /probe reports and
# a failure's excerpt
JSON_KEYS = ["name", "kind"] + [
    f.name for f in fields(Result) if f.name not in {"name", "kind", "excerpt", "location", "ip_version", "http_version", "content_length"}
]
ROW_ID = click.IntRange(1, 2**63 - 1)  # SQLite's integer range: larger ids are a usage error, not an OverflowError
_opened: list[str] = []  # the databases this process opened, named in database errors


class UsageError(click.UsageError):
    exit_code = UNKNOWN


def exit_now(code: int) -> NoReturn:
    """Exit with ``code`` at once. Past its last line, a process that loaded litellm spent a second (four on a
    slow machine) tearing its modules down; the caller has closed its database, and output and logs are flushed
    here. Where the output is captured (a test's runner), an ordinary exit."""
    if sys.stdout is not sys.__stdout__ or "litellm" not in sys.modules:
        sys.exit(code)
    import logging

    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
    os._exit(code)


def fail(message: str) -> NoReturn:
    """Print a clear error and exit UNKNOWN (3)."""
    click.echo(f"monitor: {message}", err=True)
    sys.exit(UNKNOWN)


def load_config(path: str | None, *, reading: bool = False) -> Config:
    """The config at ``path``; with ``reading`` (a command that only reads the database), one whose unset
    ``${VAR}`` are placeholders, if only they stood in the way and the database is none of them."""
    from monitor import config

    if path is None:
        return config.Config()
    try:
        return config.load(path)
    except config.ConfigError as exc:
        if not reading:
            fail(str(exc))
        found = _read_without(path)
        if found is None:
            fail(str(exc))
        return found


def _read_without(path: str) -> Config | None:
    """The config, each unset ``${VAR}`` read as a placeholder (said on stderr); None if it still is no config, or
    names its database by one."""
    from monitor import config
    from monitor.config.substitution import placeholder, unset_allowed

    with unset_allowed() as unset:
        try:
            found = config.load(path)
        except config.ConfigError:
            return None
    if not unset or any(placeholder(name) in (found.database or "") for name in unset):
        return None
    names = ", ".join(f"${{{name}}}" for name in sorted(unset))
    click.echo(f"monitor: {names} not set: read as a placeholder (this command only reads the database)", err=True)
    return found


@overload
def open_store(path: str, *, existing: bool = False, replica: int = 0) -> Store: ...
@overload
def open_store(path: str | None, *, existing: bool = False, replica: int = 0) -> Store | None: ...


def open_store(path: str | None, *, existing: bool = False, replica: int = 0) -> Store | None:
    """The store at ``path`` (a file or a postgresql:// URL); with ``existing``, a missing file is an error
    instead of a new database."""
    if path is None:
        return None
    from monitor import wiring
    from monitor.store import is_url
    from monitor.store.engines import describe, shown

    if existing and path != ":memory:" and not is_url(path) and not os.path.exists(path):
        fail(f"no database {os.path.abspath(path)} (check --db, or the config's database; monitor run creates it)")
    _opened.append(shown(path))
    try:
        return wiring.store(path, replica=replica, create=not (existing and is_url(path)))
    except LookupError:
        fail(
            f"no monitor database at {shown(path)}: its schema has no monitor tables (check --db, or the config's "
            "database and its search_path; monitor run creates them)"
        )
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
    elif "malformed" in text or "not a database" in text or "vtable constructor failed" in text:  # the last: FTS pages
        hint = "the file is damaged: restore a backup, or move it away to start a new one"
    else:
        hint = "see the SQLite message"
    return f"database {where}: {text} ({hint})"


def print_results(results: list[Result], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([{k: getattr(r, k) for k in JSON_KEYS} for r in results], indent=2))
        return
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        table = Table("target", "state", "status", "latency", "detail")
        colour = {"ok": "green", "warning": "yellow", "critical": "red", "unknown": "magenta"}
        for r in results:
            table.add_row(
                r.name,
                f"[{colour[r.severity]}]{r.severity.upper()}[/]",
                str(r.status_code or "-"),
                f"{r.latency_ms:.0f} ms",
                r.error and f"{r.error}: {r.detail}" or r.detail,
            )
        Console().print(table)
        return
    for r in results:
        reason = f"{r.error}: {r.detail}" if r.error else r.detail
        click.echo(f"{r.severity.upper():8} {r.name} {r.status_code or '-'} {r.latency_ms:.0f}ms {reason}")


def config_option(f: Any) -> Any:
    return click.option(
        "--config", "config_path", type=click.Path(dir_okay=False), envvar="MONITOR_CONFIG", help="Config file (or $MONITOR_CONFIG)."
    )(f)


def db_option(f: Any) -> Any:
    return click.option(
        "--db",
        envvar="MONITOR_DATABASE",
        help="SQLite file or postgresql:// URL (or $MONITOR_DATABASE; default: the config's database, else monitor.db).",
    )(f)


def open_database(config_path: str | None, db: str | None, *, existing: bool = False, reading: bool = False) -> tuple[Config, Store]:
    """The config and its store; ``existing`` for commands that write nothing new: they never create a database;
    ``reading`` for those that only read it (:func:`load_config`)."""
    cfg = load_config(config_path, reading=reading)
    return cfg, open_store(database_of(cfg, db), existing=existing, replica=cfg.replica_index or 0)


def database_of(cfg: Config | None, db: str | None) -> str:
    """The database every command uses: ``--db`` (or $MONITOR_DATABASE, relative to the working directory), else
    the config's (relative to the config file, :func:`monitor.config.database.located`), else ``monitor.db`` in
    the working directory; a file by its absolute path, so that every message names the file it means."""
    chosen = db or (cfg.database if cfg is not None else None) or DEFAULT_DATABASE
    return chosen if chosen == ":memory:" or "://" in chosen else os.path.abspath(chosen)


def setup_logging(verbose: bool = False) -> None:
    import logging

    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for noisy in ("httpx", "httpcore", "LiteLLM", "litellm", "apscheduler"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
