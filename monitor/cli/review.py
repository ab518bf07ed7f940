"""``monitor review``, and the smolagents forms of ``monitor memory export``: thin glue to monitor.memory."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import TYPE_CHECKING

import click

from monitor.cli.common import UsageError, config_option, db_option, fail, open_database
from monitor.config import Config, parse_duration

if TYPE_CHECKING:
    from monitor.memory.review import Findings
    from monitor.store import Store


def since_of(value: str | None, *, default: float | None = None) -> float | None:
    """``--since 7d`` as the epoch seconds it starts at."""
    if value is None:
        return None if default is None else time.time() - default
    try:
        return time.time() - parse_duration(value)
    except ValueError as exc:
        raise UsageError(f"--since: {exc}") from None


def agent_system_prompt(config: Config, store: Store) -> str:
    """The monitoring agent's system prompt, with its tools, as its messages begin."""
    from smolagents import ToolCallingAgent

    from monitor import wiring
    from monitor.agent.tools import toolset
    from monitor.agent.triage import TriageModel
    from monitor.memory.working import prompts

    agent = ToolCallingAgent(tools=toolset(wiring.toolbox(config, store)), model=TriageModel(), prompt_templates=prompts())
    return str(agent.memory.system_prompt.system_prompt)


def export_runs(config: Config, store: Store, path: str, form: str, *, run_id: int | None, since: str | None) -> dict[str, int]:
    from monitor.memory import transcripts

    prompt = agent_system_prompt(config, store) if form == "messages" else ""
    try:
        return transcripts.export(store, path, form, run_id=run_id, since=since_of(since), system_prompt=prompt)
    except ValueError as exc:
        fail(str(exc))


@click.command()
@config_option
@db_option
@click.option("--since", default="7d", show_default=True, help="The history to review: this long ago to now.")
@click.option("--model", "model_id", help="builtin (rules, no model), auto, or a litellm id (default: the config's).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings and the review as JSON.")
def review(config_path: str | None, db: str | None, since: str, model_id: str | None, as_json: bool) -> None:
    """Review the monitoring history: recurring failures, fixes that did not hold, targets failing together.

    On the builtin model the review is computed from the database; with a model, the history goes to it
    as messages and it writes the review.

    \b
    monitor review --since 7d --config config/monitor.yaml
    monitor review --db monitor.db --model builtin --json
    """
    from monitor.memory import review as reviewing

    cfg, store = open_database(config_path, db, existing=True)
    found = reviewing.findings(store, since_of(since) or 0.0)
    text, label = written(cfg, store, found, model_id)
    if as_json:
        click.echo(json.dumps({"model": label, "review": text, **dataclasses.asdict(found)}, indent=2))
    else:
        click.echo(text)
    store.close()


def written(cfg: Config, store: Store, found: Findings, model_id: str | None) -> tuple[str, str]:
    """The review and who wrote it: the builtin rules, or the configured model from the history's messages."""
    from monitor.memory import review as reviewing

    model_cfg = cfg.model if model_id is None else cfg.model.model_copy(update={"id": model_id})
    if model_cfg.id == "builtin":
        return reviewing.written(found), "builtin"
    from monitor.agent.investigator import choose_model

    model, label, _ = choose_model(model_cfg)
    if label == "builtin":
        return reviewing.written(found), label
    return reviewing.by_model(model, reviewing.messages(store, found)), label
