"""Receivers with thresholds of their own: when each hears that a target's incident opened and resolved.

Gatus keeps a state per alert: an alert triggers at the check that makes its ``failure-threshold`` failures in a
row, and resolves at the check that makes its ``success-threshold`` passes in a row, whatever the other alerts of
the endpoint do. A target's ``alerts.per_receiver`` (:class:`~monitor.config.rules.ReceiverPolicy`) gives a
receiver those two numbers; :class:`Paging` keeps, for each target that has some, which of them are told of its
open incident now, and says after each check who is told of what::

    failures  run of failures reaches F   the receiver hears "opened" (with the incident's opening, or later)
    passes    run of passes reaches S      the receiver hears "resolved" (before the incident resolves, or with it)

An incident opens at ``detectors.consecutive`` failures and resolves at ``recover_after`` passes, so an import
sets those to the smallest F and the largest S: then no receiver is told early or late. The state is kept in
memory, as Gatus' counts are; after a restart, a receiver of an incident still open counts as told if the rows
before the newest say so (the last run long enough to decide was one of failures), else if it could have been.
"""

from __future__ import annotations

from collections.abc import Sequence

from monitor.config import Config

Thresholds = dict[str, tuple[int, int]]  # rule name -> (failures, successes)


def streak(ok: Sequence[int], failing: tuple[int, float] | None = None) -> int:
    """The newest run's length (newest first): of failures when the newest check failed, else of passes;
    ``failing``: a window's count of a run of failures longer than the rows it holds."""
    if not ok:
        return 0
    if not ok[0] and failing:
        return int(failing[0])
    count = 0
    for value in ok:
        if bool(value) != bool(ok[0]):
            break
        count += 1
    return count


def told(ok: Sequence[int], failures: int, successes: int) -> bool | None:
    """Whether an alert with these thresholds is triggered after the rows ``ok`` (newest first): the newest run
    long enough to decide says so; None when no run in them is."""
    place = 0
    while place < len(ok):
        run = streak(ok[place:])
        if ok[place] and run >= successes:
            return False
        if not ok[place] and run >= failures:
            return True
        place += run
    return None


class Paging:
    """Who of each target's receivers with thresholds of their own is told of its open incident."""

    def __init__(self) -> None:
        self.thresholds: dict[str, Thresholds] = {}
        self._told: dict[str, frozenset[str]] = {}

    def apply_config(self, config: Config) -> None:
        """The receivers with thresholds of their own, of each target (unset numbers: the target's detectors)."""
        found: dict[str, Thresholds] = {}
        for target in config.targets:
            own = config.alert_policy(target).per_receiver
            if own:
                detectors = target.detectors or config.detectors
                found[target.name] = {
                    name: (each.failures or detectors.consecutive, each.successes or detectors.recover_after) for name, each in own.items()
                }
        self.thresholds = found
        self._told = {name: told for name, told in self._told.items() if name in found}

    def names(self, target: str) -> frozenset[str]:
        return frozenset(self.thresholds.get(target, {}))

    def step(self, target: str, failed: bool, run: int, is_open: bool, ok: Sequence[int] | None) -> tuple[frozenset[str], frozenset[str]]:
        """Who was told before this check, and who is after it: the newest check ``failed`` or not, ``run`` its
        run's length; ``is_open``: the target has an incident open; ``ok``: the rows, newest first, when known."""
        limits = self.thresholds.get(target)
        if not limits:
            return frozenset(), frozenset()
        before = self._told.get(target)
        if before is None:
            before = self._after_restart(limits, is_open, ok)
        if failed:
            now = before | {name for name, (failures, _) in limits.items() if run >= failures}
        else:
            now = frozenset(name for name in before if run < limits[name][1])
        return before, now

    def keep(self, target: str, told: frozenset[str]) -> None:
        """Who is told of the target's incident now (nobody, once it resolved or when none is open)."""
        if target in self.thresholds:
            self._told[target] = told

    @staticmethod
    def _after_restart(limits: Thresholds, is_open: bool, ok: Sequence[int] | None) -> frozenset[str]:
        if not is_open:
            return frozenset()
        if ok is None:
            return frozenset(limits)
        return frozenset(name for name, (f, s) in limits.items() if told(ok[1:], f, s) is not False)
