"""``monitor demo``: every memory feature at work on a fresh machine."""

from __future__ import annotations

import click


@click.command()
@click.option("--mode", type=click.Choice(["replay", "inject", "step_by_step", "full"]), default="full", show_default=True)
@click.option(
    "--model",
    "model_id",
    default="auto",
    show_default=True,
    help="auto (llama3.2 on Ollama if present, else builtin), builtin, or a litellm id.",
)
@click.option("--api-base", help="The model server, e.g. http://127.0.0.1:8090/v1 for llama.cpp's server.")
@click.option("--keep", type=click.Path(file_okay=False), help="Keep the demo database in this directory.")
def demo(mode: str, model_id: str, api_base: str | None, keep: str | None) -> None:
    """See every memory feature work, on a fresh machine, in seconds.

    \b
    monitor demo --mode full
    monitor demo --mode step_by_step --keep ./demo   then: monitor replay --db demo/demo.db
    monitor demo --model openai/qwen2.5-coder:0.5b --api-base http://127.0.0.1:8090/v1
    """
    import logging

    logging.basicConfig(level=logging.ERROR)
    from monitor.cli import report
    from monitor.demo import modes

    modes.run(mode, views=report, workdir=keep, model_id=model_id, api_base=api_base)
