"""``monitor import``: another tool's setup as a config file, and a report of what could not come along."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from monitor.cli.common import UNKNOWN

if TYPE_CHECKING:
    from monitor.importers import Import


LARGE = 512 << 10  # characters of config past which the targets go into target files (a config holds 1 MiB)
MAX_OUTPUT = 64 << 20  # characters of config: a fleet of 100,000 targets is about 30 MiB


def _emit(imported: Import, output: str | None, report: str | None, split: bool = False) -> None:
    """Write the config (``-o`` or stdout; a large fleet's targets in target files beside it) and the report
    (``--report`` or stderr), never through a symbolic link; check that what was written loads."""
    from monitor import config
    from monitor.importers import files

    if output and Path(output).stem != "monitor":
        imported.config["database"] = f"{Path(output).stem}.db"  # its own, beside it: two imports never share one
    text = imported.yaml()
    if len(text) > MAX_OUTPUT:
        raise files.Refused(f"the converted config would be {len(text) >> 20} MiB (at most {MAX_OUTPUT >> 20} MiB): not written")
    if output and (split or len(text) > LARGE):
        imported.split(Path(output))
        text = imported.yaml()
    if output:
        files.write_text(Path(output), text)
    else:
        click.echo(text, nl=False)
    account = imported.report()
    try:
        config.load(output) if output else config.parse(text, "<stdout>")
    except config.ConfigError as exc:  # a converter's bug: say so, and still hand over what was converted
        account += "".join(f"  does not validate: {line}\n" for line in str(exc).splitlines())
    if report:
        files.write_text(Path(report), account)
    else:
        click.echo(account, err=True, nl=False)


def _run(read: Callable[..., Import], *paths: str, output: str | None, report: str | None, split: bool, **options: bool) -> None:
    from monitor.importers import Unreadable

    try:
        _emit(read(*paths, **options), output, report, split)
    except Unreadable as exc:  # unreadable or refused input, or a place it is refused to write
        click.echo(f"monitor: {exc}", err=True)
        sys.exit(UNKNOWN)


_output = click.option("-o", "--output", type=click.Path(dir_okay=False), help="write the config here (default: stdout)")
_report = click.option("--report", type=click.Path(dir_okay=False), help="write the report here (default: stderr)")
_split = click.option(
    "--target-files", "split", is_flag=True, help="with -o: the targets in target files beside it (a large fleet's are, always)"
)


@click.group(name="import")
def import_() -> None:
    """Convert another tool's setup into a monitor config (exit 3 only when the input cannot be read).

    \b
    monitor import gatus config.yaml -o monitor.yaml
    monitor import uptime-kuma /app/data/kuma.db -o monitor.yaml
    monitor import blackbox blackbox.yml prometheus.yml -o monitor.yaml
    """


@import_.command()
@click.argument("path", type=click.Path(dir_okay=False))
@_output
@_report
@_split
def gatus(path: str, output: str | None, report: str | None, split: bool) -> None:
    """A Gatus config.yaml: endpoints, conditions, alerts, external endpoints, maintenance, ui.

    \b
    monitor import gatus config/config.yaml -o monitor.yaml --report import.txt
    """
    from monitor.importers import gatus as source

    _run(source.read, path, output=output, report=report, split=split)


@import_.command(name="uptime-kuma")
@click.argument("path", type=click.Path(dir_okay=False))
@_output
@_report
@_split
def uptime_kuma(path: str, output: str | None, report: str | None, split: bool) -> None:
    """An Uptime Kuma database (1.23 or 2.x), read-only: monitors, notifications, status pages, maintenance.

    \b
    monitor import uptime-kuma /app/data/kuma.db -o monitor.yaml
    """
    from monitor.importers import uptime_kuma as source

    _run(source.read, path, output=output, report=report, split=split)


@import_.command()
@click.argument("blackbox_path", metavar="BLACKBOX_YML", type=click.Path(dir_okay=False))
@click.argument("prometheus_path", metavar="PROMETHEUS_YML", type=click.Path(dir_okay=False))
@_output
@_report
@_split
@click.option(
    "--allow-outside",
    is_flag=True,
    help="read file_sd files outside the Prometheus config's folder too (absolute paths, ../, links out); refused otherwise",
)
def blackbox(blackbox_path: str, prometheus_path: str, output: str | None, report: str | None, split: bool, allow_outside: bool) -> None:
    """blackbox_exporter's modules, and the targets of the Prometheus scrape jobs that use them.

    \b
    monitor import blackbox blackbox.yml prometheus.yml -o monitor.yaml
    monitor import blackbox /etc/blackbox.yml /etc/prometheus/prometheus.yml --allow-outside -o monitor.yaml
    """
    from monitor.importers import blackbox as source

    _run(source.read, blackbox_path, prometheus_path, output=output, report=report, split=split, anywhere=allow_outside)
