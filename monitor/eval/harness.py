"""The diagnosis eval: run scenarios against models, score what they diagnosed, print and export it.

Each scenario (see ``monitor/eval/scenario.py``) runs for real, the way the daemon
would meet it: a fresh SQLite store in a temp dir, the target's behaviour on
loopback, past incidents and check history seeded, one live check, the real
detectors opening the incident, then ``Investigator.investigate`` with its real
tools. Nothing is mocked: a model that re-checks the target hits the loopback
server. The stored run is then scored against ``expect``, deterministically::

    root_cause_accuracy   run.root_cause is one of the expected labels
    actionable_accuracy   its root cause is (not) in NOT_ACTIONABLE as expected
    memory_hit_at_1       run.related_incident is the expected past incident (scenarios that have one)
    recall_at_k           that incident's #id was in front of the model: recalled, or in a tool observation
    false_recall          it named a related incident that is not the expected one (all scenarios)
    false_alarm_rate      scenarios expected not actionable that it left actionable
    valid_tool_calls      action steps whose tool call parsed and ran, over all action steps
    diagnosis_recorded    run.root_cause is set
    success               the run ended in 'success'
    tools_required / tools_forbidden_absent

plus median steps, token sums, p50/p95 wall time and ``infra_errors``: runs that
ended in model_error, timeout or crashed, or a harness exception. An infra error
scores as a miss like any run without a diagnosis, and is counted in its own
column so it is never mistaken silently for a wrong diagnosis.

The ``detector only`` row is what the alerts alone say, with no model: a root
cause from the incident's pattern or the latest failing result's error kind,
no related incident, and always actionable.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from monitor.checks import engine as checks
from monitor.checks.engine import Result
from monitor.config import Config, Target
from monitor.eval.scenario import Behaviour, Scenario
from monitor.incidents import patterns
from monitor.incidents.patterns import Pattern
from monitor.store import Store

BASELINE = "detector only"
INFRA_STATES = ("model_error", "timeout", "crashed")
SPEAKING_TOOLS = {"record_diagnosis", "final_answer"}  # what the model says, not what it was shown
DAY = 86400.0


@dataclass
class Verdict:
    """What one model (or the detectors alone) concluded on one scenario, beside what was expected."""

    scenario: str
    tags: list[str]
    expected_root_cause: list[str]
    expected_related: int | None
    expected_actionable: bool
    not_actionable: frozenset[str] = frozenset({"recovered"})
    root_cause: str | None = None
    related_incident: int | None = None
    state: str = "not run"
    steps: int = 0
    valid_calls: int = 0
    tools: list[str] = field(default_factory=list)
    recalled: bool | None = None
    tools_required_ok: bool | None = None
    tools_forbidden_ok: bool | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    infra_error: str | None = None
    incident: int | None = None
    pattern: str | None = None
    answer: str | None = None

    @classmethod
    def expecting(cls, scenario: Scenario, not_actionable: frozenset[str]) -> Verdict:
        expect = scenario.expect
        return cls(scenario.name, list(scenario.tags), list(expect.root_cause), expect.related_incident,
                   expect.actionable, not_actionable)

    @property
    def correct(self) -> bool:
        return self.root_cause in self.expected_root_cause

    @property
    def actionable(self) -> bool:
        """A run with no root cause leaves the alert as it was: actionable."""
        return self.root_cause not in self.not_actionable

    @property
    def false_recall(self) -> bool:
        return self.related_incident is not None and self.related_incident != self.expected_related

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("not_actionable")
        expected = {"root_cause": data.pop("expected_root_cause"), "related_incident": data.pop("expected_related"),
                    "actionable": data.pop("expected_actionable")}
        return {"scenario": data.pop("scenario"), "tags": data.pop("tags"), "expected": expected,
                "got": {"root_cause": data.pop("root_cause"), "related_incident": data.pop("related_incident"),
                        "actionable": self.actionable},
                "correct": self.correct, "false_recall": self.false_recall, **data}


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
    incident: dict[str, Any] | None


def build_config(scenario: Scenario, target: Target, model_id: str, api_base: str | None,
                 model_options: dict[str, Any] | None = None) -> Config:
    model: dict[str, Any] = {**(model_options or {}), "id": model_id, **({"api_base": api_base} if api_base else {})}
    extra = dict(scenario.config)
    agent = {"max_steps": 8, "run_timeout": "5m", **extra.pop("agent", {})}
    return Config.model_validate({"targets": [target.model_dump(by_alias=True)], "model": model, "agent": agent,
                                  "metrics": {"enabled": False}, **extra})


def seed_incidents(store: Store, scenario: Scenario, clock: ShiftedClock) -> None:
    """Past incidents in order (ids 1, 2, ...), each opened ``age`` ago and resolved 40 minutes later."""
    count = len(scenario.past_incidents)
    try:
        for index, past in enumerate(scenario.past_incidents):
            clock.ago = past.age if past.age is not None else (count - index) * 9 * DAY
            incident = store.open_incident(past.target, past.pattern, past.summary)
            if past.root_cause is not None:
                store.record_diagnosis(None, incident, diagnosis=past.diagnosis or past.summary,
                                       root_cause=past.root_cause, related_incident=None, confidence="high",
                                       suspected_cause=past.suspected_cause or "")
            elif past.diagnosis or past.suspected_cause:
                store.update_incident(incident, diagnosis=past.diagnosis, suspected_cause=past.suspected_cause)
            if past.status == "resolved":
                clock.ago -= min(2400.0, clock.ago)
                store.close_incident(incident, past.resolution)
    finally:
        clock.ago = 0.0


def seed_history(store: Store, scenario: Scenario, target: Target, now: float) -> None:
    """The history, oldest first, ``every`` apart, the newest ``every`` before ``now``."""
    entries = [entry for entry in scenario.history.results for _ in range(entry.times)]
    every = scenario.history.every
    results = []
    for age, entry in zip(range(len(entries), 0, -1), entries, strict=True):
        status = entry.status_code or (200 if entry.ok else None)
        detail = entry.detail or _detail(entry.error, status, target)
        severity = entry.severity or ("ok" if entry.ok else "critical")
        results.append(Result(name=target.name, url=target.url, ok=entry.ok, severity=severity,
                              status_code=status, latency_ms=entry.latency_ms, error=entry.error,
                              detail=detail, checked_at=now - age * every))
    if results:
        store.add_results(results)


def seed_pings(store: Store, scenario: Scenario, target: Target, now: float) -> Any:
    """A heartbeat target's pings: monitored for a week, the last ping ``last_ping`` ago, maybe a /fail after."""
    if target.kind != "heartbeat":
        return None
    from monitor.checks.heartbeat import Heartbeats

    serve = scenario.serve
    store.watch_heartbeats([target.name], now - 7 * DAY)
    if serve.last_ping is not None:
        store.record_ping(target.name, "ping", now - serve.last_ping)
        if serve.failed:
            store.record_ping(target.name, "fail", now - serve.last_ping / 2)
    return Heartbeats(store, [target])


def _detail(error: str | None, status: int | None, target: Target) -> str:
    if error == checks.STATUS:
        return f"status {status} not in expected codes"
    if error == checks.TIMEOUT:
        return f"no complete answer within {target.timeout:g}s"
    return {checks.REFUSED: "connection refused", checks.RESET: "connection reset by peer",
            checks.DNS: "name does not resolve: Name or service not known",
            checks.REDIRECTS: f"more than {target.max_redirects} redirects"}.get(error or "", f"status {status}")


def prepare(scenario: Scenario, store: Store, clock: ShiftedClock, server: Behaviour, model_id: str,
            api_base: str | None, model_options: dict[str, Any] | None = None) -> Situation:
    """Seed the past, check the target once, and let the real detectors open the incident."""
    from monitor.incidents.tracker import Tracker

    target = scenario.target_for(server.url_for(scenario.target), server.ca_file, server.dns_address)
    config = build_config(scenario, target, model_id, api_base, model_options)
    target = config.target(target.name)
    seed_incidents(store, scenario, clock)
    seed_history(store, scenario, target, time.time())
    beats = seed_pings(store, scenario, target, time.time())
    [latest] = checks.Checker(concurrency=1, heartbeats=beats).run([target])
    store.add_results([latest])
    found, events = Tracker(store, config.detectors).observe(target.name)
    opened = next((e.incident for e in events if e.kind in ("opened", "updated")), None)
    return Situation(config, target, latest, found, opened)


def detector_verdict(verdict: Verdict, store: Store, situation: Situation) -> Verdict:
    """The ``detector only`` row: the alert's own root cause, no memory, always actionable."""
    rows = store.recent_results(situation.target.name, 200)
    pattern = situation.incident["pattern"] if situation.incident else (
        situation.found[0].name if situation.found else None)
    verdict.root_cause = alert_cause(pattern, next((r for r in rows if not r["ok"]), None))
    verdict.not_actionable = frozenset()
    verdict.state, verdict.pattern = "alert" if situation.incident else "no alert", pattern
    verdict.incident = situation.incident["id"] if situation.incident else None
    return verdict


def alert_cause(pattern: str | None, failing: dict[str, Any] | None) -> str:
    """A root cause from a detector's pattern, else from the latest failing result's error kind."""
    if failing is None and pattern not in ("latency_drift", "flapping"):
        return "unknown"
    row = failing or {}
    return patterns.root_cause_of(row.get("error"), row.get("status_code"), row.get("detail") or "", pattern or "")


def investigate(verdict: Verdict, scenario: Scenario, store: Store, situation: Situation) -> Verdict:
    """Run the agent on the situation and read its run back from the store."""
    from monitor.agent.investigator import Investigator
    from monitor.agent.tools import format_result

    incident = situation.incident
    investigator = Investigator(situation.config, store)
    started = time.perf_counter()
    outcome = investigator.investigate(
        situation.target.name, incident=incident["id"] if incident else None,
        pattern=incident["pattern"] if incident else "manual",
        summary=incident["summary"] if incident else "no detector fired; asked to look at the target",
        latest=format_result(situation.latest))
    verdict.seconds = time.perf_counter() - started
    verdict.incident, verdict.pattern = (incident["id"], incident["pattern"]) if incident else (None, "manual")
    run = store.run(outcome.run_id) or {}
    read_run(verdict, scenario, run, store.steps(outcome.run_id))
    verdict.state, verdict.answer = outcome.state, outcome.answer
    if outcome.state in INFRA_STATES:
        verdict.infra_error = f"{outcome.state}: {outcome.error or 'no detail'}"
    return verdict


def read_run(verdict: Verdict, scenario: Scenario, run: dict[str, Any], steps: list[dict[str, Any]]) -> None:
    """Fill the verdict from a stored run and its steps."""
    verdict.root_cause, verdict.related_incident = run.get("root_cause"), run.get("related_incident")
    verdict.input_tokens, verdict.output_tokens = run.get("input_tokens") or 0, run.get("output_tokens") or 0
    actions = [s for s in steps if s["kind"] == "action"]
    seen = [s["observations"] or "" for s in steps if s["kind"] == "recall"]
    for step in actions:
        names = [c.get("name") for c in _calls(step)]
        verdict.valid_calls += int(step["error"] is None and bool(names))
        verdict.tools += [n for n in names if isinstance(n, str) and n not in verdict.tools]
        if names and not set(names) <= SPEAKING_TOOLS:
            seen.append(step["observations"] or "")
    verdict.steps = len(actions)
    expect = scenario.expect
    if expect.related_incident is not None:
        mark = f"#{expect.related_incident}"
        verdict.recalled = any(_names_incident(text, mark) for text in seen)
    verdict.tools_required_ok = set(expect.tools_required) <= set(verdict.tools) if expect.tools_required else None
    verdict.tools_forbidden_ok = not set(expect.tools_forbidden) & set(verdict.tools) if expect.tools_forbidden else None


def _calls(step: dict[str, Any]) -> list[dict[str, Any]]:
    try:
        calls = json.loads(step["tool_calls"] or "[]")
    except ValueError:
        return []
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def _names_incident(text: str, mark: str) -> bool:
    """``#1`` is named in "see #1." but not in "#12"."""
    return re.search(re.escape(mark) + r"(?!\d)", text) is not None


def run_scenario(scenario: Scenario, model_id: str, *, api_base: str | None = None,
                 model_options: dict[str, Any] | None = None) -> tuple[Verdict, Verdict]:
    """One scenario on one model, in its own temp dir: (the model's verdict, the detector-only verdict).

    ``model_options`` are further ``model`` config fields, e.g. ``{"timeout": "120s", "retries": 0}``.
    """
    from monitor.incidents.patterns import NOT_ACTIONABLE

    verdict = Verdict.expecting(scenario, NOT_ACTIONABLE)
    detected = Verdict.expecting(scenario, frozenset())
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"monitor-eval-{scenario.name}-") as workdir:
        try:
            with Behaviour(scenario.serve, workdir) as server:
                clock = ShiftedClock()
                store = Store(Path(workdir) / "eval.db", clock=clock)
                try:
                    situation = prepare(scenario, store, clock, server, model_id, api_base, model_options)
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


def evaluate(scenarios: Sequence[Scenario], models: Sequence[str] = ("builtin",), *, api_base: str | None = None,
             baseline: bool = True, model_options: dict[str, Any] | None = None,
             progress: Callable[[str, Verdict], None] | None = None) -> dict[str, Any]:
    """Run every scenario on every model; the JSON-ready report (see ``report``)."""
    verdicts: dict[str, list[Verdict]] = {model: [] for model in models}
    detected: list[Verdict] = []
    for number, model in enumerate(models):
        for scenario in scenarios:
            verdict, alert = run_scenario(scenario, model, api_base=api_base, model_options=model_options)
            verdicts[model].append(verdict)
            if number == 0:
                detected.append(alert)
            if progress is not None:
                progress(model, verdict)
    rows = ([(BASELINE, detected)] if baseline else []) + list(verdicts.items())
    return report(rows)


def report(rows: Iterable[tuple[str, list[Verdict]]]) -> dict[str, Any]:
    """``{"models": [{"model", "baseline", "scores", "by_tag", "scenarios"}], "hardware", "date"}``."""
    models = []
    for model, verdicts in rows:
        baseline = model == BASELINE
        tags = sorted({tag for v in verdicts for tag in v.tags})
        models.append({
            "model": model, "baseline": baseline, "scores": score(verdicts, baseline=baseline),
            "by_tag": {tag: score([v for v in verdicts if tag in v.tags], baseline=baseline) for tag in tags},
            "scenarios": [v.to_dict() for v in verdicts],
        })
    return {"models": models, "hardware": hardware(), "date": datetime.now(UTC).isoformat(timespec="seconds")}


def _rate(flags: Iterable[bool]) -> dict[str, Any]:
    values = list(flags)
    hits = sum(values)
    return {"rate": hits / len(values) if values else None, "hits": hits, "of": len(values)}


def _percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 3)  # nearest rank


def score(verdicts: Sequence[Verdict], *, baseline: bool = False) -> dict[str, Any]:
    """Every score of one model over some scenarios; rates are ``{"rate", "hits", "of"}``, None when nothing counts.

    The detector-only row has no run: its tool, step, token and time scores are None.
    """
    related = [v for v in verdicts if v.expected_related is not None]
    quiet = [v for v in verdicts if not v.expected_actionable]
    scores: dict[str, Any] = {
        "scenarios": len(verdicts),
        "root_cause_accuracy": _rate(v.correct for v in verdicts),
        "actionable_accuracy": _rate(v.actionable == v.expected_actionable for v in verdicts),
        "memory_hit_at_1": _rate(v.related_incident == v.expected_related for v in related),
        "false_recall": _rate(v.false_recall for v in verdicts),
        "false_alarm_rate": _rate(v.actionable for v in quiet),
        "infra_errors": sum(v.infra_error is not None for v in verdicts),
    }
    if baseline:
        return {**scores, **dict.fromkeys(("recall_at_k", "valid_tool_calls", "diagnosis_recorded", "success",
                                           "tools_required", "tools_forbidden_absent", "median_steps",
                                           "input_tokens", "output_tokens", "p50_seconds", "p95_seconds"))}
    required = [v.tools_required_ok for v in verdicts if v.tools_required_ok is not None]
    forbidden = [v.tools_forbidden_ok for v in verdicts if v.tools_forbidden_ok is not None]
    seconds = [v.seconds for v in verdicts]
    calls = sum(v.steps for v in verdicts)
    return {
        **scores,
        "recall_at_k": _rate(bool(v.recalled) for v in related),
        "valid_tool_calls": {"rate": sum(v.valid_calls for v in verdicts) / calls if calls else None,
                             "hits": sum(v.valid_calls for v in verdicts), "of": calls},
        "diagnosis_recorded": _rate(v.root_cause is not None for v in verdicts),
        "success": _rate(v.state == "success" for v in verdicts),
        "tools_required": _rate(required),
        "tools_forbidden_absent": _rate(forbidden),
        "median_steps": statistics.median(v.steps for v in verdicts) if verdicts else None,
        "input_tokens": sum(v.input_tokens for v in verdicts),
        "output_tokens": sum(v.output_tokens for v in verdicts),
        "p50_seconds": _percentile(seconds, 0.5),
        "p95_seconds": _percentile(seconds, 0.95),
    }


def hardware() -> dict[str, Any]:
    """Where the numbers were measured."""
    from importlib.metadata import PackageNotFoundError, version

    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or platform.machine())
    memory = next((int(line.split()[1]) // 1024 for line in _read("/proc/meminfo").splitlines()
                   if line.startswith("MemTotal:")), None)
    versions: dict[str, str | None] = {}
    for package in ("monitor-agent", "smolagents", "litellm"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return {"cpu": cpu, "cpus": os.cpu_count(), "memory_mb": memory, "platform": platform.platform(),
            "python": platform.python_version(), "packages": versions}


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


# -- output -----------------------------------------------------------------------------------


def _frac(value: dict[str, Any] | None) -> str:
    if not value or value["rate"] is None:
        return "-"
    return f"{value['hits']}/{value['of']}"


def _num(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}" if isinstance(value, float) else str(value)


SCORE_ROWS = [  # (label, key, how to show it)
    ("scenarios", "scenarios", str), ("root cause", "root_cause_accuracy", None),
    ("actionable", "actionable_accuracy", None), ("memory hit@1", "memory_hit_at_1", None),
    ("recall@k", "recall_at_k", None), ("false recall", "false_recall", None),
    ("false alarm (noise)", "false_alarm_rate", None), ("success", "success", None),
    ("diagnosis recorded", "diagnosis_recorded", None), ("valid tool calls", "valid_tool_calls", None),
    ("tools required", "tools_required", None), ("no forbidden tool", "tools_forbidden_absent", None),
    ("steps (median)", "median_steps", lambda v: _num(v)), ("tokens in", "input_tokens", lambda v: _num(v)),
    ("tokens out", "output_tokens", lambda v: _num(v)), ("wall p50 (s)", "p50_seconds", lambda v: _num(v, 2)),
    ("wall p95 (s)", "p95_seconds", lambda v: _num(v, 2)), ("infra errors", "infra_errors", str),
]
TAG_SCORES = [("root cause", "root_cause_accuracy"), ("hit@1", "memory_hit_at_1"), ("false recall", "false_recall")]


def tables(data: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """The report as (title, headers, rows) tables, for rich or plain text: scores, by tag, per scenario."""
    models = data["models"]
    scores = [[label] + [(show or _frac)(m["scores"][key]) for m in models] for label, key, show in SCORE_ROWS]
    tags = sorted({tag for m in models for tag in m["by_tag"]})
    columns = [(m, label, key) for m in models for label, key in (TAG_SCORES[:1] if m["baseline"] else TAG_SCORES)]
    by_tag = [[tag, str(next(m["by_tag"][tag]["scenarios"] for m in models if tag in m["by_tag"]))]
              + [_frac(m["by_tag"].get(tag, {}).get(key)) for m, _, key in columns] for tag in tags]
    out = [("Scores (hits/of)", ["score", *(m["model"] for m in models)], scores),
           ("By tag", ["tag", "n", *(f"{m['model']} {label}" for m, label, _ in columns)], by_tag)]
    for m in models:
        rows = [_scenario_row(s, m["baseline"]) for s in m["scenarios"]]
        out.append((f"Scenarios: {m['model']}", ["scenario", "expected", "got", "related exp/got", "verdict",
                                                  "state", "steps", "s"], rows))
    return out


def _scenario_row(s: dict[str, Any], baseline: bool) -> list[str]:
    expected, got = s["expected"], s["got"]
    misses = [what for what, missed in (("cause", not s["correct"]),
                                        ("memory", got["related_incident"] != expected["related_incident"])) if missed]
    verdict = "infra" if s["infra_error"] else "miss: " + ", ".join(misses) if misses else "ok"
    related = f"{_ref(expected['related_incident'])}/{_ref(got['related_incident'])}"
    return [s["scenario"], "|".join(expected["root_cause"]), got["root_cause"] or "-", related,
            verdict, s["state"] if not s["infra_error"] else s["infra_error"][:60],
            "-" if baseline else str(s["steps"]), "-" if baseline else f"{s['seconds']:.2f}"]


def _ref(incident: int | None) -> str:
    return f"#{incident}" if incident is not None else "none"


def render(data: dict[str, Any], *, rich: bool | None = None, file: Any = None) -> None:
    """Print the report: rich tables on a terminal, aligned plain text otherwise."""
    file = sys.stdout if file is None else file
    if rich is None:
        rich = file.isatty()
    if rich:
        from rich import box
        from rich.console import Console
        from rich.table import Table

        console = Console(file=file)
        for title, headers, rows in tables(data):
            table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD)
            for index, header in enumerate(headers):  # names may fold; figures stay whole
                widest = max((len(row[index]) for row in rows), default=1)
                table.add_column(header, overflow="fold", min_width=widest if index and widest <= 5 else None)
            for row in rows:
                table.add_row(*row)
            console.print(table)
        return
    for title, headers, rows in tables(data):
        print(f"{title}\n{plain(headers, rows)}\n", file=file)


def plain(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
             for row in [headers, ["-" * w for w in widths], *rows]]
    return "\n".join(lines)


def progress_line(model: str, verdict: Verdict) -> str:
    outcome = "infra error: " + verdict.infra_error if verdict.infra_error else (
        f"{verdict.root_cause or '-'} ({'ok' if verdict.correct else 'expected ' + '|'.join(verdict.expected_root_cause)})")
    return f"{model}: {verdict.scenario}: {outcome}, {verdict.state}, {verdict.seconds:.2f}s"
