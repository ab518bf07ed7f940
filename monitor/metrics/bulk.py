"""A worker's batch into the metrics at once: histograms take counts per batch, not one ``observe`` a value.

prometheus_client's ``Histogram.observe`` takes one value (a lock and a walk of the buckets each); a batch of
results comes with its phase durations already counted into buckets (:class:`~monitor.core.batches.Counts`),
and the ages and schedule lags are counted here, so a batch costs one increment per bucket that moved.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from monitor.core.batches import CERT, CHECKED_AT, LATENCY_MS, SEVERITY, TARGET, Batch, Counts
from monitor.metrics.series import Metrics


def add_counts(histogram: Any, counts: Counts) -> None:
    """Add counted observations to a histogram (a prometheus_client ``Histogram`` or one of its children)."""
    buckets = histogram._buckets  # observe() takes one value; these are what it increments
    if len(buckets) != len(counts.buckets):
        raise ValueError(f"{len(counts.buckets)} counts for a histogram of {len(buckets)} buckets")
    histogram._sum.inc(counts.total)
    for bucket, count in zip(buckets, counts.buckets, strict=True):
        if count:
            bucket.inc(count)


def counted(histogram: Any, values: Iterable[float]) -> Counts:
    """``values`` counted into the buckets of ``histogram``."""
    counts = Counts(tuple(histogram._upper_bounds[:-1]))
    for value in values:
        counts.add(value)
    return counts


def observe_starts(metrics: Metrics, starts: list[tuple[float, int, bool]]) -> None:
    """Checks started ``lag`` seconds after they were due, with ``skipped`` slots missed (``held``: by the backlog)."""
    if not starts:
        return
    add_counts(metrics.schedule_lag, counted(metrics.schedule_lag, (lag for lag, _, _ in starts)))
    skipped = {"backlog": 0, "late": 0}
    for _, missed, held in starts:
        if missed:
            skipped["backlog" if held else "late"] += missed
    for reason, count in skipped.items():
        if count:
            metrics.checks_skipped.labels(reason).inc(count)


def observe_batch(metrics: Metrics, batch: Batch, configured: set[str] | None) -> None:
    """A batch's results: the per-target series of the ``configured`` targets (None: all), the phases of all."""
    series = (
        (row[TARGET], kind, row[SEVERITY], row[LATENCY_MS], row[CERT], row[CHECKED_AT])
        for row, kind in zip(batch.rows, batch.kinds, strict=True)
        if configured is None or row[TARGET] in configured
    )
    metrics.target_series.observe_rows(series)
    for (kind, phase), counts in batch.phases.items():
        add_counts(metrics.check_phases.labels(kind, phase), counts)


def observe_recorded(metrics: Metrics, ages: list[float], stale: int) -> None:
    """Results stored ``ages`` seconds after their checks ended; ``stale`` of them too late to detect on."""
    add_counts(metrics.result_age, counted(metrics.result_age, ages))
    if stale:
        metrics.results_stale.inc(stale)
