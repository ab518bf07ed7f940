"""What one model (or the detectors alone) concluded on one scenario, beside what was expected."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from monitor.core.claims import Claim
from monitor.eval.scenario import Scenario

BASELINE = "detector only"


@dataclass
class Verdict:
    """What one model (or the detectors alone) concluded on one scenario, beside what was expected."""

    scenario: str
    tags: list[str]
    expected_root_cause: list[str]
    expected_related: int | list[int] | None  # a list: any of these is right (one family's members)
    expected_actionable: bool
    not_actionable: frozenset[str] = frozenset({"recovered"})
    root_cause: str | None = None
    related_incident: int | None = None
    suggested: list[int] = field(default_factory=list)  # asserted first, then suggested (monitor.memory.claims)
    claim: Claim | None = None  # the stored claim: margin, specific, why not asserted
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
    recall_seconds: float = 0.0  # of the run, in recall (every search)
    judge_seconds: float | None = None  # of the run, in judging (None: the judge was not asked)
    infra_error: str | None = None
    incident: int | None = None
    pattern: str | None = None
    answer: str | None = None

    @classmethod
    def expecting(cls, scenario: Scenario, not_actionable: frozenset[str]) -> Verdict:
        expect = scenario.expect
        return cls(scenario.name, list(scenario.tags), list(expect.root_cause), expect.related_incident, expect.actionable, not_actionable)

    @property
    def correct(self) -> bool:
        return self.root_cause in self.expected_root_cause

    @property
    def actionable(self) -> bool:
        """A run with no root cause leaves the alert as it was: actionable."""
        return self.root_cause not in self.not_actionable

    @property
    def expected_ids(self) -> tuple[int, ...]:
        """The past incidents any of which is right; empty for none."""
        value = self.expected_related
        return () if value is None else tuple(value) if isinstance(value, list) else (value,)

    @property
    def memory_hit(self) -> bool:
        """It asserted an expected past incident."""
        return self.related_incident in self.expected_ids

    @property
    def suggested_at_3(self) -> bool:
        """An expected incident is among the first three asserted or suggested."""
        return bool(set(self.expected_ids) & set(self.suggested[:3]))

    @property
    def first_shown(self) -> bool:
        """What a person sees first (the asserted incident, else the first suggested) is an expected one."""
        return bool(self.suggested) and self.suggested[0] in self.expected_ids

    @property
    def judged(self) -> dict[str, Any] | None:
        """The judge's verdict stored with the claim (:meth:`monitor.memory.judge.Verdict.to_dict`), if any."""
        return self.claim.judged if self.claim else None

    @property
    def false_recall(self) -> bool:
        return self.related_incident is not None and self.related_incident not in self.expected_ids

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("not_actionable")
        data["claim"] = self.claim.to_dict() if self.claim else {}
        expected = {
            "root_cause": data.pop("expected_root_cause"),
            "related_incident": data.pop("expected_related"),
            "actionable": data.pop("expected_actionable"),
        }
        return {
            "scenario": data.pop("scenario"),
            "tags": data.pop("tags"),
            "expected": expected,
            "got": {
                "root_cause": data.pop("root_cause"),
                "related_incident": data.pop("related_incident"),
                "suggested": data.pop("suggested"),
                "actionable": self.actionable,
            },
            "correct": self.correct,
            "memory_hit": self.memory_hit,
            "first_shown": self.first_shown,
            "false_recall": self.false_recall,
            **data,
        }
