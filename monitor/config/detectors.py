"""``detectors:``, the thresholds of the failure-pattern detectors (monitor/incidents/patterns.py)."""

from __future__ import annotations

from pydantic import Field, model_validator

from monitor.config.values import Duration, Strict


class Detectors(Strict):
    """Thresholds of the failure-pattern detectors (see patterns.py).

    Latency drift (the median of the last ``latency_recent`` passing checks above ``latency_factor`` times the
    median of the ``latency_baseline`` before them, and ``latency_margin`` above it) opens an incident, and so
    pages, only with ``page_on_drift: true``. By default it is reported (to the agent, ``monitor check``) and
    opens nothing, nor keeps an incident open: a loaded host makes a loopback target's 3 ms a 50 ms for a few
    seconds, and a page about that teaches people to ignore pages.
    """

    consecutive: int = Field(default=3, ge=1)
    window_failures: int = Field(default=3, ge=1)
    window_size: int = Field(default=10, ge=2)
    flap_changes: int = Field(default=4, ge=2)
    flap_window: Duration = 600.0
    latency_factor: float = Field(default=3.0, gt=1.0)
    latency_recent: int = Field(default=5, ge=1)
    latency_baseline: int = Field(default=50, ge=5)
    latency_margin: Duration = 0.025  # and at least this much slower: 1 ms to 4 ms on a busy host is no incident
    recover_after: int = Field(default=2, ge=1)
    page_on_drift: bool = False  # latency drift opens an incident (and alerts) only when asked
    # the window and flapping detectors open incidents too; off, only ``consecutive`` failures do (Gatus' and Kuma's
    # rule: an import turns them off, so it pages when the source tool did)
    window: bool = True
    flapping: bool = True

    @model_validator(mode="after")
    def _window_fits(self) -> Detectors:
        if self.window_failures > self.window_size:
            raise ValueError("window_failures cannot exceed window_size")
        return self
