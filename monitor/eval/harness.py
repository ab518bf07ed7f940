"""The diagnosis eval: run scenarios against models, score what they diagnosed, print and export it.

Each scenario (see ``monitor/eval/scenario.py``) runs for real, the way the daemon
would meet it: a fresh SQLite store in a temp dir, the target's behaviour on
loopback, past incidents and check history seeded, one live check, the real
detectors opening the incident, then ``Investigator.investigate`` with its real
tools. Nothing is mocked: a model that re-checks the target hits the loopback
server. The stored run is then scored against ``expect``, deterministically
(:mod:`monitor.eval.scores` lists the scores). ``infra_errors`` are runs that ended in model_error,
timeout or crashed, or a harness exception. An infra error
scores as a miss like any run without a diagnosis, and is counted in its own
column so it is never mistaken silently for a wrong diagnosis.

The ``detector only`` row is what the alerts alone say, with no model: a root
cause from the incident's pattern or the latest failing result's error kind,
no related incident, and always actionable.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from monitor import wiring
from monitor.checks.engine import Checker
from monitor.config import Config, Target
from monitor.core import errors
from monitor.core.claims import Claim
from monitor.core.diagnoses import Diagnosed
from monitor.core.incidents import Incident, Pattern
from monitor.core.results import Checked, Result
from monitor.core.runs import Run, Step
from monitor.eval.scenario import Scenario
from monitor.eval.scores import progress_line as progress_line  # the CLI reads these here
from monitor.eval.scores import render as render
from monitor.eval.scores import report
from monitor.eval.scores import tables as tables
from monitor.eval.servers import Behaviour
from monitor.eval.verdict import BASELINE, Verdict
from monitor.incidents import patterns
from monitor.incidents.recorder import Recorder
from monitor.incidents.writer import Writer
from monitor.store import Store

if TYPE_CHECKING:
    from monitor.checks.heartbeat import Heartbeats

INFRA_STATES = ("model_error", "timeout", "crashed")
SPEAKING_TOOLS = {"record_diagnosis", "final_answer"}  # what the model says, not what it was shown
DAY = 86400.0


# -- running one scenario -----------------------------------------------------------------------


class ShiftedClock:
    """The store's clock: real time, or ``ago`` seconds earlier while the past is seeded."""

    def __init__(self) -> None:
        self.ago = 0.0

    def __call__(self) -> float:
        return time.time() - self.ago


@dataclass
class Situation:
    """What the detectors saw before the agent started."""

    config: Config
    target: Target
    latest: Result
    found: list[Pattern]
    incident: Incident | None


@dataclass(frozen=True)
class Entrant:
    """The model a scenario is run on, and what :func:`run_scenario` was asked to give it (its options, embedder, judge)."""

    model_id: str
    api_base: str | None = None
    model_options: dict[str, Any] | None = None
    embedder: str | None = None
    judge: dict[str, Any] | None = None


def build_config(scenario: Scenario, target: Target, entrant: Entrant) -> Config:
    api_base, embedder, judge = entrant.api_base, entrant.embedder, entrant.judge
    model: dict[str, Any] = {**(entrant.model_options or {}), "id": entrant.model_id, **({"api_base": api_base} if api_base else {})}
    extra = dict(scenario.config)
    if embedder is not None:
        extra["memory"] = {**extra.get("memory", {}), "embedder": embedder}
    if judge is not None:  # memory.judge: what it says is recorded on each claim (judged); with no calibration, never asserted
        extra["memory"] = {**extra.get("memory", {}), "judge": judge}
    agent = {"max_steps": 8, "run_timeout": "5m", **extra.pop("agent", {})}
    return Config.model_validate(
        {"targets": [target.model_dump(by_alias=True)], "model": model, "agent": agent, "metrics": {"enabled": False}, **extra}
    )


def seed_incidents(incidents: Writer, scenario: Scenario, clock: ShiftedClock) -> None:
    """Past incidents in order (ids 1, 2, ...), each opened ``age`` ago and resolved 40 minutes later."""
    count = len(scenario.past_incidents)
    try:
        for index, past in enumerate(scenario.past_incidents):
            clock.ago = past.age if past.age is not None else (count - index) * 9 * DAY
            opened = incidents.open(past.target, past.pattern, past.summary)
            if opened is None:
                raise ValueError(f"past incidents: {past.target} has two open at once")
            incident = opened.incident.id
            if past.root_cause is not None:
                incidents.diagnose(
                    None,
                    incident,
                    Diagnosed(
                        diagnosis=past.diagnosis or past.summary,
                        root_cause=past.root_cause,
                        related_incident=None,
                        confidence="high",
                        suspected_cause=past.suspected_cause or "",
                    ),
                )
            elif past.diagnosis or past.suspected_cause:
                incidents.annotate(incident, diagnosis=past.diagnosis, suspected_cause=past.suspected_cause)
            if past.status == "resolved":
                clock.ago -= min(2400.0, clock.ago)
                incidents.resolve(incident, past.resolution)
    finally:
        clock.ago = 0.0


def seed_history(recorder: Recorder, scenario: Scenario, target: Target, now: float) -> None:
    """The history, oldest first, ``every`` apart, the newest ``every`` before ``now``."""
    entries = [entry for entry in scenario.history.results for _ in range(entry.times)]
    every = scenario.history.every
    results = []
    for age, entry in zip(range(len(entries), 0, -1), entries, strict=True):
        status = entry.status_code or (200 if entry.ok else None)
        detail = entry.detail or _detail(entry.error, status, target)
        severity = entry.severity or ("ok" if entry.ok else "critical")
        results.append(
            Result(
                name=target.name,
                url=target.url,
                ok=entry.ok,
                severity=severity,
                status_code=status,
                latency_ms=entry.latency_ms,
                error=entry.error,
                detail=detail,
                checked_at=now - age * every,
            )
        )
    if results:
        recorder.record(results, detect=False)  # the past: the detectors read it with the check that follows


def seed_pings(store: Store, scenario: Scenario, target: Target, now: float) -> Heartbeats | None:
    """A heartbeat target's pings: monitored for a week, the last ping ``last_ping`` ago, maybe a /fail after."""
    if target.kind != "heartbeat":
        return None
    from monitor.checks.heartbeat import Heartbeats

    serve, at = scenario.serve, [now - 7 * DAY]
    job = Heartbeats(store, [target], clock=lambda: at[0])  # pings sent as a job sends them, in the past
    assert target.heartbeat is not None
    token = target.heartbeat.token.get_secret_value()
    if serve.last_ping is not None:
        at[0] = now - serve.last_ping
        job.record(token, "ping")
        if serve.failed:
            at[0] = now - serve.last_ping / 2
            job.record(token, "fail", serve.message)
    return Heartbeats(store, [target])


def _detail(error: str | None, status: int | None, target: Target) -> str:
    if error == errors.STATUS:
        return f"status {status} not in expected codes"
    if error == errors.TIMEOUT:
        return f"no complete answer within {target.timeout:g}s"
    return {
        errors.REFUSED: "connection refused",
        errors.RESET: "connection reset by peer",
        errors.DNS: "name does not resolve: Name or service not known",
        errors.REDIRECTS: f"more than {target.max_redirects} redirects",
    }.get(error or "", f"status {status}")


def prepare(scenario: Scenario, store: Store, clock: ShiftedClock, server: Behaviour, entrant: Entrant) -> Situation:
    """Seed the past, check the target once, and let the real detectors open the incident."""
    target = scenario.target_for(server.url_for(scenario.target), server.ca_file, server.dns_address)
    config = build_config(scenario, target, entrant)
    target = config.target(target.name)
    parts = wiring.incidents(config, store)
    seed_incidents(parts.writer, scenario, clock)
    seed_history(parts.recorder, scenario, target, time.time())
    beats = seed_pings(store, scenario, target, time.time())
    [latest] = Checker(concurrency=1, heartbeats=beats).run([target])
    [(_, found, events)] = parts.recorder.record([latest]) or [(latest, [], [])]
    opened = next((e.incident for e in events if e.kind in ("opened", "updated")), None)
    # one the seeded history opened is the incident too: the live check added to it without changing it
    opened = opened or next(iter(store.incidents.open_incidents(target.name)), None)
    return Situation(config, target, latest, found, opened)


def detector_verdict(verdict: Verdict, store: Store, situation: Situation) -> Verdict:
    """The ``detector only`` row: the alert's own root cause, no memory, always actionable."""
    rows = store.results.recent_results(situation.target.name, 200)
    pattern = situation.incident.pattern if situation.incident else (situation.found[0].name if situation.found else None)
    verdict.root_cause = alert_cause(pattern, next((r for r in rows if not r.ok), None))
    verdict.not_actionable = frozenset()
    verdict.state, verdict.pattern = "alert" if situation.incident else "no alert", pattern
    verdict.incident = situation.incident.id if situation.incident else None
    return verdict


def alert_cause(pattern: str | None, failing: Checked | None) -> str:
    """A root cause from a detector's pattern, else from the latest failing result's error kind."""
    if failing is None:
        return patterns.root_cause_of(None, pattern=pattern or "") if pattern in ("latency_drift", "flapping") else "unknown"
    return patterns.root_cause_of(failing.error, failing.status_code, failing.detail or "", pattern or "")


def investigate(verdict: Verdict, scenario: Scenario, store: Store, situation: Situation) -> Verdict:
    """Run the agent on the situation and read its run back from the store."""
    from monitor.agent.tools import format_result

    incident = situation.incident
    investigator = wiring.investigator(situation.config, store)
    started = time.perf_counter()
    outcome = investigator.investigate(
        situation.target.name,
        incident=incident.id if incident else None,
        pattern=incident.pattern if incident else "manual",
        summary=(incident.summary or "") if incident else "no detector fired; asked to look at the target",
        latest=format_result(situation.latest),
    )
    verdict.seconds = time.perf_counter() - started
    verdict.recall_seconds, verdict.judge_seconds = outcome.spent.get("recall", 0.0), outcome.spent.get("judge")
    verdict.incident, verdict.pattern = (incident.id, incident.pattern) if incident else (None, "manual")
    run = store.runs.run(outcome.run_id)
    assert run is not None, f"agent run #{outcome.run_id} is gone"  # investigate() started it in this store
    read_run(verdict, scenario, run, store.runs.steps(outcome.run_id))
    verdict.state, verdict.answer = outcome.state, outcome.answer
    if outcome.state in INFRA_STATES:
        verdict.infra_error = f"{outcome.state}: {outcome.error or 'no detail'}"
    return verdict


def read_run(verdict: Verdict, scenario: Scenario, run: Run, steps: list[Step]) -> None:
    """Fill the verdict from a stored run and its steps."""
    verdict.root_cause, verdict.related_incident = run.root_cause, run.related_incident
    verdict.claim = Claim.from_json(run.claim)
    asserted = [verdict.related_incident] if verdict.related_incident is not None else []
    verdict.suggested = asserted + [s.id for s in (verdict.claim.suggested if verdict.claim else ()) if s.id not in asserted]
    verdict.input_tokens, verdict.output_tokens = run.input_tokens or 0, run.output_tokens or 0
    actions = [s for s in steps if s.kind == "action"]
    seen = [s.observations or "" for s in steps if s.kind == "recall"]
    for step in actions:
        names = [c.get("name") for c in _calls(step)]
        verdict.valid_calls += int(step.error is None and bool(names))
        verdict.tools += [n for n in names if isinstance(n, str) and n not in verdict.tools]
        if names and not set(names) <= SPEAKING_TOOLS:
            seen.append(step.observations or "")
    verdict.steps = len(actions)
    expect = scenario.expect
    if expect.related:
        verdict.recalled = any(_names_incident(text, f"#{mark}") for text in seen for mark in expect.related)
    verdict.tools_required_ok = set(expect.tools_required) <= set(verdict.tools) if expect.tools_required else None
    verdict.tools_forbidden_ok = not set(expect.tools_forbidden) & set(verdict.tools) if expect.tools_forbidden else None


def _calls(step: Step) -> list[dict[str, Any]]:
    try:
        calls = json.loads(step.tool_calls or "[]")
    except ValueError:
        return []
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _names_incident(text: str, mark: str) -> bool:
    """``#1`` is named in "see #1." but not in "#12"."""
    return re.search(re.escape(mark) + r"(?!\d)", text) is not None


def run_scenario(
    scenario: Scenario,
    model_id: str,
    *,
    api_base: str | None = None,
    model_options: dict[str, Any] | None = None,
    embedder: str | None = None,
    judge: dict[str, Any] | None = None,
) -> tuple[Verdict, Verdict]:
    """One scenario on one model, in its own temp dir: (the model's verdict, the detector-only verdict).

    ``model_options`` are further ``model`` config fields, e.g. ``{"timeout": "120s", "retries": 0}``;
    ``embedder`` replaces ``memory.embedder`` (``none``: recall by full text only); ``judge`` is ``memory.judge``.
    """
    from monitor.incidents.patterns import NOT_ACTIONABLE

    verdict = Verdict.expecting(scenario, NOT_ACTIONABLE)
    detected = Verdict.expecting(scenario, frozenset())
    entrant = Entrant(model_id, api_base, model_options, embedder, judge)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"monitor-eval-{scenario.name}-") as workdir:
        try:
            tls = scenario.target.tls
            with Behaviour(scenario.serve, workdir, server_name=tls.server_name if tls else None) as server:
                clock = ShiftedClock()
                store = wiring.store(Path(workdir) / "eval.db", clock=clock)
                try:
                    situation = prepare(scenario, store, clock, server, entrant)
                    detector_verdict(detected, store, situation)
                    investigate(verdict, scenario, store, situation)
                finally:
                    store.close()
        except Exception as exc:  # the harness failed, not the model: report it as such
            verdict.infra_error = f"harness: {type(exc).__name__}: {exc}"
            verdict.state = "harness_error"
            if detected.state == "not run":
                detected.infra_error, detected.state = verdict.infra_error, verdict.state
    if not verdict.seconds:
        verdict.seconds = time.perf_counter() - started
    return verdict, detected


# -- the suite --------------------------------------------------------------------------------


def evaluate(
    scenarios: Sequence[Scenario],
    models: Sequence[str] = ("builtin",),
    *,
    api_base: str | None = None,
    baseline: bool = True,
    model_options: dict[str, Any] | None = None,
    embedder: str | None = None,
    judge: dict[str, Any] | None = None,
    progress: Callable[[str, Verdict], None] | None = None,
) -> dict[str, Any]:
    """Run every scenario on every model; the JSON-ready report (see ``report``). ``judge``: ``memory.judge`` for
    every scenario (``{"model": ..., "api_base": ...}``); its verdicts are scored (``scores["judge"]``)."""
    verdicts: dict[str, list[Verdict]] = {model: [] for model in models}
    detected: list[Verdict] = []
    for number, model in enumerate(models):
        for scenario in scenarios:
            verdict, alert = run_scenario(scenario, model, api_base=api_base, model_options=model_options, embedder=embedder, judge=judge)
            verdicts[model].append(verdict)
            if number == 0:
                detected.append(alert)
            if progress is not None:
                progress(model, verdict)
    rows = ([(BASELINE, detected)] if baseline else []) + list(verdicts.items())
    return report(rows)
