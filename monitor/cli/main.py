"""The ``monitor`` command line: thin wrappers that parse, call, print and pick an exit code.

Exit codes follow the Nagios plugin convention: 0 OK, 1 WARNING, 2 CRITICAL,
3 UNKNOWN (bad usage or config). Heavy modules (litellm, smolagents, rich) are
imported inside the commands that need them, so ``monitor check`` starts fast.

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
    evaluation.py   monitor eval
    demo.py         monitor demo
    common.py       what they share: options, loading the config, opening the database, exit codes
"""

from __future__ import annotations

import sys
from typing import Any

import click

from monitor.cli import agent, check, configfile, demo, evaluation, incidents, mcp, memory, review, run, web
from monitor.cli.common import UNKNOWN, database_error, fail

COMMANDS: tuple[click.Command, ...] = (
    check.check,
    configfile.token,
    configfile.validate,
    incidents.status,
    run.run,
    agent.investigate,
    agent.replay,
    web.web,
    memory.memory,
    incidents.incidents,
    evaluation.eval_,
    demo.demo,
    review.review,
    mcp.mcp,
)


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
    """monitor: health checks (HTTP, TCP, TLS, DNS, ICMP, heartbeats) that remember and reason.

    \b
    monitor check https://example.com/health     one-shot check (Nagios exit codes)
    monitor run --config config/monitor.yaml     the daemon
    monitor demo --mode full                     see every feature on a fresh machine
    """


for command in COMMANDS:
    main.add_command(command)


if __name__ == "__main__":
    main()
