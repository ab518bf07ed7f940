"""``monitor demo --mode replay|inject|step_by_step|full``: every memory feature, on a fresh machine.

Each mode is self-contained: a temporary SQLite file, the demo service on
loopback, and the agent on llama3.2 when Ollama serves it, else on the builtin
triage model (and it says which). Checks run back to back instead of on a
timer, so a mode takes seconds.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import click
from prometheus_client import CollectorRegistry
from smolagents.memory import ActionStep

from monitor import wiring
from monitor.agent.tools import format_result
from monitor.checks.engine import Checker
from monitor.config import Config
from monitor.core.memory import MemoryStats
from monitor.core.results import Result
from monitor.core.runs import Run, Step
from monitor.daemon import daemon_cycle
from monitor.demo.history import seed_history
from monitor.demo.service import DemoService
from monitor.incidents.diagnosis import Diagnosis
from monitor.memory import review as reviewing
from monitor.memory import working as memory_module
from monitor.metrics import Metrics
from monitor.store import Store

MODES = ("replay", "inject", "step_by_step", "full")

Say = Callable[..., None]


class Views(Protocol):
    """How runs and memory stats are shown (:mod:`monitor.cli.report`, which the CLI hands in)."""

    def print_run(self, run: Run, steps: list[Step], *, detailed: bool = False) -> None: ...

    def print_stats(self, stats: dict[str, Any]) -> None: ...


def heading(say: Say, text: str) -> None:
    say("")
    say(click.style(f"== {text} ==", bold=True))


def world(service: DemoService, workdir: Path, model_id: str, api_base: str | None) -> Config:
    """The demo's config: the shop on the demo service, quick detectors, remediation as a dry run."""
    return Config.model_validate(
        {
            "database": str(workdir / "demo.db"),
            "targets": [
                {
                    "name": "shop",
                    "url": service.url("/health"),
                    "timeout": "1s",
                    "interval": "1s",
                    "actions": {"restart": {"url": service.url("/restart")}},
                }
            ],
            "detectors": {
                "consecutive": 3,
                "window_failures": 3,
                "window_size": 10,
                "flap_changes": 4,
                "flap_window": "1m",
                "recover_after": 2,
            },
            "agent": {"max_steps": 8, "remediation": "dry_run"},
            "memory": {"keep_steps": 8, "inject_incidents": 3},
            "model": {"id": model_id, **({"api_base": api_base} if api_base else {})},
        }
    )


class Story:
    """One demo world: a database, the demo service, a config, the agent and its metrics."""

    def __init__(
        self,
        workdir: Path,
        say: Say,
        views: Views,
        *,
        model_id: str = "auto",
        api_base: str | None = None,
        seed: Callable[[Store, Config], None] | None = None,
    ) -> None:
        self.say, self.views = say, views
        self.service = DemoService().start()
        self.config = world(self.service, workdir, model_id, api_base)
        self.store = wiring.store(self.config.database or ":memory:")
        if seed is not None:
            seed(self.store, self.config)
        self.metrics = Metrics(CollectorRegistry())
        self.cycle = daemon_cycle(self.config, self.store, metrics=self.metrics)
        self.investigator = self.cycle.investigator = wiring.investigator(self.config, self.store, self.cycle.parts, metrics=self.metrics)
        self.metrics.watch_memory(self.memory_stats, wait=30.0)  # a one-shot print, not a server: wait
        label = self.investigator.model_label
        say(
            f"model: {label} ({self.investigator.model_reason})"
            + ("; the builtin triage model runs the same agent loop, tools and memory" if label == "builtin" else "")
        )

    def memory_stats(self) -> MemoryStats:
        return MemoryStats(self.investigator.stats(), self.store.incidents.count_incidents(), self.store.size_bytes())

    def check(self, quiet: bool = False) -> Result:
        """One check of the shop, through the daemon's cycle (the agent engages on anomalies)."""
        runs_before = self.store.runs.last_run_id()
        [result] = Checker().run(self.config.targets)
        events = self.cycle.after_checks([result])
        if not quiet:
            self.say(f"  check: {format_result(result)}")
        for event in events:
            self.say(click.style(f"  incident #{event.incident.id} {event.kind}: {event.incident.summary}", fg="yellow"))
        if self.store.runs.last_run_id() != runs_before:
            run = self.store.runs.run(self.store.runs.last_run_id() or 0)
            assert run is not None
            self.say(click.style(f"  agent run #{run.id} investigated: {run.state}", fg="cyan"))
        return result

    def memory_line(self) -> str:
        stats = self.investigator.stats()
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(stats.steps.items()))
        return f"memory: {kinds} | {stats.bytes:,} bytes, ~{stats.tokens_estimate:,} tokens"

    def close(self) -> None:
        self.service.stop()
        self.investigator.save()
        self.store.close()


def replay(story: Story) -> None:
    say = story.say
    heading(say, "replay: a monitoring task, then the agent's memory replayed from SQLite")
    say(
        "The shop starts failing with HTTP 500. The daemon's cycle checks it; after 3 failures a detector "
        "fires, an incident opens and the agent investigates."
    )
    story.service.set("erroring")
    for _ in range(4):
        story.check()
    run_id = story.store.runs.last_run_id()
    if run_id is None:
        say("no agent run happened")
        return
    say(f"\nReplaying agent run #{run_id} from the database (as `monitor replay {run_id}` would after a restart):")
    run = story.store.runs.run(run_id)
    assert run is not None
    story.views.print_run(run, story.store.runs.steps(run_id))


def inject(story: Story) -> None:
    say = story.say
    heading(say, "inject: past incidents and a past session, recalled into a new investigation")
    say(f"Working memory restored from SQLite: {story.investigator.restored} steps from a past session.")
    say("Past incidents in SQLite:")
    for incident in story.store.incidents.recent_incidents("resolved"):
        say(f"  #{incident.id} {incident.target} {incident.pattern}: resolution: {incident.resolution}")
    say("Now the shop fails with HTTP 500 again.")
    story.service.set("erroring")
    for _ in range(3):
        story.check()
    run_id = story.store.runs.last_run_id()
    run = story.store.runs.run(run_id or 0)
    if run is None:
        say("no agent run happened")
        return
    recalled = [s.observations or "" for s in story.store.runs.steps(run.id) if s.kind == "recall"]
    say("Injected into the agent's memory before the task (a past TaskStep + a historical ActionStep):")
    for line in (recalled[0] if recalled else "nothing").splitlines():
        say(f"  {line}")
    diagnosis = Diagnosis.of(run, story.store)
    if diagnosis is None:
        say(f"No diagnosis recorded: the run ended in {run.state}" + (f" ({run.error})" if run.error else ""))
        return
    say("Diagnosis recorded on the incident:")
    for line in str(diagnosis).splitlines():
        say(f"  {line}")
    uses_fix = diagnosis.past_fix is not None and "CHG-1042" in diagnosis.past_fix
    say(
        click.style(f"✓ the diagnosis names the past fix (CHG-1042, incident #{diagnosis.related_incident})", fg="green")
        if uses_fix
        else "✗ the diagnosis does not name the past fix"
    )


def flap(story: Story, checks: int) -> None:
    """Checks recorded as the daemon's are, without calling the agent."""
    for _ in range(checks):
        [result] = Checker().run(story.config.targets)
        story.cycle.recorder.record([result])
        story.say(f"  check: {format_result(result)}")


def step_by_step(story: Story) -> None:
    say = story.say
    heading(say, "step_by_step: the agent one step at a time while the shop degrades")
    story.service.set("healthy")
    runs_before = story.store.runs.runs_since(0)
    for _ in range(5):
        story.check(quiet=True)
    say(f"5 healthy checks: {story.store.runs.runs_since(0) - runs_before} agent runs, no model calls.")
    say("The shop starts flapping.")
    story.service.set("flapping")
    flap(story, 6)
    degrade = iter(["erroring", "down"])

    def show(step: ActionStep) -> None:
        calls = ", ".join(f"{c.name}({c.arguments})" for c in step.tool_calls or []) or "no tool call"
        say(click.style(f"step {step.step_number}: {calls}", fg="cyan"))
        for line in (step.observations or str(step.error or "")).splitlines()[:4]:
            alert = line.startswith("[ALERT]")
            say("  " + click.style(line[:160], fg="red" if alert else None, bold=alert or None))
        say(f"  {story.memory_line()}")
        state = next(degrade, None)
        if state:
            story.service.set(state)
            say(f"  (the shop is now {state})")

    story.service.set("erroring")
    say("The shop now fails outright. The agent starts; the shop keeps degrading between its steps.")
    current = story.store.incidents.open_incidents("shop")
    incident = current[-1] if current else None
    outcome = story.investigator.investigate(
        "shop",
        incident=incident.id if incident else None,
        pattern=incident.pattern if incident else "flapping",
        summary=(incident.summary or "") if incident else "the shop flaps",
        on_step=show,
    )
    say(
        f"run #{outcome.run_id} ended in {outcome.state} after {outcome.steps} steps: "
        + (str(outcome.diagnosis) if outcome.diagnosis else "no diagnosis recorded")
    )


def stats(story: Story) -> None:
    say = story.say
    heading(say, "memory stats (as `monitor memory stats` shows them)")
    story.views.print_stats(memory_module.report(story.store))
    heading(say, "memory metrics (as a Prometheus scrape shows them)")
    for line in story.metrics.scrape().decode().splitlines():
        if line.startswith(
            ("monitor_agent_memory", "monitor_memory_", "monitor_db_size", "monitor_agent_runs_total", "monitor_incidents_open")
        ):
            say(f"  {line}")


def review(story: Story) -> None:
    """The history read back by a second agent: the builtin rules, or the demo's model from the messages."""
    heading(story.say, "review: a second agent reads the history (as `monitor review --since 60d` writes it)")
    found = reviewing.findings(story.store, story.store.clock() - 60 * 86400)
    if story.investigator.model_label == "builtin":
        text = reviewing.written(found)
    else:
        text = reviewing.by_model(story.investigator.model, reviewing.messages(story.store, found))
    for line in text.splitlines():
        story.say(f"  {line}" if line else "")


def run(
    mode: str, *, views: Views, say: Say = click.echo, workdir: str | None = None, model_id: str = "auto", api_base: str | None = None
) -> None:
    """Run one demo mode in a fresh temporary directory (or ``workdir``), showing runs and stats with ``views``."""
    if mode not in MODES:
        raise ValueError(f"unknown demo mode {mode!r}; one of {', '.join(MODES)}")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="monitor-demo-") as tmp:
        where = Path(workdir or tmp)
        where.mkdir(parents=True, exist_ok=True)
        story = Story(where, say, views, model_id=model_id, api_base=api_base, seed=seed_history if mode in ("inject", "full") else None)
        try:
            if mode == "replay":
                replay(story)
            elif mode == "inject":
                inject(story)
            elif mode == "step_by_step":
                step_by_step(story)
            else:
                inject(story)
                say("\nThe shop is restarted and recovers; the incident resolves after 2 passing checks.")
                story.service.set("recovering")
                for _ in range(4):
                    story.check()
                for _ in range(10):
                    story.check(quiet=True)
                say("It then runs healthy for 10 checks: no agent run, no model call.")
                replay(story)
                step_by_step(story)
                stats(story)
                review(story)
        finally:
            story.close()
    say(f"\ndemo {mode} finished in {time.monotonic() - started:.1f}s")
