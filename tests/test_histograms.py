"""The histograms that take a batch's counts at once (monitor/metrics/histograms.py) show what prometheus_client's own
``Histogram`` shows for the same observations, through its public collector API only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

import monitor
from monitor.core.batches import LAG_BUCKETS, PHASE_BUCKETS, Counts
from monitor.metrics import Metrics
from monitor.metrics.histograms import CountedHistogram

VALUES = [0.0, 0.0005, 0.003, 0.005, 0.2, 1.0, 7.5, 12.0, 1e6]


def text(registry: CollectorRegistry) -> list[str]:
    """The exposition's lines, less the ``_created`` samples a custom collector has no need of."""
    return [line for line in generate_latest(registry).decode().splitlines() if "_created" not in line]


def test_counts_added_at_once_show_as_the_same_values_observed_one_by_one() -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    counted = CountedHistogram("phase_seconds", "Phases.", ["kind", "phase"], buckets=PHASE_BUCKETS, registry=ours)
    observed = Histogram("phase_seconds", "Phases.", ["kind", "phase"], buckets=PHASE_BUCKETS, registry=theirs)
    counted.add(counted.counted(VALUES[:4]), "http", "dns")
    counted.add(counted.counted(VALUES[4:]), "http", "dns")
    counted.observe(0.02, "tcp", "reply")
    for value in VALUES:
        observed.labels("http", "dns").observe(value)
    observed.labels("tcp", "reply").observe(0.02)
    assert text(ours) == text(theirs)


def test_one_without_labels_shows_zeros_before_its_first_observation_as_a_histogram_does() -> None:
    ours, theirs = CollectorRegistry(), CollectorRegistry()
    CountedHistogram("lag_seconds", "Lag.", buckets=LAG_BUCKETS, registry=ours)
    Histogram("lag_seconds", "Lag.", buckets=LAG_BUCKETS, registry=theirs)
    assert text(ours) == text(theirs)
    assert ours.get_sample_value("lag_seconds_count") == 0


def test_counts_into_other_buckets_or_with_other_labels_are_refused() -> None:
    histogram = CountedHistogram("lag_seconds", "Lag.", ["reason"], buckets=LAG_BUCKETS)
    with pytest.raises(ValueError, match="buckets"):
        histogram.add(Counts(PHASE_BUCKETS), "late")
    with pytest.raises(ValueError, match="labels"):
        histogram.observe(1.0)


def test_the_metrics_read_no_private_attribute_of_a_histogram() -> None:
    """``add_counts`` wrote prometheus_client's ``_buckets`` and ``_sum``, which a new version may rename."""
    private = {"_buckets", "_sum", "_upper_bounds"}
    found = [
        f"{path.name}:{node.lineno} .{node.attr}"
        for path in (Path(monitor.__file__).parent / "metrics").glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr in private
    ]
    assert found == []


def test_a_batch_of_phases_and_lags_is_counted_into_the_series() -> None:
    from monitor.metrics import bulk

    metrics = Metrics(CollectorRegistry())
    bulk.observe_starts(metrics, [(0.004, 0, False), (3.0, 2, True), (20.0, 1, False)])
    bulk.observe_recorded(metrics, [0.5, 70.0], stale=1)
    sample = metrics.registry.get_sample_value
    assert sample("monitor_schedule_lag_seconds_count") == 3
    assert sample("monitor_schedule_lag_seconds_bucket", {"le": "0.005"}) == 1
    assert sample("monitor_schedule_lag_seconds_bucket", {"le": "4.0"}) == 2
    assert sample("monitor_schedule_lag_seconds_sum") == pytest.approx(23.004)
    assert sample("monitor_checks_skipped_total", {"reason": "backlog"}) == 2
    assert sample("monitor_result_age_seconds_bucket", {"le": "60.0"}) == 1
    assert sample("monitor_result_age_seconds_bucket", {"le": "+Inf"}) == 2
    assert sample("monitor_results_stale_total") == 1
