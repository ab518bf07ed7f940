"""Plain-text views of runs, incidents and memory stats, for the CLI (and the demo, which the CLI hands them).

They print with ``click.echo`` so colour shows on a terminal and disappears in
pipes and logs. Every text passes :func:`printable` first: redacted, and what a target answered (or a model
wrote) is shown, never obeyed by the terminal, so an OSC title, clipboard write or hyperlink in an
observation reaches the screen as ``\x1b]52;...`` text.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from monitor.core.incidents import Incident
from monitor.core.runs import Run, Step
from monitor.core.urls import redact_text

if TYPE_CHECKING:
    from smolagents.memory import ActionStep

    from monitor.core.incidents import Link

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1: ESC, BEL, CSI...


def printable(text: str) -> str:
    """``text`` redacted (:func:`monitor.core.urls.redact_text`: the CLI's output leaves the process as an alert
    does), with every control character a terminal would act on written out (``\\x1b``, ``\\r``)."""
    text = redact_text(text)
    return CONTROL.sub(lambda m: repr(m.group())[1:-1] if m.group() in "\r\x0c" else f"\\x{ord(m.group()):02x}", text)


def echo(text: str = "") -> None:
    click.echo(printable(text))


def secho(text: str, **style: Any) -> None:
    click.secho(printable(text), **style)


def when(epoch: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch)) if epoch else "-"


def short(text: str | None, limit: int) -> str:
    """``text`` redacted, up to ``limit`` characters, and how many more there are; whole when that note would be
    longer (redacted first: a secret cut in two is no longer one the redaction knows)."""
    text = redact_text(text or "").strip()
    note = f" … [{len(text) - limit} more characters]"
    return text if len(text) <= limit + len(note) else text[:limit] + note


def print_run(run: Run, steps: list[Step], *, detailed: bool = False) -> None:
    duration = (run.ended_at or time.time()) - run.started_at
    secho(f"Agent run #{run.id}  target={run.target}  model={run.model}  state={run.state}", bold=True)
    echo(
        f"started {when(run.started_at)}, {duration:.1f}s, "
        f"tokens in/out {run.input_tokens}/{run.output_tokens}" + (f", incident #{run.incident_id}" if run.incident_id else "")
    )
    secho("Task:", fg="cyan")
    echo(_indent(run.task))
    limit = 100_000 if detailed else 300
    for step in steps:
        if step.kind == "recall":
            secho("Recalled past incidents:", fg="cyan")
            echo(_indent(short(step.observations, limit)))
            continue
        took = f"{step.duration:.2f}s" if step.duration is not None else "-"
        secho(f"Step {step.step_number} ({took})", fg="cyan")
        if detailed and step.model_output:
            echo(_indent(f"model: {step.model_output}"))
        for call in json.loads(step.tool_calls or "[]"):
            echo(_indent(f"→ {call['name']}({_arguments(call['arguments'] or {})})"))
        if step.observations:
            echo(_indent(short(step.observations, limit)))
        if step.error:
            secho(_indent(f"error: {short(step.error, limit)}"), fg="red")
    secho("Outcome:", fg="cyan")
    echo(_indent(run.final_answer or f"{run.state}: {run.error or 'no final answer'}"))
    if run.root_cause:
        related = f", related to #{run.related_incident}" if run.related_incident else ""
        echo(_indent(f"diagnosis: {run.root_cause} ({run.confidence} confidence{related}): {run.diagnosis or ''}"))
    else:
        echo(_indent("no diagnosis recorded"))


class Progress:
    """Prints each agent step as it ends: tool, arguments, a short observation, elapsed time."""

    def __init__(self, echo: Callable[[str], None] = echo) -> None:
        self.echo = echo
        self.reset()

    def reset(self) -> None:
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def step(self, step: ActionStep) -> None:
        calls = "; ".join(f"{c.name}({_arguments(c.arguments)})" for c in step.tool_calls or []) or "no tool call"
        outcome = f"error: {step.error}" if step.error else (step.observations or str(step.action_output or ""))
        self.echo(printable(f"  step {step.step_number} [{self.elapsed():5.1f}s] {short(calls, 120)}"))
        self.echo(printable(f"      → {short(' '.join(outcome.split()), 150)}"))


def _arguments(arguments: Any) -> str:
    if isinstance(arguments, dict):
        return ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return repr(arguments)


def print_stats(stats: dict[str, Any]) -> None:
    working, long_term, tools = stats["working"], stats["long_term"], stats["tools"]
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(working["steps"].items())) or "empty"
    secho("Working memory (what the next request carries)", bold=True)
    echo(f"  steps by type: {kinds}")
    echo(f"  size: {working['bytes']:,} bytes, ~{working['tokens_estimate']:,} tokens")
    secho("Long-term memory (SQLite)", bold=True)
    echo(
        f"  incidents: {long_term['incidents']} ({long_term['open_incidents']} open); "
        f"agent runs: {long_term['agent_runs']}; steps: {long_term['agent_steps']}; "
        f"check results: {long_term['results']}; database: {stats['db_bytes']:,} bytes"
    )
    for kind, row in sorted(stats["stored_steps"].items()):
        echo(f"  stored {kind} steps: {row['steps']} ({row['bytes']:,} bytes)")
    for group in stats.get("forgotten", []):
        echo(f"  {group['text']}")
    secho("Tools", bold=True)
    if tools["calls"]:
        echo(f"  calls: {tools['calls']}, succeeded: {tools['success_rate']:.1%}, average time: {tools['average_ms']:.1f} ms")
    else:
        echo("  no tool calls yet")


def print_incidents(rows: Sequence[Incident]) -> None:
    if not rows:
        echo("no incidents")
        return
    for i in rows:
        colour = "red" if i.status == "open" else "green"
        click.echo(
            f"#{i.id:<5} "
            + click.style(f"{i.status:<9}", fg=colour)
            + printable(f"{when(i.opened_at)}  {i.target:<16} {i.pattern:<14} {short(i.summary, 70)}")
        )


def print_incident(incident: Incident, runs: list[Run], links: Sequence[Link] = ()) -> None:
    secho(f"Incident #{incident.id} [{incident.status}] {incident.target} {incident.pattern}", bold=True)
    for key in ("severity", "summary", "diagnosis", "suspected_cause", "resolution", "notes", "agent_state"):
        if getattr(incident, key):
            echo(f"  {key}: {getattr(incident, key)}")
    echo(f"  opened: {when(incident.opened_at)}  updated: {when(incident.updated_at)}  closed: {when(incident.closed_at)}")
    for run in runs:
        echo(f"  agent run #{run.id}: {run.state} ({when(run.started_at)})")
    for link in links:
        echo(f"  {link.said(incident.id)} ({when(link.at)})")


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in str(text).splitlines())
