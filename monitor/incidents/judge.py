"""The one detection judge: what a target's window says after a result, in the daemon and in a checking worker alike.

The daemon's :class:`~monitor.incidents.tracker.Tracker` judges a result on the window it keeps; with ``workers: N``
each worker's :class:`~monitor.incidents.verdicts.Judge` judges its own targets' results where they are made, and
the tracker brings incidents up to date from its verdict. Both ask :func:`judge`, so a target is judged the same way
whichever process checks it::

    judge(target, rows, thresholds, now)   Findings: every pattern found, those that may page (drift only with
                                            ``page_on_drift``), whether the newest check failed, whether the last
                                            ``recover_after`` passed, the newest run's length
    Findings.active                         the patterns that open or keep an incident now: the window and flapping
                                            counts lag behind a recovery, so only while the newest check fails;
                                            latency drift, which passing checks show, always
    opening(rows, active, result)           the root cause and evidence an incident opening now has
"""

from __future__ import annotations

from dataclasses import dataclass

from monitor.config import Detectors
from monitor.core.incidents import Pattern
from monitor.core.results import Result
from monitor.incidents import evidence, patterns
from monitor.incidents.history import History
from monitor.incidents.paging import streak

HISTORY = 200  # rows a target's window holds at most

DRIFT = "latency_drift"


@dataclass(frozen=True)
class Findings:
    """What the detectors found in a target's window after one result (see the module docstring)."""

    found: list[Pattern]
    paging: list[Pattern]
    failed: bool
    recovered: bool
    run: int

    @property
    def active(self) -> list[Pattern]:
        return active(self.paging, self.failed)


def judge(target: str, rows: History, thresholds: Detectors, now: float) -> Findings:
    """The detectors on ``rows`` (the target's window, newest first) under ``thresholds``."""
    found = patterns.detect(target, rows, thresholds, now)
    # drift is reported whatever the config; it opens (or keeps open) an incident only when asked
    paging = found if thresholds.page_on_drift else [p for p in found if p.name != DRIFT]
    failed = bool(rows) and not rows.ok[0]
    recovered = patterns.recovered(rows, thresholds.recover_after)
    return Findings(found, paging, failed, recovered, streak(rows.ok, rows.failing))


def active(paging: list[Pattern], failed: bool) -> list[Pattern]:
    """The patterns of ``paging`` that open or keep an incident now (see the module docstring)."""
    return [p for p in paging if failed or p.name == DRIFT]


def lingering(found: list[Pattern]) -> bool:
    """Whether latency drift is found: slowness in passing checks, which keeps an incident open."""
    return any(p.name == DRIFT for p in found)


def opening(rows: History, active: list[Pattern], result: Result | None) -> tuple[str, str]:
    """The root cause and the evidence of an incident opening now on ``active`` (its leading pattern first)."""
    newest = rows[0]
    cause = patterns.root_cause_of(newest.error, newest.status_code, newest.detail or "", active[0].name)
    return cause, evidence.evidence(rows, result)
