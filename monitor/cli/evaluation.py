"""``monitor eval``: the agent's diagnoses scored on scripted incidents."""

from __future__ import annotations

import json

import click

from monitor.cli.common import fail


def default_scenarios() -> str:
    """The repository's bench/scenarios next to the package, else ./bench/scenarios."""
    from pathlib import Path

    import monitor

    beside = Path(monitor.__file__).parents[1] / "bench" / "scenarios"
    return str(beside if beside.is_dir() else Path("bench") / "scenarios")


@click.command("eval")
@click.option(
    "--model",
    "models",
    multiple=True,
    default=("builtin",),
    show_default=True,
    help="Model to score: builtin or a litellm id (repeatable).",
)
@click.option("--api-base", help="Model server for litellm ids, e.g. http://127.0.0.1:8090/v1.")
@click.option(
    "--scenarios",
    "scenarios_dir",
    type=click.Path(file_okay=False),
    help="Directory of scenario folders (default: the repository's bench/scenarios).",
)
@click.option("--tag", "tags", multiple=True, help="Only scenarios with this tag (repeatable).")
@click.option("--only", multiple=True, help="Only this scenario (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON instead of tables.")
@click.option("--out", type=click.Path(dir_okay=False), help="Also write the JSON results to this file.")
@click.option(
    "--baseline/--no-baseline", default=True, show_default=True, help="Add the detector-only row: what the alerts alone say, with no model."
)
@click.option("--embedder", help="memory.embedder for every scenario: builtin, none (full text only), ollama/<m>.")
def eval_(
    models: tuple[str, ...],
    api_base: str | None,
    scenarios_dir: str | None,
    tags: tuple[str, ...],
    only: tuple[str, ...],
    as_json: bool,
    out: str | None,
    baseline: bool,
    embedder: str | None,
) -> None:
    """Score the agent's diagnoses on scripted incidents (bench/scenarios), per model and per tag.

    \b
    monitor eval
    monitor eval --tag memory --only http-500-known-fix --json
    monitor eval --model builtin --model openai/qwen2.5-coder:0.5b --api-base http://127.0.0.1:8090/v1 --out eval.json
    Each scenario runs for real on loopback; a progress line per run goes to stderr.
    """
    from monitor.eval import harness as evaluation
    from monitor.eval.scenario import ScenarioError, load_all

    try:
        scenarios = load_all(scenarios_dir or default_scenarios(), tags=tags, only=only)
    except ScenarioError as exc:
        fail(str(exc))
    data = evaluation.evaluate(
        scenarios,
        models,
        api_base=api_base,
        baseline=baseline,
        embedder=embedder,
        progress=lambda model, v: click.echo(evaluation.progress_line(model, v), err=True),
    )
    if out:
        write(data, out)
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        evaluation.render(data)


def write(data: object, path: str) -> None:
    """The results as JSON in ``path``; a file that cannot be written is a clear error."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
