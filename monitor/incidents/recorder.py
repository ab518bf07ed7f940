"""The one way in for check results: store them, count them, and bring their targets' incidents up to date.

The daemon's checks, the agent's re-checks (``check_target``), ``monitor check``, ``monitor investigate``
and the eval all record results through a :class:`Recorder`::

    results → store (one transaction; kept in memory while the database refuses them)
            → metrics (the configured targets' series)
            → tracker (each target's window, the detectors, its incident: open / update / resolve)

A result stored later than ``fresh_for(target)`` seconds after its check ended (a database that refused
writes for minutes, a writer far behind) is stored and joins its target's history, but the detectors do not
run on it: an incident opens on what a target does now, never on what it did minutes ago.

One recorder per store: the tracker's windows are kept from what it stores, so results stored past it
would not be seen by the detectors until the target's window is read again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from monitor.config import Target
from monitor.core.batches import CHECKED_AT, LATENCY_MS, LOCATION, TARGET, Batch, Row, Verdict
from monitor.core.incidents import Event, Pattern
from monitor.core.results import Result
from monitor.incidents import quorum
from monitor.incidents.tracker import Tracker
from monitor.metrics import bulk
from monitor.store import Store, result_row
from monitor.store.engines import describe

if TYPE_CHECKING:
    from monitor.metrics import Metrics

log = logging.getLogger("monitor.daemon")

MAX_UNSAVED = 100_000  # results held in memory while the database stays locked
REFUSED_EVERY = 60.0  # seconds between log lines while the database goes on refusing results

Observed = tuple[Result, list[Pattern], list[Event]]  # a stored result, what the detectors found, what changed


class Recorder:
    """Records results; ``configured()`` names the targets whose series the metrics keep (default: all);
    ``quorums(name)`` is the target if it is checked from several locations (:mod:`monitor.incidents.quorum`);
    ``fresh_for(target)``: how many seconds after its check a result is still judged by (default: always)."""

    def __init__(
        self,
        store: Store,
        tracker: Tracker,
        *,
        metrics: Metrics | None = None,
        configured: Callable[[], set[str]] | None = None,
        quorums: Callable[[str], Target | None] = lambda name: None,
        fresh_for: Callable[[str], float] | None = None,
    ) -> None:
        self.store, self.tracker, self.metrics, self.configured = store, tracker, metrics, configured
        self.quorums, self.fresh_for = quorums, fresh_for
        self._lock = threading.Lock()  # results reach the store and the windows in the same order
        self._unsaved: list[Result] = []
        self._unsaved_rows: list[Row] = []  # a worker's batches a locked database kept back (stored past the detectors)
        self._refused_said = 0.0  # when the log last said the database refused results (0: it takes them)

    def record(
        self, results: list[Result], *, detect: bool = True, then: Callable[[Result, list[Event]], None] | None = None
    ) -> list[Observed] | None:
        """Store ``results`` (with any kept back earlier) and, with ``detect``, run the detectors after each,
        and ``then`` with what changed, before the next; None when the database refused them (they are kept
        for the next call)."""
        with self._lock:
            if detect:
                self._prime({r.name for r in self._unsaved + results})
            saved = self._save(results)
            self._observe_metrics(results)
            if saved is None:
                return None
            if not detect:
                for name in {r.name for r in saved}:
                    self.tracker.forget(name)
                return []
            observed = []
            stored = [(r.name, r.checked_at, r.latency_ms) for r in saved]
            for result, fresh in zip(saved, self._fresh(stored), strict=True):
                if not fresh:  # history, not news: no detector runs on it
                    self.tracker.remember(result.name, self._agreed(result))
                    continue
                found, changed = self.tracker.observe(result.name, self._agreed(result))
                if then is not None:
                    then(result, changed)
                observed.append((result, found, changed))
            return observed

    def record_batch(self, batch: Batch, *, then: Callable[[Result, list[Event]], None] | None = None) -> list[Observed] | None:
        """Store a worker's judged batch with one statement and count it; then bring incidents up to date only
        for the results whose verdict says something, or whose target has an incident open (one read for the
        batch), and for quorum targets. None when the database refused it (its rows are kept for the next call)."""
        with self._lock:
            saved = self._save([], batch.rows)
            self._observe_batch(batch)
            if saved is None:
                return None
            names = [row[TARGET] for row in batch.rows]
            quorums = {name for name in set(names) if self.quorums(name) is not None}
            self.tracker.forget_all(set(names) - quorums)  # judged by their worker: a window here would fall behind
            fresh = self._fresh([(row[TARGET], row[CHECKED_AT], row[LATENCY_MS]) for row in batch.rows])
            open_now = self.store.incidents.open_targets(list(set(names))) if len(batch.verdicts) < len(batch) else set()
            observed = []
            for place, name in enumerate(names):
                verdict = batch.verdicts.get(place)
                if name in quorums and batch.rows[place][LOCATION] is not None:
                    seen = self._agree(batch.result(place), fresh[place])
                elif fresh[place] and (verdict is not None or name in open_now):
                    open_now.add(name)  # its later results in this batch read the store themselves
                    verdict = verdict or Verdict(batch.result(place))
                    seen = (verdict.result, verdict.found, self.tracker.judged(name, verdict))
                else:  # history, not news; or healthy with nothing open: nothing to do
                    continue
                if seen is not None and then is not None:
                    then(seen[0], seen[2])
                observed.extend([seen] if seen is not None else [])
            return observed

    def _agree(self, result: Result, fresh: bool) -> Observed | None:
        """A quorum target's result: judged here, on what its locations agree on (as :meth:`record` does)."""
        if not fresh:
            self.tracker.remember(result.name, self._agreed(result))
            return None
        found, changed = self.tracker.observe(result.name, self._agreed(result))
        return result, found, changed

    def _observe_batch(self, batch: Batch) -> None:
        if self.metrics is not None:
            bulk.observe_batch(self.metrics, batch, self.configured() if self.configured is not None else None)

    def _fresh(self, stored: list[tuple[str, float, float]]) -> list[bool]:
        """Whether each stored result, as (target, checked at, latency in ms), is recent enough to detect on; the
        ages go to the metrics, counted at once."""
        now = self.tracker.clock()
        ages = [now - checked_at - latency_ms / 1000 for _, checked_at, latency_ms in stored]
        limit = self.fresh_for
        fresh = [True] * len(ages) if limit is None else [age <= limit(name) for (name, _, _), age in zip(stored, ages, strict=True)]
        if self.metrics is not None:
            bulk.observe_recorded(self.metrics, ages, fresh.count(False))
        return fresh

    def _agreed(self, result: Result) -> Result:
        """What the detectors see: the result, or for a quorum target what its locations agree on."""
        target = self.quorums(result.name) if result.location is not None else None
        if target is None:
            return result
        latest = self.store.results.latest_by_location(result.name, result.checked_at - quorum.window(target))
        return quorum.agreed(result, latest, target)

    def _prime(self, names: set[str]) -> None:
        """Each window is read before its new results are stored, and then follows them."""
        try:
            self.tracker.prime(names)
        except self.store.errors as exc:  # read after they are stored, then
            log.debug("windows not read before storing: %s", describe(exc))

    def _observe_metrics(self, results: list[Result]) -> None:
        if self.metrics is None:
            return
        configured = self.configured() if self.configured is not None else None
        # a check that was in flight when a reload removed its target gets no series
        self.metrics.observe_results(r for r in results if configured is None or r.name in configured)

    def _save(self, results: list[Result], rows: list[Row] | None = None) -> list[Result] | None:
        """Store results (and a batch's ``rows``), with any a locked database kept back earlier, in one
        transaction; returns the results stored, or None when the database refused (then all are kept for the
        next call). Rows kept back are stored past the detectors: the windows of their targets are read again."""
        batch, kept = self._unsaved + results, self._unsaved_rows + (rows or [])
        self._unsaved, self._unsaved_rows = [], []
        try:
            if kept:
                self.store.results.add_rows([result_row(r) for r in batch] + kept)
            else:
                self.store.results.add_results(batch)
        except self.store.errors as exc:
            if not self.store.engine.passing(exc):
                raise
            self._unsaved = batch[-MAX_UNSAVED:]
            self._unsaved_rows = kept[max(0, len(kept) - (MAX_UNSAVED - len(self._unsaved))) :]
            self._refused(describe(exc))
            return None
        if self._refused_said:
            log.info("the database took the %d results kept while it refused them", len(batch) + len(kept))
            self._refused_said = 0.0
            if self.metrics is not None:
                self.metrics.observe_unsaved(0, None)
        return batch

    def _refused(self, reason: str) -> None:
        """Say that results are kept: at once, then once a minute (not once a check) while it lasts."""
        if self.metrics is not None:
            self.metrics.observe_unsaved(len(self._unsaved), reason)
        now = time.monotonic()
        if now - self._refused_said >= REFUSED_EVERY:
            log.warning("%d results kept in memory until the database takes them: %s", len(self._unsaved), reason)
            self._refused_said = now

    def unsaved(self) -> int:
        """Results a locked database kept back, waiting for the next call."""
        with self._lock:
            return len(self._unsaved) + len(self._unsaved_rows)

    def flush(self) -> None:
        """Store the results a locked database kept back; raises if it still cannot."""
        with self._lock:
            if self._unsaved or self._unsaved_rows:
                self.store.results.add_rows([result_row(r) for r in self._unsaved] + self._unsaved_rows)
                # stored past the detectors: read again if needed
                self.tracker.forget_all({r.name for r in self._unsaved})
                self._unsaved, self._unsaved_rows = [], []
