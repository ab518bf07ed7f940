"""``monitor eval``: the agent's diagnoses scored on scripted incidents."""

from __future__ import annotations

import json
from typing import Any

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
@click.option("--judge", "judge_model", help="A litellm id to judge recall on every scenario (memory.judge); writes its calibration.")
@click.option("--judge-api-base", help="The judge's server (default: --api-base).")
@click.option("--judge-timeout", type=click.FloatRange(min=1), default=60.0, show_default=True, help="Seconds one judging may take.")
@click.option(
    "--calibration",
    type=click.Path(dir_okay=False),
    default="judge-calibration.json",
    show_default=True,
    help="Where the judge's calibration goes (memory.judge.calibration reads it); other models' entries are kept.",
)
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
    **judging: Any,
) -> None:
    """Score the agent's diagnoses on scripted incidents (bench/scenarios), per model and per tag.

    \b
    monitor eval
    monitor eval --tag memory --only http-500-known-fix --json
    monitor eval --model builtin --model openai/qwen2.5-coder:0.5b --api-base http://127.0.0.1:8090/v1 --out eval.json
    monitor eval --tag unseen --judge openai/qwen2.5-coder:7b --judge-api-base http://127.0.0.1:8090/v1
    Each scenario runs for real on loopback; a progress line per run goes to stderr. With --judge, the judge reads
    every diagnosis's candidates (it never asserts here: the run measures it) and its calibration is written.
    """
    from monitor.eval import harness as evaluation

    data = evaluation.evaluate(
        scenarios_of(scenarios_dir, tags, only),
        models,
        api_base=api_base,
        baseline=baseline,
        embedder=embedder,
        judge=judge_options(judging["judge_model"], judging["judge_api_base"] or api_base, judging["judge_timeout"]),
        progress=lambda model, v: click.echo(evaluation.progress_line(model, v), err=True),
    )
    if judging["judge_model"]:
        calibrate(data, judging["judge_model"], judging["calibration"])
    show(data, out=out, as_json=as_json)


def show(data: dict[str, Any], *, out: str | None, as_json: bool) -> None:
    """The results: into ``out`` when given, and printed as JSON or as tables."""
    from monitor.eval import harness as evaluation

    if out:
        write(data, out)
    if as_json:
        click.echo(json.dumps(data, indent=2))
    else:
        evaluation.render(data)


def scenarios_of(folder: str | None, tags: tuple[str, ...], only: tuple[str, ...]) -> list[Any]:
    """The scenarios to run; a folder that holds none, or a bad one, is a clear error."""
    from monitor.eval.scenario import ScenarioError, load_all

    try:
        return list(load_all(folder or default_scenarios(), tags=tags, only=only))
    except ScenarioError as exc:
        fail(str(exc))


def judge_options(model: str | None, api_base: str | None, timeout: float) -> dict[str, object] | None:
    """``memory.judge`` for every scenario: the model, its server, no calibration (so it never vouches)."""
    if not model:
        return None
    return {"model": model, "timeout": timeout, **({"api_base": api_base} if api_base else {})}


def calibrate(data: dict[str, Any], model: str, path: str) -> None:
    """The judge's calibration, from the first model row its verdicts were scored on, written into ``path``."""
    from monitor.eval.judging import calibration_of
    from monitor.memory.calibration import record

    scores = next((m["scores"]["judge"] for m in data["models"] if m["scores"].get("judge")), None)
    if scores is None:
        click.echo(f"judge {model} was never asked (no scenario had a past incident whose fix could apply)", err=True)
        return
    found = calibration_of(model, scores)
    try:
        record(path, found)
    except (OSError, ValueError) as exc:
        fail(f"cannot write the calibration to {path}: {exc}")
    verdict = found.refusal(0.05, found.prompt) or "may assert under the default limit (0.05)"
    click.echo(f"calibration of {model} written to {path}: {found.rows} rows, {found.wrong} wrong; {verdict}", err=True)


def write(data: object, path: str) -> None:
    """The results as JSON in ``path``; a file that cannot be written is a clear error."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
