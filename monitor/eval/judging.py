"""The judge of recall in the eval: what it said on each scenario, what that would make the memory say, the time
recall and judging take, and the calibration the judge earns (:mod:`monitor.memory.calibration`).

    timings(verdicts)     p50/p95 seconds per investigation in recall, and in judging where the judge was asked
    judge_scores(verdicts)
                          the judge's own picks (rows, right, wrong, none, void, failed), and the memory with the
                          judge allowed to vouch: asserted right and wrong, first shown
    calibration_of(model, scores)
                          the :class:`~monitor.memory.calibration.Calibration` those scores make
    table(models)         the report's "Judge" table

A *row* is a scenario on which the judge was asked and answered (:mod:`monitor.memory.calibration`). The memory
with the judge allowed asserts its checked pick where it has one (``claims.claim(vouched=...)``), else what recall
alone asserted; what a person sees first is then that pick, else the first incident asserted or suggested.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from monitor.eval.verdict import Verdict
from monitor.memory.calibration import MIN_ROWS, Calibration, wilson_upper
from monitor.memory.judge import prompt_digest

HELD_OUT = "unseen"  # the tag of the scenarios nobody tuned on


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank percentile, rounded to the millisecond; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q * len(ordered)) - 1)], 3)


def timings(verdicts: Sequence[Verdict]) -> dict[str, float | None]:
    """Seconds per investigation in recall (every run) and in judging (the runs where the judge was asked)."""
    recall = [v.recall_seconds for v in verdicts if v.state != "not run"]
    judged = [v.judge_seconds for v in verdicts if v.judge_seconds is not None]
    return {
        "recall_p50_seconds": percentile(recall, 0.5),
        "recall_p95_seconds": percentile(recall, 0.95),
        "judge_p50_seconds": percentile(judged, 0.5),
        "judge_p95_seconds": percentile(judged, 0.95),
    }


def pick(v: Verdict) -> int | None:
    """The judge's checked pick on this run: what the memory would assert on its word."""
    judged = v.judged
    if judged is None or judged.get("void") or not isinstance(judged.get("picked"), int):
        return None
    return int(judged["picked"])


def with_judge(v: Verdict) -> tuple[int | None, int | None]:
    """(what the memory asserts, what a person sees first) with the judge allowed to vouch."""
    vouched = pick(v)
    asserted = vouched if vouched is not None else v.related_incident
    first = vouched if vouched is not None else (v.suggested[0] if v.suggested else None)
    return asserted, first


def wrongly(asserted: int | None, v: Verdict) -> bool:
    return asserted is not None and asserted not in v.expected_ids


def _frac(hits: int, of: int) -> dict[str, Any]:
    return {"rate": hits / of if of else None, "hits": hits, "of": of}


def judge_scores(verdicts: Sequence[Verdict]) -> dict[str, Any] | None:
    """The judge's scores over ``verdicts`` (module docstring); None when it was never asked."""
    asked = [v for v in verdicts if v.judge_seconds is not None]
    if not asked:
        return None
    rows = [v for v in asked if v.judged is not None]
    picks = [(v, pick(v)) for v in rows]
    wrong = sum(wrongly(p, v) for v, p in picks)
    related = [v for v in verdicts if v.expected_ids]
    return {
        "model": next((str(j["model"]) for v in rows if (j := v.judged) is not None), None),
        "asked": len(asked),
        "rows": len(rows),
        "right": sum(p is not None and p in v.expected_ids for v, p in picks),
        "wrong": wrong,
        "said_none": sum(v.judged is not None and v.judged.get("picked") is None and not v.judged.get("void") for v in rows),
        "void": sum(bool(v.judged and v.judged.get("void")) for v in rows),
        "failed": len(asked) - len(rows),
        "held_out": sum(HELD_OUT in v.tags for v in rows),
        "false_recall": wrong / len(rows) if rows else None,
        "wilson_upper": round(wilson_upper(wrong, len(rows)), 4),
        "scenarios": [v.scenario for v in rows],
        "asserted_right": _frac(sum(with_judge(v)[0] in v.expected_ids for v in related), len(related)),
        "asserted_wrong": _frac(sum(wrongly(with_judge(v)[0], v) for v in verdicts), len(verdicts)),
        "first_shown": _frac(sum(with_judge(v)[1] in v.expected_ids for v in related), len(related)),
    }


def calibration_of(model: str, scores: dict[str, Any]) -> Calibration:
    """The calibration a judge's scores (:func:`judge_scores`) make, measured with today's prompt."""
    return Calibration(
        model,
        rows=scores["rows"],
        right=scores["right"],
        wrong=scores["wrong"],
        prompt=prompt_digest(),
        said_none=scores["said_none"],
        void=scores["void"],
        failed=scores["failed"],
        held_out=scores["held_out"],
        measured=datetime.now(UTC).isoformat(timespec="seconds"),
        scenarios=list(scores["scenarios"]),
    )


def allowed(scores: dict[str, Any], limit: float) -> bool:
    """Whether these scores, as a calibration, let the judge vouch under ``limit``."""
    return bool(scores["rows"] >= MIN_ROWS and scores["wilson_upper"] <= limit)


def _count(value: dict[str, Any] | None) -> str:
    return "-" if not value or value["rate"] is None else f"{value['hits']}/{value['of']}"


def table(models: Sequence[dict[str, Any]], limit: float = 0.05) -> tuple[str, list[str], list[list[str]]] | None:
    """The "Judge" table of a report: one column per model row whose runs a judge read; None if none did."""
    judged = [m for m in models if m["scores"].get("judge")]
    if not judged:
        return None
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("judge", lambda j: str(j["model"])),
        ("asked / answered", lambda j: f"{j['asked']}/{j['rows']}"),
        ("picked right / wrong / none / void", lambda j: f"{j['right']}/{j['wrong']}/{j['said_none']}/{j['void']}"),
        ("false recall (95% upper)", lambda j: f"{j['wrong']}/{j['rows']} ({j['wilson_upper']:.3f})"),
        (f"may assert (≥{MIN_ROWS} rows, upper ≤ {limit:g})", lambda j: "yes" if allowed(j, limit) else "no"),
        ("with it: asserted right", lambda j: _count(j["asserted_right"])),
        ("with it: asserted wrong", lambda j: _count(j["asserted_wrong"])),
        ("with it: first shown", lambda j: _count(j["first_shown"])),
    ]
    body = [[label, *(show(m["scores"]["judge"]) for m in judged)] for label, show in rows]
    return ("Judge (picks checked; with it: the memory were it allowed to vouch)", ["", *(m["model"] for m in judged)], body)
