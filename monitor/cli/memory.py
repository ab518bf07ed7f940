"""``monitor memory stats|export|import``: the agent's memory."""

from __future__ import annotations

import json

import click

from monitor.cli.common import ROW_ID, config_option, db_option, fail, open_database


@click.group()
def memory() -> None:
    """Inspect, export and import the agent's memory."""


@memory.command("stats")
@config_option
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def memory_stats(config_path: str | None, db: str | None, as_json: bool) -> None:
    """Steps by type, bytes, estimated tokens, tool success rate and time.

    \b
    monitor memory stats --config config/monitor.yaml
    """
    from monitor.cli.report import print_stats
    from monitor.memory import working as memory_module

    _, store = open_database(config_path, db, existing=True, reading=True)
    stats = memory_module.report(store)
    if as_json:
        click.echo(json.dumps(stats, indent=2))
    else:
        print_stats(stats)


@memory.command("export")
@click.argument("path", type=click.Path(dir_okay=False, writable=True))
@config_option
@db_option
@click.option(
    "--format",
    "form",
    type=click.Choice(["dump", "full", "succinct", "messages"]),
    default="dump",
    help="dump: everything, for backup; full, succinct, messages: agent runs as smolagents gives them "
    "to another agent (get_full_steps, get_succinct_steps, write_memory_to_messages).",
)
@click.option("--run", "run_id", type=ROW_ID, help="Only this agent run (full, succinct, messages).")
@click.option("--since", help="Only agent runs started this long ago or later, e.g. 7d (full, succinct, messages).")
def memory_export(path: str, config_path: str | None, db: str | None, form: str, run_id: int | None, since: str | None) -> None:
    """Write incidents, agent runs, steps and working memory to a JSON file.

    \b
    monitor memory export backup.json --db monitor.db
    monitor memory export week.json --format messages --since 7d
    """
    from monitor.cli.review import export_runs
    from monitor.memory import working as memory_module

    cfg, store = open_database(config_path, db, existing=True)
    try:
        counts = memory_module.export(store, path) if form == "dump" else export_runs(cfg, store, path, form, run_id=run_id, since=since)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
    click.echo(f"exported {', '.join(f'{n} {t}' for t, n in counts.items())} to {path}")


@memory.command("import")
@click.argument("path", type=click.Path(dir_okay=False))
@config_option
@db_option
def memory_import(path: str, config_path: str | None, db: str | None) -> None:
    """Add the incidents, runs and working memory of a JSON export to the database.

    Every entry is checked first: a bad one is reported with its place in the file, and nothing
    is written. Imported working-memory steps go after the current ones, then the oldest fold
    into the summary (memory.keep_steps); importing a file twice adds nothing.

    \b
    monitor memory import backup.json --db monitor.db
    """
    from monitor import wiring
    from monitor.memory import transcripts

    cfg, store = open_database(config_path, db)
    try:
        counts = transcripts.import_(wiring.writer(cfg, store), path, cfg.memory)
    except ValueError as exc:
        fail(str(exc))
    click.echo(f"imported {', '.join(f'{n} {t}' for t, n in counts.items())} from {path}")
