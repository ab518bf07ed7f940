"""Commands that help write a config file: ``monitor validate`` and ``monitor token``."""

from __future__ import annotations

import sys

import click

from monitor.cli.common import DEFAULT_DATABASE, UNKNOWN, fail
from monitor.config import ConfigError


@click.command()
@click.argument("config_path", type=click.Path(dir_okay=False))
def validate(config_path: str) -> None:
    """Validate a config file without checking anything (exit 0, or 3 with the problems).

    \b
    monitor validate config/monitor.yaml
    """
    from monitor import config
    from monitor.store.engines import check_url, is_url, shown

    try:
        cfg = config.load(config_path)
    except ConfigError as exc:  # each problem a line of its own, as every error of monitor's is written
        for line in str(exc).splitlines():
            click.echo(f"monitor: {line}", err=True)
        sys.exit(UNKNOWN)
    if cfg.database and is_url(cfg.database):
        try:
            check_url(cfg.database)
        except ValueError as exc:
            fail(f"{config_path}: database {shown(cfg.database)}: {exc}")
    from_files, files = cfg.from_target_files
    counted = f" ({from_files} from {files} target file{'' if files == 1 else 's'})" if cfg.target_files else ""
    database = shown(cfg.database or DEFAULT_DATABASE)  # load names it: relative to the config file
    click.echo(
        f"{config_path}: OK, {len(cfg.targets)} targets{counted}, database {database}, agent {cfg.agent.mode} on model {cfg.model.id}, "
        f"workers {'auto, at most ' if cfg.workers_by_demand else ''}{cfg.workers}"  # auto's most: this machine's cores
    )
    if not cfg.targets:
        click.echo(f"{config_path}: no targets: monitor run needs at least one")


@click.command()
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
