"""A histogram that also takes observations counted elsewhere: :class:`CountedHistogram`.

prometheus_client's ``Histogram`` takes one value per ``observe`` (a lock and a walk of the buckets each) and has
no public way to add counts made elsewhere; a worker's batch comes with its phase durations already counted into
buckets (:class:`~monitor.core.batches.Counts`). So these histograms are custom collectors, the way
prometheus_client documents them: the counts are held here, one :class:`Counts` per label values, and turned into a
``HistogramMetricFamily`` at scrape time. A batch costs one addition per bucket.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate

from prometheus_client import CollectorRegistry
from prometheus_client.core import HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from monitor.core.batches import Counts


class CountedHistogram(Collector):
    """A histogram family with ``labelnames``, registered in ``registry`` (None: in none)::

    lag = CountedHistogram("lag_seconds", "How late.", buckets=(0.1, 1.0), registry=registry)
    lag.observe(0.4)
    batch = lag.counted([0.05, 2.0])  # counted where the values are (a worker), added at once
    lag.add(batch)
    """

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        buckets: Sequence[float],
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.name, self.documentation, self.labelnames = name, documentation, tuple(labelnames)
        self.bounds = tuple(float(bound) for bound in buckets)
        self._les = [floatToGoString(bound) for bound in (*self.bounds, math.inf)]  # type: ignore[no-untyped-call]  # le as Histogram writes it
        self._counts: dict[tuple[str, ...], Counts] = {} if labelnames else {(): Counts(self.bounds)}  # as Histogram: 0s at once
        self._lock = threading.Lock()
        if registry is not None:
            registry.register(self)

    def counted(self, values: Iterable[float]) -> Counts:
        """``values`` counted into this histogram's buckets, to be added with :meth:`add`."""
        counts = Counts(self.bounds)
        for value in values:
            counts.add(value)
        return counts

    def observe(self, value: float, *labels: str) -> None:
        with self._lock:
            self._held(labels).add(value)

    def add(self, counts: Counts, *labels: str) -> None:
        """Add observations counted into this histogram's buckets (``counts.bounds`` must be its own)."""
        if counts.bounds != self.bounds:
            raise ValueError(f"counts into buckets {counts.bounds} for a histogram of buckets {self.bounds}")
        with self._lock:
            held = self._held(labels)
            held.buckets = [mine + theirs for mine, theirs in zip(held.buckets, counts.buckets, strict=True)]
            held.total += counts.total

    def _held(self, labels: tuple[str, ...]) -> Counts:
        if len(labels) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, not {labels}")
        held = self._counts.get(labels)
        if held is None:
            held = self._counts[labels] = Counts(self.bounds)
        return held

    def describe(self) -> Iterator[HistogramMetricFamily]:
        yield HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[HistogramMetricFamily]:
        with self._lock:
            held = [(labels, list(accumulate(counts.buckets)), counts.total) for labels, counts in self._counts.items()]
        family = HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)
        for labels, cumulative, total in held:
            family.add_metric(list(labels), list(zip(self._les, cumulative, strict=True)), total)
        yield family
