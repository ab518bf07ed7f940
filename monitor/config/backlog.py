"""``backlog:``, how far checking may run ahead of recording (backpressure).

A check starts only while the results not yet recorded (in flight, waiting for the store, being written)
are fewer than ``max_results`` and the oldest waiting one is younger than ``max_age``; a slot that passes
while checks are held back counts as skipped (``monitor_checks_skipped_total{reason="backlog"}``). The
writer records at most ``batch`` results per transaction. A result older than ``stale_after`` of its
target's intervals when it is recorded (a database that refused writes for minutes) is stored, but the
detectors do not judge the target by it.
"""

from __future__ import annotations

from pydantic import Field

from monitor.config.values import Duration, Strict


class BacklogConfig(Strict):
    max_results: int = Field(default=1000, ge=1, le=1_000_000)
    max_age: Duration = Field(default=1.0, gt=0)
    batch: int = Field(default=250, ge=1, le=100_000)
    stale_after: float = Field(default=3.0, gt=0)  # intervals of the target
