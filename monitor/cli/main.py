"""The ``monitor`` command line: thin wrappers that parse, call, print and pick an exit code.

Exit codes follow the Nagios plugin convention: 0 OK, 1 WARNING, 2 CRITICAL,
3 UNKNOWN (bad usage or config). A command's module is imported only when that command runs (``monitor
--help`` imports them all to list them), and heavy modules (litellm, smolagents, rich) inside the commands that
need them, so ``monitor check`` starts fast: tests/test_cli_startup.py holds it to that.

One module per group of commands; a new command is a module in this package and one line in
:data:`COMMANDS`::

    check.py        monitor check
    configfile.py   monitor validate, monitor token
    run.py          monitor run (the daemon)
    incidents.py    monitor status, monitor incidents list|show|resolve
    agent.py        monitor investigate, monitor replay
    memory.py       monitor memory stats|export|import
    review.py       monitor review (and the smolagents forms of memory export)
    web.py          monitor web
    mcp.py          monitor mcp (the MCP server; the mcp extra)
    importing.py    monitor import gatus|uptime-kuma|blackbox
    evaluation.py   monitor eval
    demo.py         monitor demo
    common.py       what they share: options, loading the config, opening the database, exit codes
    report.py       plain-text views of runs, incidents and memory stats
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

import click

from monitor.cli.common import UNKNOWN, database_error, fail

# Each command by its name, as ``module:attribute``: imported when it runs.
COMMANDS: dict[str, str] = {
    "check": "monitor.cli.check:check",
    "token": "monitor.cli.configfile:token",
    "validate": "monitor.cli.configfile:validate",
    "status": "monitor.cli.incidents:status",
    "run": "monitor.cli.run:run",
    "investigate": "monitor.cli.agent:investigate",
    "replay": "monitor.cli.agent:replay",
    "web": "monitor.cli.web:web",
    "memory": "monitor.cli.memory:memory",
    "incidents": "monitor.cli.incidents:incidents",
    "eval": "monitor.cli.evaluation:eval_",
    "demo": "monitor.cli.demo:demo",
    "review": "monitor.cli.review:review",
    "mcp": "monitor.cli.mcp:mcp",
    "import": "monitor.cli.importing:import_",
}


def command(name: str) -> click.Command | None:
    """The command ``name``, its module imported now; None for no such command."""
    where = COMMANDS.get(name)
    if where is None:
        return None
    module, _, attribute = where.partition(":")
    found: click.Command = getattr(importlib.import_module(module), attribute)
    return found


class Group(click.Group):
    """The commands of :data:`COMMANDS`, each loaded when it is invoked or listed; exits with Nagios codes."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return command(cmd_name)

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
    """monitor: health checks (HTTP, TCP, TLS, DNS, ICMP, heartbeats) that remember and reason.

    \b
    monitor check https://example.com/health     one-shot check (Nagios exit codes)
    monitor run --config config/monitor.yaml     the daemon
    monitor demo --mode full                     see every feature on a fresh machine
    """


if __name__ == "__main__":
    main()
