"""``monitor run``: the daemon, or one cycle of it with ``--once``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from monitor.cli.common import (
    UsageError,
    config_option,
    database_of,
    db_option,
    fail,
    load_config,
    open_store,
    print_results,
    setup_logging,
)
from monitor.config import Config, ConfigError

if TYPE_CHECKING:
    from monitor.store import Store


@click.command()
@config_option
@db_option
@click.option("--once", is_flag=True, help="Run one cycle over every target and exit (Nagios exit code).")
@click.option("--verbose", is_flag=True, help="Debug logging.")
@click.option(
    "--metrics-listen",
    envvar="MONITOR_METRICS_LISTEN",
    metavar="HOST:PORT",
    help="Serve /metrics and /healthz here, whatever the config says ($MONITOR_METRICS_LISTEN).",
)
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
    cfg = load_config(config_path)
    location = database_of(cfg, db)
    preflight(cfg, config_path, location, metrics_listen, serving=not once)  # before any file is made
    store = open_store(location, replica=cfg.replica_index or 0)
    if not once:  # before the daemon marks runs interrupted or writes anything
        claim(store)
    from monitor.daemon import Daemon

    daemon = Daemon(cfg, store=store, config_path=config_path, listen=metrics_listen)
    if once:
        from monitor.checks.engine import exit_code

        results = daemon.run_once()
        print_results(results, as_json=False)
        sys.exit(exit_code(results))
    try:
        daemon.run_forever()
    except OSError as exc:  # the metrics port is taken, most often
        fail(f"cannot start: {exc}")
    if daemon.fatal is not None:
        fail(daemon.fatal)


def preflight(cfg: Config, config_path: str, location: str, metrics_listen: str | None, *, serving: bool) -> None:
    """What stops the daemon from starting, said at once (exit 3) and before the database is opened or made."""
    from monitor.store import is_url

    if not cfg.targets:
        fail(f"{config_path}: no targets configured")
    metrics = cfg.metrics
    if metrics_listen:
        try:
            metrics = cfg.metrics.listening_on(metrics_listen)
        except ConfigError as exc:
            fail(str(exc))
    if cfg.lease is not None and cfg.replicas > 1 and not is_url(location):
        fail(
            f"{config_path}: lease: replicas hand targets over through one shared PostgreSQL database (lease is on "
            f"by default with replicas), and {location} is a SQLite file (one daemon only): set database: "
            "postgresql://... for every replica, or lease: off to split the targets with no failover"
        )
    if serving:
        from monitor.daemon.listeners import unavailable

        taken = unavailable(cfg.model_copy(update={"metrics": metrics}))
        if taken is not None:
            fail(f"cannot start: {taken}")


def claim(store: Store) -> None:
    """Be the one daemon of this SQLite file, or this replica number of the shared database; else exit (3)."""
    if store.claim_replica():
        return
    holder = f" ({store.claimed_by})" if store.claimed_by else ""
    if store.shared:
        fail(
            f"another daemon{holder} already runs as replica {store.replica} of {store.path}: the two would check "
            "the same targets twice (give each replica its own replica_index, or stop the other)"
        )
    fail(
        f"another daemon{holder} already runs on {store.path}: the two would check every target twice (stop it, "
        "or give this one a database of its own)"
    )
