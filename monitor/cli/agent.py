"""The agent from the command line: ``monitor investigate`` and ``monitor replay``."""

from __future__ import annotations

import click

from monitor.cli.common import ROW_ID, config_option, db_option, exit_now, fail, open_database, print_results, setup_logging
from monitor.config import ConfigError


@click.command()
@click.argument("targets", nargs=-1, required=True)
@config_option
@db_option
@click.option("--always", is_flag=True, help="Investigate even targets that pass.")
@click.option("--model", "model_id", help="Override model.id: auto, builtin or a litellm id.")
@click.option("--api-base", help="Override model.api_base, e.g. http://127.0.0.1:8090/v1.")
def investigate(
    targets: tuple[str, ...], config_path: str | None, db: str | None, always: bool, model_id: str | None, api_base: str | None
) -> None:
    """Check targets now and let the agent investigate the failing ones.

    \b
    monitor investigate --config config/monitor.yaml api
    monitor investigate --always --model builtin http://127.0.0.1:8080/health
    Prints each diagnosis and its run id (see `monitor replay RUN_ID`). Exit codes as `monitor check`.
    """
    from monitor import config as config_module

    setup_logging()
    cfg, store = open_database(config_path, db)
    try:
        cfg, chosen = config_module.with_urls(cfg, list(targets))
        named = {key: value for key, value in (("id", model_id), ("api_base", api_base)) if value}
        if named:  # a copy marks them as named, as the config file would
            cfg = cfg.model_copy(update={"model": cfg.model.model_copy(update=named)})
    except ConfigError as exc:
        fail(str(exc))
    from monitor.checks.engine import Checker, exit_code
    from monitor.cli.report import Progress
    from monitor.daemon import investigate_results

    results = Checker(concurrency=cfg.concurrency).run(chosen)
    print_results(results, as_json=False)  # recorded with the investigations, as the daemon records them
    progress = Progress()
    for outcome, target in investigate_results(cfg, store, results, always=always, on_step=progress.step):
        click.echo(f"{target}: agent run #{outcome.run_id} ended in {outcome.state} after {outcome.steps} steps, {progress.elapsed():.1f}s")
        if outcome.diagnosis is not None:
            click.echo(f"diagnosis: {outcome.diagnosis}")
        else:
            reason = outcome.error or "the model never called record_diagnosis"
            click.echo(f"no diagnosis recorded ({reason}); the detection stands")
        progress.reset()
    store.close()
    exit_now(exit_code(results))


@click.command()
@click.argument("run_id", type=ROW_ID, required=False)
@config_option
@db_option
@click.option("--detailed", is_flag=True, help="Show whole observations, model output and errors.")
def replay(run_id: int | None, config_path: str | None, db: str | None, detailed: bool) -> None:
    """Show a past agent run from the database: task, tool calls, observations, outcome.

    \b
    monitor replay            the latest run
    monitor replay 12 --detailed
    """
    from monitor.cli.report import print_run

    _, store = open_database(config_path, db, existing=True, reading=True)
    run_id = run_id or store.runs.last_run_id()
    run = store.runs.run(run_id) if run_id else None
    if run is None:
        fail(f"no agent run {'#' + str(run_id) if run_id else 'recorded yet'} in {store.path}")
    print_run(run, store.runs.steps(run.id), detailed=detailed)
