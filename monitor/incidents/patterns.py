"""Failure-pattern detectors: pure functions over one target's recent results.

Each detector takes results newest first (``ok``, ``checked_at``, ``latency_ms``: a
:class:`~monitor.core.results.Checked` each, as the store returns them) and returns a :class:`Pattern` or ``None``::

    consecutive     the last N checks all failed
    window          K or more of the last M checks failed
    flapping        F or more up/down changes within a time window
    latency_drift   the recent median latency is above factor x the baseline median

``detect`` runs them all with thresholds from config. ``alert_text`` renders
the line the agent sees appended to an observation. Each detector reads the rows as a
:class:`~monitor.incidents.history.History` (columns, newest first): a target's
:class:`~monitor.incidents.history.Window` hands one over after each result, and rows read
from the store become one.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from monitor.config import Detectors
from monitor.core.causes import NOT_ACTIONABLE as NOT_ACTIONABLE  # root causes and Pattern live in monitor.core
from monitor.core.causes import ROOT_CAUSES as ROOT_CAUSES
from monitor.core.causes import read_cause as read_cause
from monitor.core.causes import root_cause_of as root_cause_of
from monitor.core.incidents import Pattern as Pattern
from monitor.core.incidents import Severity
from monitor.incidents.history import WORDS, History, Row

# When several patterns fire, the incident is named after the most telling one.
PRECEDENCE = ["consecutive", "flapping", "window", "latency_drift"]


def severity_of(history: History, failed: Sequence[int]) -> Severity:
    """``critical`` when any of these failed checks (places, newest first) found the target down, ``warning``
    when all were soft."""
    warning = WORDS.code("warning")
    return "warning" if failed and all(history.severity[i] == warning for i in failed) else "critical"


# A failed heartbeat check already covers a whole period + grace of silence (or the job's own word that it
# failed): waiting for more of them would only add intervals before anyone hears of it.
# Its summary says what happened (silent for how long), not how many checks have seen it: one per interval.
CONCLUSIVE = {"heartbeat_missed": "silent", "heartbeat_failed": "failed"}


def consecutive(target: str, rows: Sequence[Row], n: int) -> Pattern | None:
    history = History.of(rows)
    run = 0
    for ok in history.ok:
        if ok:
            break
        run += 1
    held, run = run, history.failing[0] if history.failing else run  # a window counts a long run whole
    newest = history[0] if run else None
    if newest is not None and newest.error in CONCLUSIVE:
        said = f"{target}: {CONCLUSIVE[newest.error]}: {newest.detail or ''}".rstrip(": ")
        return Pattern("consecutive", target, said, severity_of(history, range(held)))
    if run >= n:
        return Pattern("consecutive", target, f"{run} consecutive failures of {target}", severity_of(history, range(held)))
    return None


def window(target: str, rows: Sequence[Row], k: int, m: int) -> Pattern | None:
    history = History.of(rows)
    failed = [i for i, ok in enumerate(history.ok[:m]) if not ok]
    if len(failed) >= k:
        return Pattern(
            "window", target, f"{len(failed)} failures in last {min(m, len(history))} checks of {target}", severity_of(history, failed)
        )
    return None


def state_changes(rows: Sequence[Row], since: float) -> int:
    history = History.of(rows)
    inside = [bool(ok) for ok, at in zip(history.ok, history.checked_at, strict=True) if at >= since]
    return sum(1 for a, b in zip(inside, inside[1:], strict=False) if a != b)


def flapping(target: str, rows: Sequence[Row], changes: int, seconds: float, now: float) -> Pattern | None:
    seen = state_changes(rows, now - seconds)
    if seen >= changes:
        return Pattern("flapping", target, f"flapping: {seen} changes in {_span(seconds)}", "warning")
    return None


def latency_drift(target: str, rows: Sequence[Row], factor: float, recent: int, baseline: int, margin_ms: float = 0.0) -> Pattern | None:
    history = History.of(rows)
    # NaN is a check without a latency: it is not equal to itself
    latencies = [ms for ok, ms in zip(history.ok, history.latency_ms, strict=True) if ok and ms == ms]
    if len(latencies) < recent + max(5, recent):
        return None
    now_median = statistics.median(latencies[:recent])
    base_median = statistics.median(latencies[recent : recent + baseline])
    if base_median > 0 and now_median > factor * base_median and now_median - base_median >= margin_ms:
        return Pattern(
            "latency_drift",
            target,
            f"latency drift on {target}: median {now_median:.0f} ms vs baseline {base_median:.0f} ms (x{now_median / base_median:.1f})",
            "warning",
        )
    return None


def detect(target: str, rows: Sequence[Row], cfg: Detectors, now: float) -> list[Pattern]:
    """Every pattern the thresholds let through, most telling first (the window and flapping detectors only where
    they are on)."""
    history = History.of(rows)
    found = [
        consecutive(target, history, cfg.consecutive),
        window(target, history, cfg.window_failures, cfg.window_size) if cfg.window else None,
        flapping(target, history, cfg.flap_changes, cfg.flap_window, now) if cfg.flapping else None,
        latency_drift(target, history, cfg.latency_factor, cfg.latency_recent, cfg.latency_baseline, cfg.latency_margin * 1000),
    ]
    return sorted((p for p in found if p is not None), key=lambda p: PRECEDENCE.index(p.name))


def recovered(rows: Sequence[Row], n: int) -> bool:
    """The last ``n`` checks all passed."""
    history = History.of(rows)
    return len(history) >= n and all(history.ok[:n])


def alert_text(patterns: Sequence[Pattern]) -> str:
    """``[ALERT] Pattern detected: 3 failures in last 10 checks of api (flapping: 4 changes in 10 min)``."""
    if not patterns:
        return ""
    head, *rest = patterns
    extra = f" ({'; '.join(p.summary for p in rest)})" if rest else ""
    return f"[ALERT] Pattern detected: {head.summary}{extra}"


def _span(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"
