"""Each target's series, kept as plain numbers and rendered for a scrape only where they changed.

At 50,000 targets prometheus_client's own path (a ``Metric`` and a formatted line per sample, at every
scrape) cost 9.3 s of CPU per scrape. Here a target's state is a few numbers; :meth:`TargetSeries.exposition`
renders the lines of the targets that changed since the last scrape, one ``str.format`` per target and
family, and joins the others from its cache::

    monitor_check_up{target,kind}                gauge
    monitor_check_severity{target,kind}          gauge
    monitor_check_duration_seconds{target,kind}  histogram (``metrics.target_histograms``; the bulk of a scrape)
    monitor_checks_total{target,kind,result}     counter
    monitor_check_tls_cert_expiry_timestamp_seconds{target}, monitor_check_tls_cert_expires_in_seconds{target}

It is an ordinary collector too (:meth:`collect`), so ``registry.get_sample_value`` and any exposition of
the registry show the same figures, the slow way; :meth:`~monitor.metrics.series.Metrics.scrape` takes the
fast one. A target's ``_created`` series are not exported.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import accumulate

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from monitor.core.results import CRITICAL, OK, WARNING, Result
from monitor.core.state import is_up
from monitor.metrics.collectors import escape, written_elsewhere

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
SEVERITY_CODES = {OK: 0, WARNING: 1, CRITICAL: 2}  # Nagios' exit codes
# name, type, help: in the order a scrape shows them
FAMILIES = (
    ("monitor_check_up", "gauge", "0 when the target's last check found it down (critical), else 1."),
    ("monitor_check_severity", "gauge", "The target's last check: 0 ok, 1 warning (up, a soft condition failed), 2 critical."),
    ("monitor_check_duration_seconds", "histogram", "Duration of health checks."),
    ("monitor_checks_total", "counter", "Health checks, by result (ok, warning, critical)."),
    ("monitor_check_tls_cert_expiry_timestamp_seconds", "gauge", "When the target's TLS certificate expires (Unix time)."),
    ("monitor_check_tls_cert_expires_in_seconds", "gauge", "Seconds until the target's TLS certificate expires, at the last check."),
)
SLICE = 2000  # targets written per hold of the lock
SAMPLES = tuple(
    {name} | ({f"{name}_bucket", f"{name}_count", f"{name}_sum"} if kind == "histogram" else set()) for name, kind, _ in FAMILIES
)
HEADERS = tuple(f"# HELP {name} {text}\n# TYPE {name} {kind}\n" for name, kind, text in FAMILIES)


@dataclass
class _State:
    kind: str
    label: str  # the target's name, escaped
    up: int = 1
    severity: int = 0
    buckets: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))  # the last: above them all
    seconds: float = 0.0
    results: dict[str, int] = field(default_factory=dict)
    cert: tuple[float, float] | None = None  # expiry (Unix time), seconds left at the last check

    def add(self, severity: str, latency_ms: float, cert_expires_at: float | None, checked_at: float) -> None:
        self.up = int(is_up(severity))
        self.severity = SEVERITY_CODES.get(severity, 2)
        seconds = latency_ms / 1000
        self.buckets[_bucket(seconds)] += 1
        self.seconds += seconds
        self.results[severity] = self.results.get(severity, 0) + 1
        if cert_expires_at is not None:
            self.cert = (cert_expires_at, cert_expires_at - checked_at)

    def copy(self) -> _State:
        return replace(self, buckets=list(self.buckets), results=dict(self.results))


def histogram(kind: str, label: str, buckets: list[int], seconds: float) -> str:
    """A target's latency histogram in the text format: one f-string, the fastest way Python has (``BUCKETS``)."""
    b, t = f'monitor_check_duration_seconds_bucket{{kind="{kind}",le="', f'",target="{label}"}} '
    c = list(accumulate(buckets))
    return (
        f"{b}0.005{t}{c[0]}\n{b}0.01{t}{c[1]}\n{b}0.025{t}{c[2]}\n{b}0.05{t}{c[3]}\n{b}0.1{t}{c[4]}\n"
        f"{b}0.25{t}{c[5]}\n{b}0.5{t}{c[6]}\n{b}1.0{t}{c[7]}\n{b}2.5{t}{c[8]}\n{b}5.0{t}{c[9]}\n"
        f"{b}10.0{t}{c[10]}\n{b}30.0{t}{c[11]}\n{b}+Inf{t}{c[12]}\n"
        f'monitor_check_duration_seconds_count{{kind="{kind}",target="{label}"}} {c[12]}\n'
        f'monitor_check_duration_seconds_sum{{kind="{kind}",target="{label}"}} {seconds!r}\n'
    )


def _bucket(seconds: float) -> int:
    for n, bound in enumerate(BUCKETS):
        if seconds <= bound:
            return n
    return len(BUCKETS)


class TargetSeries(Collector):
    """The per-target series; ``histograms``: whether each target has its latency histogram."""

    def __init__(self, histograms: bool = True) -> None:
        self.histograms = histograms
        self._states: dict[str, _State] = {}
        # each family's lines, by target, as last written: strings only, so a scrape gives the collector little to do
        self._text: tuple[dict[str, str], ...] = tuple({} for _ in FAMILIES)
        self._dirty: set[str] = set()
        self._lock = threading.Lock()  # the states, the text and the dirty set
        self._writing = threading.Lock()  # one scrape writes at a time

    def observe(self, results: Iterable[Result]) -> None:
        self.observe_rows((r.name, r.kind, r.severity, r.latency_ms, r.cert_expires_at, r.checked_at) for r in results)

    def observe_rows(self, rows: Iterable[tuple[str, str, str, float, float | None, float]]) -> None:
        """Results as (name, kind, severity, latency_ms, cert_expires_at, checked_at)."""
        with self._lock:
            for name, kind, severity, latency_ms, cert_expires_at, checked_at in rows:
                state = self._states.get(name)
                if state is None or state.kind != kind:
                    state = self._states[name] = _State(kind, escape(name))
                    for text in self._text:  # a scrape lists targets in the order they were first seen
                        text.setdefault(name, "")
                state.add(severity, latency_ms, cert_expires_at, checked_at)
                self._dirty.add(name)

    def forget(self, target: str) -> None:
        """Drop every series of a target that left the config."""
        with self._lock:
            self._states.pop(target, None)
            for text in self._text:
                text.pop(target, None)
            self._dirty.discard(target)

    def exposition(self, wanted: set[str] | frozenset[str] = frozenset()) -> bytes:
        """These families in the text format (with ``wanted``, only those whose series it names)."""
        with self._writing:
            with self._lock:
                dirty, self._dirty = list(self._dirty), set()
            for start in range(0, len(dirty), SLICE):  # the lock held briefly at a time: results go on being recorded
                with self._lock:
                    for name in dirty[start : start + SLICE]:
                        state = self._states.get(name)
                        if state is not None:
                            self._write(name, state)
            parts = []
            for n, header in enumerate(HEADERS):
                if (not wanted or wanted & SAMPLES[n]) and (self.histograms or n != 2):
                    with self._lock:
                        parts.append(header + "".join(self._text[n].values()))
        return "".join(parts).encode()

    def _write(self, name: str, s: _State) -> None:
        """A target's lines, each family's in its own text."""
        up, severity, latency, checks, expiry, left = self._text
        kind, label = s.kind, s.label
        labels = f'{{kind="{kind}",target="{label}"}}'
        up[name] = f"monitor_check_up{labels} {s.up}\n"
        severity[name] = f"monitor_check_severity{labels} {s.severity}\n"
        if self.histograms:
            latency[name] = histogram(kind, label, s.buckets, s.seconds)
        checks[name] = "".join(
            [f'monitor_checks_total{{kind="{kind}",result="{result}",target="{label}"}} {count}\n' for result, count in s.results.items()]
        )
        if s.cert is not None:
            expiry[name] = f'monitor_check_tls_cert_expiry_timestamp_seconds{{target="{label}"}} {s.cert[0]!r}\n'
            left[name] = f'monitor_check_tls_cert_expires_in_seconds{{target="{label}"}} {s.cert[1]!r}\n'

    def describe(self) -> Iterator[Metric]:
        return self._families({})

    def collect(self) -> Iterator[Metric]:
        if written_elsewhere():
            return iter(())
        with self._lock:
            states = {name: state.copy() for name, state in self._states.items()}
        return self._families(states)

    def _families(self, states: dict[str, _State]) -> Iterator[Metric]:
        """The slow way: a prometheus_client family of each, for the registry's own readers."""
        (up, _, up_help), (sev, _, sev_help), (dur, _, dur_help), (total, _, total_help), (expiry, _, expiry_help), (left, _, left_help) = (
            FAMILIES
        )
        gauges = [
            GaugeMetricFamily(up, up_help, labels=["target", "kind"]),
            GaugeMetricFamily(sev, sev_help, labels=["target", "kind"]),
            GaugeMetricFamily(expiry, expiry_help, labels=["target"]),
            GaugeMetricFamily(left, left_help, labels=["target"]),
        ]
        histogram = HistogramMetricFamily(dur, dur_help, labels=["target", "kind"])
        checks = CounterMetricFamily(total, total_help, labels=["target", "kind", "result"])
        bounds = [repr(bound) for bound in BUCKETS] + ["+Inf"]
        for name, s in states.items():
            gauges[0].add_metric([name, s.kind], s.up)
            gauges[1].add_metric([name, s.kind], s.severity)
            histogram.add_metric([name, s.kind], list(zip(bounds, accumulate(s.buckets), strict=True)), s.seconds)
            for result, count in s.results.items():
                checks.add_metric([name, s.kind, result], count)
            if s.cert is not None:
                gauges[2].add_metric([name], s.cert[0])
                gauges[3].add_metric([name], s.cert[1])
        families: list[Metric] = [gauges[0], gauges[1], *([histogram] if self.histograms else []), checks, *gauges[2:]]
        return iter(families)
