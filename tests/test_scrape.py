"""Cheap scrapes (issue 22, part 5): each target's series rendered only where they changed, the same
figures as prometheus_client's own exposition of the registry, and per-target histograms optional."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from monitor.core.results import Result
from monitor.metrics import Metrics


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
        if not s.name.endswith("_created")
    }


def result(name: str, severity: str = "ok", latency: float = 12.0, **extra: Any) -> Result:
    return Result(name, f"http://{name}/", severity != "critical", severity, 200, latency, None, "", 1000.0, **extra)


def test_the_cached_scrape_shows_what_the_registry_holds_after_every_change() -> None:
    metrics = Metrics(CollectorRegistry())
    metrics.observe_results([result("api"), result('we"ird\\name'), result("tls", cert_expires_at=5000.0)])
    first = metrics.scrape()
    assert samples(first) == samples(generate_latest(metrics.registry))
    metrics.observe_results([result("api", "critical", 2600.0), result("api", "warning", 40.0), result("new", kind="tcp")])
    metrics.forget_targets([("tls", "http")])
    second = metrics.scrape()
    assert samples(second) == samples(generate_latest(metrics.registry))  # changed, added and removed alike
    found = samples(second)
    assert found[("monitor_checks_total", (("kind", "http"), ("result", "critical"), ("target", "api")))] == 1
    assert found[("monitor_check_up", (("kind", "http"), ("target", "api")))] == 1  # the last was a warning
    assert found[("monitor_check_duration_seconds_bucket", (("kind", "http"), ("le", "2.5"), ("target", "api")))] == 2
    assert found[("monitor_check_duration_seconds_count", (("kind", "http"), ("target", "api")))] == 3
    assert not any(labels and ("target", "tls") in labels for _, labels in found)
    assert metrics.scrape() == second  # nothing changed: the same text, from the cache
    only = samples(metrics.scrape(["monitor_checks_total"]))
    assert {name for name, _ in only} == {"monitor_checks_total"}


def test_per_target_histograms_can_be_left_out() -> None:
    metrics = Metrics(CollectorRegistry(), target_histograms=False)
    metrics.observe_results([result("api", phases={"connect": 1.0})])
    text = metrics.scrape()
    assert b"monitor_check_duration_seconds" not in text and b"monitor_check_up{" in text
    assert b"monitor_check_phase_duration_seconds_bucket" in text  # latency by kind and phase stays
    assert samples(text) == samples(generate_latest(metrics.registry))


def test_promtool_accepts_the_cached_scrape() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package prometheus; .ci/run installs it)")
    metrics = Metrics(CollectorRegistry())
    metrics.observe_results([result(f"t{n}", ("ok", "warning", "critical")[n % 3], float(n), cert_expires_at=9e9) for n in range(50)])
    metrics.scrape()
    metrics.observe_results([result("t1", "critical")])
    done = subprocess.run([promtool, "check", "metrics"], input=metrics.scrape(), capture_output=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_written_histogram_has_the_buckets_the_module_declares() -> None:
    from monitor.metrics.targets import BUCKETS, histogram

    text = histogram("http", "api", [1] * (len(BUCKETS) + 1), 0.5)
    bounds = [line.split('le="')[1].split('"')[0] for line in text.splitlines() if "_bucket" in line]
    assert bounds == [repr(bound) for bound in BUCKETS] + ["+Inf"]
    assert text.splitlines()[-2].endswith(f" {len(BUCKETS) + 1}")  # the count: every observation
