"""The diagnosis eval's scores: what a model's verdicts add up to, and how they are shown.

Each stored run is scored against its scenario's ``expect``, deterministically::

    root_cause_accuracy   run.root_cause is one of the expected labels
    actionable_accuracy   its root cause is (not) in NOT_ACTIONABLE as expected
    memory_hit_at_1       run.related_incident is the expected past incident, or one of them (scenarios that have one)
    first_shown           what a person sees first, the asserted incident, else the first suggested, is an expected one
    suggested_at_3        that incident is among the first three asserted or suggested (scenarios that have one)
    recall_at_k           that incident's #id was in front of the model: recalled, or in a tool observation
    false_recall          it asserted a related incident that is not the expected one (all scenarios)
    false_alarm_rate      scenarios expected not actionable that it left actionable
    valid_tool_calls      action steps whose tool call parsed and ran, over all action steps
    diagnosis_recorded    run.root_cause is set
    success               the run ended in 'success'
    tools_required / tools_forbidden_absent

plus median steps, token sums, p50/p95 wall time, p50/p95 seconds in recall and in judging per investigation, and
``infra_errors``; with a judge (``monitor eval --judge``), ``judge``: its picks and the memory with it allowed to vouch
(:mod:`monitor.eval.judging`).
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from monitor.eval import judging
from monitor.eval.judging import percentile as _percentile
from monitor.eval.verdict import BASELINE, Verdict


def report(rows: Iterable[tuple[str, list[Verdict]]]) -> dict[str, Any]:
    """``{"models": [{"model", "baseline", "scores", "by_tag", "scenarios"}], "hardware", "date"}``."""
    models = []
    for model, verdicts in rows:
        baseline = model == BASELINE
        tags = sorted({tag for v in verdicts for tag in v.tags})
        models.append(
            {
                "model": model,
                "baseline": baseline,
                "scores": score(verdicts, baseline=baseline),
                "by_tag": {tag: score([v for v in verdicts if tag in v.tags], baseline=baseline) for tag in tags},
                "scenarios": [v.to_dict() for v in verdicts],
            }
        )
    return {"models": models, "hardware": hardware(), "date": datetime.now(UTC).isoformat(timespec="seconds")}


def _rate(flags: Iterable[bool]) -> dict[str, Any]:
    values = list(flags)
    hits = sum(values)
    return {"rate": hits / len(values) if values else None, "hits": hits, "of": len(values)}


def score(verdicts: Sequence[Verdict], *, baseline: bool = False) -> dict[str, Any]:
    """Every score of one model over some scenarios; rates are ``{"rate", "hits", "of"}``, None when nothing counts.

    The detector-only row has no run: its tool, step, token and time scores are None.
    """
    related = [v for v in verdicts if v.expected_ids]
    quiet = [v for v in verdicts if not v.expected_actionable]
    scores: dict[str, Any] = {
        "scenarios": len(verdicts),
        "root_cause_accuracy": _rate(v.correct for v in verdicts),
        "actionable_accuracy": _rate(v.actionable == v.expected_actionable for v in verdicts),
        "memory_hit_at_1": _rate(v.memory_hit for v in related),
        "first_shown": _rate(v.first_shown for v in related),
        "suggested_at_3": _rate(v.suggested_at_3 for v in related),
        "false_recall": _rate(v.false_recall for v in verdicts),
        "false_alarm_rate": _rate(v.actionable for v in quiet),
        "infra_errors": sum(v.infra_error is not None for v in verdicts),
    }
    if baseline:
        return {**scores, **dict.fromkeys(RUN_SCORES)}
    return {**scores, **_run_scores(verdicts, related)}


RUN_SCORES = (
    "recall_at_k",
    "valid_tool_calls",
    "diagnosis_recorded",
    "success",
    "tools_required",
    "tools_forbidden_absent",
    "median_steps",
    "input_tokens",
    "output_tokens",
    "p50_seconds",
    "p95_seconds",
    "recall_p50_seconds",
    "recall_p95_seconds",
    "judge_p50_seconds",
    "judge_p95_seconds",
    "judge",
)


def _run_scores(verdicts: Sequence[Verdict], related: Sequence[Verdict]) -> dict[str, Any]:
    """The scores of the agent's runs themselves: the detector-only row has none."""
    required = [v.tools_required_ok for v in verdicts if v.tools_required_ok is not None]
    forbidden = [v.tools_forbidden_ok for v in verdicts if v.tools_forbidden_ok is not None]
    seconds = [v.seconds for v in verdicts]
    calls = sum(v.steps for v in verdicts)
    return {
        "recall_at_k": _rate(bool(v.recalled) for v in related),
        "valid_tool_calls": {
            "rate": sum(v.valid_calls for v in verdicts) / calls if calls else None,
            "hits": sum(v.valid_calls for v in verdicts),
            "of": calls,
        },
        "diagnosis_recorded": _rate(v.root_cause is not None for v in verdicts),
        "success": _rate(v.state == "success" for v in verdicts),
        "tools_required": _rate(required),
        "tools_forbidden_absent": _rate(forbidden),
        "median_steps": statistics.median(v.steps for v in verdicts) if verdicts else None,
        "input_tokens": sum(v.input_tokens for v in verdicts),
        "output_tokens": sum(v.output_tokens for v in verdicts),
        "p50_seconds": _percentile(seconds, 0.5),
        "p95_seconds": _percentile(seconds, 0.95),
        **judging.timings(verdicts),
        "judge": judging.judge_scores(verdicts),
    }


def hardware() -> dict[str, Any]:
    """Where the numbers were measured."""
    from importlib.metadata import PackageNotFoundError, version

    cpu = next(
        (line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines() if line.startswith("model name")),
        platform.processor() or platform.machine(),
    )
    memory = next((int(line.split()[1]) // 1024 for line in _read("/proc/meminfo").splitlines() if line.startswith("MemTotal:")), None)
    versions: dict[str, str | None] = {}
    for package in ("monitor-agent", "smolagents", "litellm"):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            versions[package] = None
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory_mb": memory,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "packages": versions,
    }


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


def _shown(value: Any, digits: int = 1) -> str:
    """A score as the table shows it: a rate as hits/of, a float to ``digits`` places, "-" for none."""
    return _frac(value) if isinstance(value, dict) else _num(value, digits)


SCORE_ROWS = {  # label: the score's key
    "scenarios": "scenarios",
    "root cause": "root_cause_accuracy",
    "actionable": "actionable_accuracy",
    "memory hit@1": "memory_hit_at_1",
    "suggested@3": "suggested_at_3",
    "recall@k": "recall_at_k",
    "false recall": "false_recall",
    "false alarm (noise)": "false_alarm_rate",
    "success": "success",
    "diagnosis recorded": "diagnosis_recorded",
    "valid tool calls": "valid_tool_calls",
    "tools required": "tools_required",
    "no forbidden tool": "tools_forbidden_absent",
    "steps (median)": "median_steps",
    "tokens in": "input_tokens",
    "tokens out": "output_tokens",
    "wall p50 (s)": "p50_seconds",
    "wall p95 (s)": "p95_seconds",
    "recall p50 (s)": "recall_p50_seconds",
    "recall p95 (s)": "recall_p95_seconds",
    "judge p50 (s)": "judge_p50_seconds",
    "judge p95 (s)": "judge_p95_seconds",
    "infra errors": "infra_errors",
}
DIGITS = {  # the places a float is shown to, where not one: seconds to the hundredth, recall's to the thousandth
    "p50_seconds": 2,
    "p95_seconds": 2,
    "recall_p50_seconds": 3,
    "recall_p95_seconds": 3,
    "judge_p50_seconds": 2,
    "judge_p95_seconds": 2,
}
TAG_SCORES = [("root cause", "root_cause_accuracy"), ("hit@1", "memory_hit_at_1"), ("false recall", "false_recall")]


def tables(data: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """The report as (title, headers, rows) tables, for rich or plain text: scores, by tag, per scenario."""
    models = data["models"]
    scores = [[label] + [_shown(m["scores"][key], DIGITS.get(key, 1)) for m in models] for label, key in SCORE_ROWS.items()]
    tags = sorted({tag for m in models for tag in m["by_tag"]})
    columns = [(m, label, key) for m in models for label, key in (TAG_SCORES[:1] if m["baseline"] else TAG_SCORES)]
    by_tag = [
        [tag, str(next(m["by_tag"][tag]["scenarios"] for m in models if tag in m["by_tag"]))]
        + [_frac(m["by_tag"].get(tag, {}).get(key)) for m, _, key in columns]
        for tag in tags
    ]
    out = [
        ("Scores (hits/of)", ["score", *(m["model"] for m in models)], scores),
        ("By tag", ["tag", "n", *(f"{m['model']} {label}" for m, label, _ in columns)], by_tag),
    ]
    judged = judging.table(models)
    if judged is not None:
        out.append(judged)
    for m in models:
        rows = [_scenario_row(s, m["baseline"]) for s in m["scenarios"]]
        out.append((f"Scenarios: {m['model']}", ["scenario", "expected", "got", "related exp/got", "verdict", "state", "steps", "s"], rows))
    return out


def _scenario_row(s: dict[str, Any], baseline: bool) -> list[str]:
    expected, got = s["expected"], s["got"]
    misses = [
        what
        for what, missed in (
            ("cause", not s["correct"]),
            ("memory", not s.get("memory_hit", got["related_incident"] == expected["related_incident"])),
        )
        if missed
    ]
    verdict = "infra" if s["infra_error"] else "miss: " + ", ".join(misses) if misses else "ok"
    related = f"{_ref(expected['related_incident'])}/{_ref(got['related_incident'])}"
    suggested = [i for i in got.get("suggested") or [] if i != got["related_incident"]][:3]
    if suggested and got["related_incident"] is None and not baseline:  # "#2/none~#2,#4": suggested, not asserted
        related += "~" + ",".join(f"#{i}" for i in suggested)
    return [
        s["scenario"],
        "|".join(expected["root_cause"]),
        got["root_cause"] or "-",
        related,
        verdict,
        s["state"] if not s["infra_error"] else s["infra_error"][:60],
        "-" if baseline else str(s["steps"]),
        "-" if baseline else f"{s['seconds']:.2f}",
    ]


def _ref(incident: int | list[int] | None) -> str:
    if isinstance(incident, list):
        return "|".join(f"#{i}" for i in incident)
    return f"#{incident}" if incident is not None else "none"


def render(data: dict[str, Any], *, rich: bool | None = None, file: TextIO | None = None) -> None:
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
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [headers, ["-" * w for w in widths], *rows]
    ]
    return "\n".join(lines)


def progress_line(model: str, verdict: Verdict) -> str:
    outcome = (
        "infra error: " + verdict.infra_error
        if verdict.infra_error
        else (f"{verdict.root_cause or '-'} ({'ok' if verdict.correct else 'expected ' + '|'.join(verdict.expected_root_cause)})")
    )
    memory = (
        f"memory: expected {_ref(verdict.expected_related)}, asserted {_ref(verdict.related_incident)}, "
        f"suggested {','.join(f'#{i}' for i in verdict.suggested) or 'none'}"
    )
    judged = verdict.judged
    if judged is not None:
        picked = f"#{judged['picked']}" if judged.get("picked") is not None else "none"
        memory += f", judge {picked}" + (f" (void: {judged['void']})" if judged.get("void") else "")
    return f"{model}: {verdict.scenario}: {outcome}, {memory}, {verdict.state}, {verdict.seconds:.2f}s"
