"""Detection where the results are made: a checking worker judges each result on its target's window.

``workers: N`` forks each checking process to run :func:`monitor.wiring.worker`: a :class:`~monitor.checks.worker.Worker` whose
batches go up as :class:`~monitor.core.batches.Batch` values made by a :class:`Judge`. The judge keeps the windows
of the worker's own targets (read from the store once, when a target is first checked here, as the daemon's
tracker did; dropped when the target leaves the worker's share), runs the detectors after each result and says
what they found (:class:`~monitor.core.batches.Verdict`). The daemon's recorder stores the batch with one
statement and brings incidents up to date only for the results with a verdict or a target with an open incident:
everything per result happens in the workers, in parallel.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from monitor.config import Detectors, Target
from monitor.core.batches import PHASE_BUCKETS, Batch, Counts, Verdict
from monitor.core.results import Checked, Result
from monitor.incidents import judge
from monitor.incidents.history import Window, rows_needed
from monitor.incidents.judge import HISTORY

if TYPE_CHECKING:
    from monitor.store import Store

log = logging.getLogger("monitor.checks.worker")

Reader = Callable[[str], Sequence[Checked]]  # a target's recent rows, newest first


@dataclass(frozen=True)
class Settings:
    """What a judge needs besides its targets: the thresholds, where to read windows from, and whether every
    result wants a verdict (``agent.mode: every_cycle`` asks the agent after each)."""

    detectors: Detectors = field(default_factory=Detectors)
    database: str | None = None
    every: bool = False


class Judge:
    """The windows of one worker's targets, and the verdict on each result; ``read``: a target's stored rows
    (default: from ``settings.database``, opened on first use by ``opens``, the composition root's opener of a
    reader's store; without it, every window starts empty)."""

    def __init__(
        self, read: Reader | None = None, *, opens: Callable[[str], Store] | None = None, clock: Callable[[], float] = time.time
    ) -> None:
        self.settings, self.clock = Settings(), clock
        self.own: dict[str, Detectors] = {}
        self._read, self._opens = read, opens
        self._store: Store | None = None  # the store windows are read from, once opened
        self._windows: dict[str, Window] = {}
        self._rows: dict[str, int] = {}  # the worker's share (only its targets keep a window): each window's rows
        self._lock = threading.Lock()

    def follow(self, targets: list[Target], settings: object) -> None:
        """The worker's share now: windows of targets that left it go (read again if one comes back), and those
        whose size a reload changed (read again on their next result)."""
        with self._lock:
            if isinstance(settings, Settings):
                self.settings = settings
            self.own = {t.name: t.detectors for t in targets if t.detectors is not None}
            self._rows = {t.name: rows_needed(t.detectors or self.settings.detectors, t.interval, HISTORY) for t in targets}
            for gone in [name for name, window in self._windows.items() if window.limit != self._rows.get(name)]:
                del self._windows[gone]

    def __call__(self, results: list[Result]) -> Batch:
        """The batch of ``results``: their rows, and a verdict on each that is not healthy."""
        from monitor.store import result_row

        batch = Batch([], [])
        with self._lock:
            now = self.clock()
            for place, result in enumerate(results):
                batch.rows.append(result_row(result))
                batch.kinds.append(result.kind)
                verdict = self.judge(result, now)
                if self.settings.every or not verdict.healthy:
                    batch.verdicts[place] = verdict
                for phase, ms in (result.phases or {}).items():
                    batch.phases.setdefault((result.kind, phase), Counts(PHASE_BUCKETS)).add(ms / 1000)
        return batch

    def judge(self, result: Result, now: float) -> Verdict:
        """The detectors on the target's window with ``result`` added: the daemon's tracker's judge
        (:func:`monitor.incidents.judge.judge`), with what an incident opening now would open with."""
        name = result.name
        thresholds = self.own.get(name, self.settings.detectors)
        window = self._windows.get(name)
        if window is None:  # a check that ended after its target left the share is judged, and not kept
            window = Window(self._history(name), self._rows.get(name, HISTORY))
            if name in self._rows:
                self._windows[name] = window
        rows = window.add(result, thresholds, now)
        judged = judge.judge(name, rows, thresholds, now)
        verdict = Verdict(result, judged.found, judged.paging, judged.recovered, judged.failed, run=judged.run)
        if not judged.active:
            return verdict
        cause, found = judge.opening(rows, judged.active, result)
        return replace(verdict, cause=cause, evidence=found)

    def _history(self, name: str) -> Sequence[Checked]:
        """The target's stored rows, newest first; none when the store cannot say (its window starts empty)."""
        try:
            return self._reader()(name)
        except Exception as exc:  # an outage, a database the worker cannot open: detection starts from here
            log.warning("the window of %s starts empty: %s", name, exc)
            return []

    def _reader(self) -> Reader:
        if self._read is None:
            database = self.settings.database
            if not database or database == ":memory:" or self._opens is None:
                return lambda name: []
            self._store = store = self._opens(database)
            self._read = lambda name: store.results.recent_results(name, HISTORY)
        return self._read
