"""What one check costs does not grow with the number of configured targets (issue 12)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.metrics import MetricWrapperBase
from servers import Misbehaving

from monitor.checks.engine import Checker
from monitor.config import Config
from monitor.daemon import daemon_cycle
from monitor.metrics import Metrics
from monitor.metrics.histograms import CountedHistogram
from monitor.store import Store
from monitor.store.writes import IncidentWrites


def fleet(web: Misbehaving, size: int, db_path: str) -> Config:
    return Config.model_validate(
        {
            "database": db_path,
            "detectors": {"consecutive": 1},
            "targets": [{"name": f"t{i}", "url": web.url("/500" if i == 0 else "/healthy"), "timeout": "1s"} for i in range(size)],
        }
    )


def labels_per_check(web: Misbehaving, size: int, db_path: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """``.labels()`` calls on any series, and series of the batch-fed histograms looked up, while the cycle handles one
    result, in a fleet of ``size``."""
    config = fleet(web, size, db_path)
    store = Store(db_path)
    cycle = daemon_cycle(config, store, metrics=Metrics(CollectorRegistry()))
    results = Checker().run(config.targets[:1])
    cycle.after_checks(results)  # opens t0's incident
    calls = 0
    original = MetricWrapperBase.labels

    def counting(self: MetricWrapperBase, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        return original(self, *args, **kwargs)

    held = CountedHistogram._held

    def counting_held(self: CountedHistogram, labels: tuple[str, ...]) -> Any:
        nonlocal calls
        calls += 1
        return held(self, labels)

    monkeypatch.setattr(MetricWrapperBase, "labels", counting)
    monkeypatch.setattr(CountedHistogram, "_held", counting_held)  # the batch-fed histograms' series (metrics/histograms)
    cycle.after_checks(results)
    monkeypatch.setattr(MetricWrapperBase, "labels", original)
    monkeypatch.setattr(CountedHistogram, "_held", held)
    store.close()
    return calls


def test_metrics_work_per_check_is_the_same_for_10_and_1000_targets(
    web: Misbehaving, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = labels_per_check(web, 10, str(tmp_path / "small.db"), monkeypatch)
    large = labels_per_check(web, 1000, str(tmp_path / "large.db"), monkeypatch)
    assert 0 < small == large


def test_open_incidents_are_counted_at_scrape_time_for_configured_targets(web: Misbehaving, db_path: str) -> None:
    config = fleet(web, 3, db_path)
    store = Store(db_path)
    registry = CollectorRegistry()
    cycle = daemon_cycle(config, store, metrics=Metrics(registry))
    cycle.after_checks(Checker().run(config.targets))
    IncidentWrites(store).open_incident("gone", "consecutive", "a target no longer configured")

    def open_count(target: str) -> float | None:
        return registry.get_sample_value("monitor_incidents_open", {"target": target})

    assert [open_count(t) for t in ("t0", "t1", "t2", "gone")] == [1.0, 0.0, 0.0, None]
    [incident] = store.incidents.open_incidents("t0")
    IncidentWrites(store).close_incident(incident.id, "fixed from another process")
    assert open_count("t0") == 0.0
    store.close()
