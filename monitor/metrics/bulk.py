"""A worker's batch into the metrics at once: histograms take counts per batch, not one ``observe`` a value.

A batch of results comes with its phase durations already counted into buckets
(:class:`~monitor.core.batches.Counts`), and the ages and schedule lags are counted here; the histograms
(:class:`~monitor.metrics.histograms.CountedHistogram`) add them at once, one addition per bucket.
"""

from __future__ import annotations

from monitor.core.batches import CERT, CHECKED_AT, LATENCY_MS, SEVERITY, TARGET, Batch
from monitor.metrics.series import Metrics


def observe_starts(metrics: Metrics, starts: list[tuple[float, int, bool]]) -> None:
    """Checks started ``lag`` seconds after they were due, with ``skipped`` slots missed (``held``: by the backlog)."""
    if not starts:
        return
    metrics.schedule_lag.add(metrics.schedule_lag.counted(lag for lag, _, _ in starts))
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
        metrics.check_phases.add(counts, kind, phase)


def observe_recorded(metrics: Metrics, ages: list[float], stale: int) -> None:
    """Results stored ``ages`` seconds after their checks ended; ``stale`` of them too late to detect on."""
    metrics.result_age.add(metrics.result_age.counted(ages))
    if stale:
        metrics.results_stale.inc(stale)
