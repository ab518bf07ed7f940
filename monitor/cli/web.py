"""``monitor web``: the web UI and JSON API from the database alone."""

from __future__ import annotations

import click

from monitor.cli.common import UsageError, config_option, db_option, fail, open_database


@click.command()
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
    from monitor import wiring
    from monitor.web.app import create_app
    from monitor.web.server import serve

    app = create_app(store, cfg, writer=wiring.writer(cfg, store))  # its actions queue their notifications for the daemon
    try:
        serve(app, listen_on.host, listen_on.port, ready=lambda url: click.echo(f"monitor web: serving {url}/", err=True))
    except OSError as exc:  # the port is taken, most often
        fail(f"cannot listen on {listen_on.listen}: {exc}")
    finally:
        store.close()
