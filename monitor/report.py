"""Plain-text views of runs, incidents and memory stats, for the CLI and the demo.

They print with ``click.echo`` so colour shows on a terminal and disappears in
pipes and logs.
"""

from __future__ import annotations

import json
import time
from typing import Any

import click


def when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch)) if epoch else "-"


def short(text: str | None, limit: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit} more characters]"


def print_run(run: dict[str, Any], steps: list[dict[str, Any]], *, detailed: bool = False) -> None:
    duration = (run["ended_at"] or time.time()) - run["started_at"]
    click.secho(f"Agent run #{run['id']}  target={run['target']}  model={run['model']}  state={run['state']}",
                bold=True)
    click.echo(f"started {when(run['started_at'])}, {duration:.1f}s, "
               f"tokens in/out {run['input_tokens']}/{run['output_tokens']}"
               + (f", incident #{run['incident_id']}" if run["incident_id"] else ""))
    click.secho("Task:", fg="cyan")
    click.echo(_indent(run["task"]))
    limit = 100_000 if detailed else 300
    for step in steps:
        if step["kind"] == "recall":
            click.secho("Recalled past incidents:", fg="cyan")
            click.echo(_indent(short(step["observations"], limit)))
            continue
        took = f"{step['duration']:.2f}s" if step["duration"] is not None else "-"
        click.secho(f"Step {step['step_number']} ({took})", fg="cyan")
        if detailed and step["model_output"]:
            click.echo(_indent(f"model: {step['model_output']}"))
        for call in json.loads(step["tool_calls"] or "[]"):
            click.echo(_indent(f"→ {call['name']}({_arguments(call['arguments'] or {})})"))
        if step["observations"]:
            click.echo(_indent(short(step["observations"], limit)))
        if step["error"]:
            click.secho(_indent(f"error: {short(step['error'], limit)}"), fg="red")
    click.secho("Outcome:", fg="cyan")
    click.echo(_indent(run["final_answer"] or f"{run['state']}: {run['error'] or 'no final answer'}"))
    if run.get("root_cause"):
        related = f", related to #{run['related_incident']}" if run.get("related_incident") else ""
        click.echo(_indent(f"diagnosis: {run['root_cause']} ({run.get('confidence')} confidence{related}): "
                           f"{run.get('diagnosis') or ''}"))
    else:
        click.echo(_indent("no diagnosis recorded"))


class Progress:
    """Prints each agent step as it ends: tool, arguments, a short observation, elapsed time."""

    def __init__(self, echo: Any = click.echo) -> None:
        self.echo = echo
        self.reset()

    def reset(self) -> None:
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def step(self, step: Any) -> None:
        calls = "; ".join(f"{c.name}({_arguments(c.arguments)})" for c in step.tool_calls or []) or "no tool call"
        outcome = f"error: {step.error}" if step.error else (step.observations or str(step.action_output or ""))
        self.echo(f"  step {step.step_number} [{self.elapsed():5.1f}s] {short(calls, 120)}")
        self.echo(f"      → {short(' '.join(outcome.split()), 150)}")


def _arguments(arguments: Any) -> str:
    if isinstance(arguments, dict):
        return ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return repr(arguments)


def print_stats(stats: dict[str, Any]) -> None:
    working, long_term, tools = stats["working"], stats["long_term"], stats["tools"]
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(working["steps"].items())) or "empty"
    click.secho("Working memory (what the next request carries)", bold=True)
    click.echo(f"  steps by type: {kinds}")
    click.echo(f"  size: {working['bytes']:,} bytes, ~{working['tokens_estimate']:,} tokens")
    click.secho("Long-term memory (SQLite)", bold=True)
    click.echo(f"  incidents: {long_term['incidents']} ({long_term['open_incidents']} open); "
               f"agent runs: {long_term['agent_runs']}; steps: {long_term['agent_steps']}; "
               f"check results: {long_term['results']}; database: {stats['db_bytes']:,} bytes")
    for kind, row in sorted(stats["stored_steps"].items()):
        click.echo(f"  stored {kind} steps: {row['steps']} ({row['bytes']:,} bytes)")
    click.secho("Tools", bold=True)
    if tools["calls"]:
        click.echo(f"  calls: {tools['calls']}, succeeded: {tools['success_rate']:.1%}, "
                   f"average time: {tools['average_ms']:.1f} ms")
    else:
        click.echo("  no tool calls yet")


def print_incidents(rows: list[dict[str, Any]]) -> None:
    if not rows:
        click.echo("no incidents")
        return
    for i in rows:
        colour = "red" if i["status"] == "open" else "green"
        click.echo(f"#{i['id']:<5} " + click.style(f"{i['status']:<9}", fg=colour)
                   + f"{when(i['opened_at'])}  {i['target']:<16} {i['pattern']:<14} {short(i['summary'], 70)}")


def print_incident(incident: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    click.secho(f"Incident #{incident['id']} [{incident['status']}] {incident['target']} {incident['pattern']}",
                bold=True)
    for key in ("severity", "summary", "diagnosis", "suspected_cause", "resolution", "notes", "agent_state"):
        if incident.get(key):
            click.echo(f"  {key}: {incident[key]}")
    click.echo(f"  opened: {when(incident['opened_at'])}  updated: {when(incident['updated_at'])}  "
               f"closed: {when(incident['closed_at'])}")
    for run in runs:
        click.echo(f"  agent run #{run['id']}: {run['state']} ({when(run['started_at'])})")


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in str(text).splitlines())
