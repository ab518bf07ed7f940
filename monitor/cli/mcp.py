"""``monitor mcp``: the targets and the incident memory over the Model Context Protocol (:mod:`monitor.mcp`)."""

from __future__ import annotations

import importlib.util
import logging
import sys
from typing import TYPE_CHECKING

import click

from monitor.cli.common import UsageError, config_option, database_of, db_option, fail, load_config

if TYPE_CHECKING:
    from monitor.config import Config
    from monitor.mcp.source import Source

NEEDS_EXTRA = "monitor mcp needs the MCP SDK: pip install 'monitor-agent[mcp]'"


@click.command()
@config_option
@db_option
@click.option("--http", "listen", metavar="HOST:PORT", help="Serve streamable HTTP at http://HOST:PORT/mcp, behind web.token.")
def mcp(config_path: str | None, db: str | None, listen: str | None) -> None:
    """Answer an MCP client (an assistant) from the database: targets, incidents, recall, results, the review.

    \b
    monitor mcp --config config/monitor.yaml                        stdio: the client starts it
    monitor mcp --config config/monitor.yaml --http 127.0.0.1:9111  one endpoint for many clients
    Over HTTP every request needs `Authorization: Bearer <web.token>`. `investigate` is offered only while
    agent.mode is not off, and never remediates. Before the daemon first ran, the tools answer empty, saying so.
    See docs/mcp.md.
    """
    from monitor.config import WebConfig

    if importlib.util.find_spec("mcp") is None:  # the SDK only: any other ImportError is a bug, and says so
        fail(NEEDS_EXTRA)
    from monitor.mcp.server import server

    try:
        address = None if listen is None else WebConfig(listen=listen)
    except ValueError as exc:
        raise UsageError(f"--http: {exc}") from None
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    cfg = load_config(config_path, reading=True)
    source = opened(cfg, db)
    try:
        app = server(source)
        if address is None:
            app.run("stdio")
            return
        if not cfg.web.token:
            fail("monitor mcp --http answers only with the web token: set web.token (`monitor token` makes one)")
        from monitor.mcp.http import http_app, serve

        known_by = cfg.web.model_copy(update={"listen": listen})
        try:
            serve(http_app(app, cfg.web.token, known_by), address.host, int(address.listen.rpartition(":")[2]), ready=said)
        except OSError as exc:
            fail(f"cannot listen on {listen}: {exc.strerror or exc}")
    finally:
        source.close()


def opened(cfg: Config, db: str | None) -> Source:
    """The tools' source: the database if it is there, else one that waits for it; a database that cannot be
    opened stops the command with its absolute path."""
    from monitor.mcp.source import Source
    from monitor.store.engines import describe, shown

    location = database_of(cfg, db)
    try:
        return Source.at(location, cfg)
    except Exception as exc:  # sqlite3.Error, psycopg.Error, OSError: the message names the database
        fail(f"cannot open database {shown(location)}: {describe(exc, location)}")


def said(url: str) -> None:
    click.echo(f"monitor mcp: serving {url}", err=True)
