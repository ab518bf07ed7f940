"""What a checking worker sends up for a batch of finished checks: a :class:`Batch`, compact and already judged.

A worker (``workers: N``) keeps the detection windows of the targets it checks, so each result is judged where
it is made, and the process that records everything does constant work per batch::

    rows       each result as the store inserts it (``results``' columns, in order): one statement for all
    kinds      each result's kind (its per-target series are labelled by it)
    verdicts   by place in the batch, what the detectors said of each result that is not :data:`HEALTHY`
               (a failed check, a pattern found, fewer than ``recover_after`` passes), with the result whole
    phases     the checks' phase durations, as histogram counts by (kind, phase)

Tuples and counts pickle about ten times faster than :class:`~monitor.core.results.Result` objects, which only
the few results worth an incident carry.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any

from monitor.core.incidents import Pattern
from monitor.core.results import Result

# the columns of ``Batch.rows``, as ``monitor.store.result_row`` orders them
COLUMNS = (
    "target",
    "checked_at",
    "ok",
    "severity",
    "status_code",
    "latency_ms",
    "error",
    "detail",
    "cert_expires_at",
    "phases",
    "location",
)
TARGET, CHECKED_AT, OK, SEVERITY, STATUS_CODE, LATENCY_MS, ERROR, DETAIL, CERT, PHASES, LOCATION = range(len(COLUMNS))

Row = tuple[Any, ...]

# the buckets of the histograms a batch is counted into (monitor.metrics.series)
PHASE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
LAG_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0, 300.0, 900.0)
AGE_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 300.0)


@dataclass
class Counts:
    """Observations of one histogram, counted into its buckets (``bounds``, then +Inf), to be added at once."""

    bounds: tuple[float, ...]
    buckets: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        if not self.buckets:
            self.buckets = [0] * (len(self.bounds) + 1)

    def add(self, value: float) -> None:
        self.buckets[bisect_left(self.bounds, value)] += 1  # a value on a bound is counted in it (le)
        self.total += value


@dataclass(frozen=True)
class Verdict:
    """What the detectors found in a target's window after one result: every pattern (``found``), those that may
    open or keep an incident (``paging``), whether the last ``recover_after`` checks passed, whether the newest
    check failed; with ``paging``, the root cause and evidence an incident opening now would have."""

    result: Result
    found: list[Pattern] = field(default_factory=list)
    paging: list[Pattern] = field(default_factory=list)
    recovered: bool = True
    failed: bool = False
    cause: str | None = None
    evidence: str | None = None
    run: int = 0  # the newest run's length (of failures when the newest check failed, else of passes); 0: not known

    @property
    def healthy(self) -> bool:
        """Nothing to say: nothing found, recovered, the newest check passed (not sent)."""
        return not self.found and self.recovered and not self.failed


@dataclass
class Batch:
    """A worker's batch of results, judged: see the module docstring."""

    rows: list[Row]
    kinds: list[str]
    verdicts: dict[int, Verdict] = field(default_factory=dict)
    phases: dict[tuple[str, str], Counts] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.rows)

    def result(self, place: int) -> Result:
        """The result at ``place``: whole where a verdict carries it, else read back from its row (no URL or
        excerpt: the store keeps neither)."""
        verdict = self.verdicts.get(place)
        if verdict is not None:
            return verdict.result
        row = self.rows[place]
        phases = json.loads(row[PHASES]) if row[PHASES] else None
        return Result(
            row[TARGET],
            "",
            bool(row[OK]),
            row[SEVERITY],
            row[STATUS_CODE],
            row[LATENCY_MS],
            row[ERROR],
            row[DETAIL],
            row[CHECKED_AT],
            cert_expires_at=row[CERT],
            phases=phases,
            kind=self.kinds[place],
            location=row[LOCATION],
        )

    @classmethod
    def merged(cls, batches: list[Batch]) -> Batch:
        """Several batches as one, recorded with one statement: rows in order, each verdict at its new place."""
        if len(batches) == 1:
            return batches[0]
        out = cls([], [])
        for batch in batches:
            offset = len(out.rows)
            out.rows.extend(batch.rows)
            out.kinds.extend(batch.kinds)
            out.verdicts.update((offset + place, verdict) for place, verdict in batch.verdicts.items())
            for key, counts in batch.phases.items():
                into = out.phases.setdefault(key, Counts(counts.bounds))
                into.buckets = [a + b for a, b in zip(into.buckets, counts.buckets, strict=True)]
                into.total += counts.total
        return out

    def located(self, location: str) -> Batch:
        """The same batch checked from ``location`` (a replica's): stored with each row and result."""
        from dataclasses import replace

        rows = [(*row[:LOCATION], location) for row in self.rows]
        verdicts = {i: replace(v, result=replace(v.result, location=location)) for i, v in self.verdicts.items()}
        return Batch(rows, self.kinds, verdicts, self.phases)
