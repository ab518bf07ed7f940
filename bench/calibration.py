"""Where recall should stop asserting a past fix and only suggest: the line, set on some eval rows, judged on others.

An eval run (``monitor eval --out FILE``) stores each scenario's claim (monitor.memory.claims): the incident
the evidence decided for (or none), the ones suggested, how far the best applicable candidate led the next
(``margin``), and whether the pick and the evidence share something specific. Run the eval once with every
pick asserted (``MONITOR_ASSERT_ALL=1``), then replay here the rule "assert when the lead is at least M"
for each M: the M with the most right assertions whose wrong assertions stay under ``--max-false`` on the
tuning rows is the line; the same line is then scored on the held-out rows it was not set on::

    MONITOR_ASSERT_ALL=1 monitor eval --scenarios tune/ --no-baseline --out tune.json
    MONITOR_ASSERT_ALL=1 monitor eval --scenarios held/ --no-baseline --out held.json
    python bench/calibration.py tune.json --held held.json --max-false 0.03
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    """One scenario's claim, as the eval stored it with every pick asserted."""

    name: str
    expected: int | None
    picked: int | None  # the incident asserted with no line at all
    margin: float | None
    specific: bool
    suggested: tuple[int, ...]

    @classmethod
    def of(cls, scenario: dict[str, Any]) -> Row:
        claim = scenario.get("claim") or {}
        return cls(scenario["scenario"], scenario["expected"]["related_incident"],
                   scenario["got"]["related_incident"], claim.get("margin"), bool(claim.get("specific")),
                   tuple(scenario["got"].get("suggested") or ()))

    def asserted(self, line: float, lone_needs_specific: bool) -> int | None:
        if self.picked is None:
            return None
        if self.margin is None:
            return self.picked if self.specific or not lone_needs_specific else None
        return self.picked if self.margin >= line else None


def rows(path: str) -> list[Row]:
    with open(path) as f:
        data = json.load(f)
    model = next(m for m in data["models"] if not m["baseline"])
    return [Row.of(s) for s in model["scenarios"]]


def scores(found: Iterable[Row], line: float, lone: bool) -> dict[str, Any]:
    found = list(found)
    having = [r for r in found if r.expected is not None]
    asserted = [(r, r.asserted(line, lone)) for r in found]
    return {"hit@1": (sum(a == r.expected for r, a in asserted if r.expected is not None), len(having)),
            "false": (sum(a is not None and a != r.expected for r, a in asserted), len(found)),
            "suggested@3": (sum(r.expected in r.suggested[:3] for r in having), len(having))}


def show(label: str, s: dict[str, Any]) -> str:
    return label + "  " + "  ".join(f"{k} {h}/{n} ({h / n:.0%})" for k, (h, n) in s.items() if n)


def best_line(tune: list[Row], max_false: float, lone: bool) -> float:
    """The lowest line (most assertions) whose wrong assertions on ``tune`` stay within ``max_false``."""
    margins = sorted({r.margin for r in tune if r.margin is not None} | {0.0})
    for line in margins:
        hits, total = scores(tune, line, lone)["false"]
        if hits <= max_false * total:
            return line
    return max(margins) + 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tune")
    parser.add_argument("--held", action="append", default=[])
    parser.add_argument("--max-false", type=float, default=0.03)
    args = parser.parse_args()
    tune = rows(args.tune)
    print(show("tuning rows, every pick asserted:", scores(tune, -1.0, False)))
    for lone in (False, True):
        line = best_line(tune, args.max_false, lone)
        print(f"\nlone candidate needs something specific: {lone}; line (lead of score) = {line:.4f}")
        print(show("  tuning rows:", scores(tune, line, lone)))
        for path in args.held:
            held = rows(path)
            print(show(f"  held out ({path}), every pick asserted:", scores(held, -1.0, False)))
            print(show(f"  held out ({path}), at the line:", scores(held, line, lone)))


if __name__ == "__main__":
    main()
