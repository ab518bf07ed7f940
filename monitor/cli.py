"""The ``monitor`` command line: thin wrappers that parse, call, print and pick an exit code.

Exit codes follow the Nagios plugin convention: 0 OK, 1 WARNING, 2 CRITICAL,
3 UNKNOWN (bad usage or config). Heavy modules (litellm, smolagents, rich) are
imported inside the commands that need them, so ``monitor check`` starts fast.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

# httpx imports its own CLI (click + rich) when both are installed; we never use it.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

import click  # noqa: E402

from monitor.config import Config, ConfigError  # noqa: E402

UNKNOWN = 3


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


def open_store(path: str | None) -> Any:
    if path is None:
        return None
    from monitor.store import Store

    try:
        return Store(path)
    except Exception as exc:  # sqlite3.Error, OSError: the message names the file
        fail(f"cannot open database {path}: {exc}")


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


@click.group(cls=Group)
@click.version_option(package_name="monitor-agent", prog_name="monitor")
def main() -> None:
    """monitor: HTTP health checks that remember and reason.

    \b
    monitor check https://example.com/health     one-shot check (Nagios exit codes)
    monitor run --config config/monitor.yaml     the daemon
    monitor demo --mode full                     see every feature on a fresh machine
    """


def print_results(results: list[Any], as_json: bool) -> None:
    if as_json:
        keys = ["name", "url", "ok", "severity", "status_code", "latency_ms", "error", "detail",
                "checked_at", "cert_expires_at"]
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
@click.option("--db", help="Record the results in this SQLite file.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array, one object per target.")
def check(urls: tuple[str, ...], config_path: str | None, names: tuple[str, ...], timeout: str | None,
          expect_status: str | None, max_latency: str | None, body_contains: str | None,
          db: str | None, as_json: bool) -> None:
    """Check URLs or configured targets once and exit with a Nagios code.

    \b
    monitor check https://example.com/health --max-latency 800ms
    monitor check --config config/monitor.yaml --target api --json
    Exit: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.
    """
    # httpcore imports trio when it is installed (0.1 s); a one-shot check never runs on trio.
    sys.modules.setdefault("trio", None)  # type: ignore[arg-type]
    from monitor import config as config_module
    from monitor.checks import Checker, exit_code

    if bool(urls) == bool(config_path):
        raise UsageError("give either URLs or --config FILE")
    try:
        if config_path:
            cfg = load_config(config_path)
            targets = [cfg.target(n) for n in names] if names else cfg.targets
            if not targets:
                fail(f"{config_path}: no targets configured")
        else:
            expect: dict[str, Any] = {}
            if expect_status:
                expect["status"] = [s.strip() for s in expect_status.split(",")]
            if max_latency:
                expect["max_latency"] = max_latency
            if body_contains is not None:
                expect["body_contains"] = body_contains
            overrides: dict[str, Any] = {"expect": expect} if expect else {}
            if timeout:
                overrides["timeout"] = timeout
            cfg = config_module.for_urls(list(urls), **overrides)
            targets = cfg.targets
    except ConfigError as exc:
        fail(str(exc))
    store = open_store(db or cfg.database)
    results = Checker(concurrency=cfg.concurrency).run(targets)
    if store is not None:
        store.add_results(results)
        store.close()
    print_results(results, as_json)
    sys.exit(exit_code(results))


if __name__ == "__main__":
    main()
