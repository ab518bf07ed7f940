"""Where recall should stop asserting a past fix and only suggest: the line, set on some eval rows, judged on others.

An eval run (``monitor eval --out FILE``) stores each scenario's claim (monitor.memory.claims): the incident
asserted (or none), the ones suggested, and what recall measured of each applicable candidate (``weighed``).
Run the eval once with every best applicable pick asserted (``MONITOR_ASSERT_ALL=1``), then replay here the
rule of :func:`monitor.memory.claims.decided` (the only applicable candidate, agreeing with the evidence on
something specific: a component, a quoted message, a kind of failure, or at least W of its words) for each W:
the lowest W whose wrong assertions stay within ``--max-false`` on the tuning rows is the line; the same line is
then scored on the held-out rows it was not set on::

    MONITOR_ASSERT_ALL=1 monitor eval --scenarios tune/ --no-baseline --out tune.json
    MONITOR_ASSERT_ALL=1 monitor eval --scenarios held/ --no-baseline --out held.json
    python bench/calibration.py tune.json --held held.json --max-false 0.01
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    """One scenario's claim, as the eval stored it with every best applicable pick asserted."""

    name: str
    expected: int | None
    picked: int | None  # the incident asserted with no line at all
    applicable: int  # how many candidates' fixes could apply
    specific: bool  # the pick names a component, quotes a message or states a kind the evidence does
    words: float  # the pick's weighted share of the evidence's words
    suggested: tuple[int, ...]

    @classmethod
    def of(cls, scenario: dict[str, Any]) -> Row:
        claim = scenario.get("claim") or {}
        weighed = [w for w in claim.get("weighed") or [] if w.get("applicable", True)]
        top = weighed[0] if weighed else {}
        pick = (claim.get("picked") or {}).get("id")  # asserted or not: the line decided that
        best = pick if pick is not None and pick == top.get("id") else scenario["got"]["related_incident"]
        return cls(
            scenario["scenario"],
            scenario["expected"]["related_incident"],
            best,
            len(weighed),
            bool(top.get("specific")),
            float(top.get("words") or 0.0),
            tuple(scenario["got"].get("suggested") or ()),
        )

    def asserted(self, line: float) -> int | None:
        """The pick if the rule asserts it at ``line`` (a line above 1 turns the words off; below 0, all asserted)."""
        if self.picked is None or line < 0:
            return self.picked
        return self.picked if self.applicable == 1 and (self.specific or self.words >= line) else None


def rows(path: str) -> list[Row]:
    with open(path) as f:
        data = json.load(f)
    model = next(m for m in data["models"] if not m["baseline"])
    return [Row.of(s) for s in model["scenarios"]]


def scores(found: Iterable[Row], line: float) -> dict[str, Any]:
    found = list(found)
    having = [r for r in found if r.expected is not None]
    asserted = [(r, r.asserted(line)) for r in found]
    return {
        "hit@1": (sum(a == r.expected for r, a in asserted if r.expected is not None), len(having)),
        "false": (sum(a is not None and a != r.expected for r, a in asserted), len(found)),
        "suggested@3": (sum(r.expected in r.suggested[:3] for r in having), len(having)),
    }


def show(label: str, s: dict[str, Any]) -> str:
    return label + "  " + "  ".join(f"{k} {h}/{n} ({h / n:.0%})" for k, (h, n) in s.items() if n)


def best_line(tune: list[Row], max_false: float) -> float:
    """The lowest line (most assertions) whose wrong assertions on ``tune`` stay within ``max_false``."""
    for line in [round(0.05 * n, 2) for n in range(21)] + [1.01]:
        wrong, total = scores(tune, line)["false"]
        if wrong <= max_false * total:
            return line
    return 1.01


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tune")
    parser.add_argument("--held", action="append", default=[])
    parser.add_argument("--max-false", type=float, default=0.01)
    args = parser.parse_args()
    tune = rows(args.tune)
    print(show("tuning rows, every pick asserted:", scores(tune, -1.0)))
    for line in (0.0, 0.1, 0.15, 0.2, 0.3, 1.01):
        print(show(f"  words >= {line:.2f}:", scores(tune, line)))
    line = best_line(tune, args.max_false)
    print(f"line: words >= {line:.2f} (wrong assertions within {args.max_false:.0%} of the tuning rows)")
    print(show("  tuning rows:", scores(tune, line)))
    for path in args.held:
        held = rows(path)
        print(show(f"held out ({path}), every pick asserted:", scores(held, -1.0)))
        print(show(f"held out ({path}), at the line:", scores(held, line)))


if __name__ == "__main__":
    main()
