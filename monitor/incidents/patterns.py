"""Failure-pattern detectors: pure functions over one target's recent results.

Each detector takes results newest first (``ok``, ``checked_at``, ``latency_ms``,
as the store returns them) and returns a :class:`Pattern` or ``None``::

    consecutive     the last N checks all failed
    window          K or more of the last M checks failed
    flapping        F or more up/down changes within a time window
    latency_drift   the recent median latency is above factor x the baseline median

``detect`` runs them all with thresholds from config. ``alert_text`` renders
the line the agent sees appended to an observation. A :class:`Window` holds a
target's recent results in memory, as much as the detectors can see.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from monitor.config import Detectors
from monitor.core.causes import NOT_ACTIONABLE as NOT_ACTIONABLE  # root causes and Pattern live in monitor.core
from monitor.core.causes import ROOT_CAUSES as ROOT_CAUSES
from monitor.core.causes import read_cause as read_cause
from monitor.core.causes import root_cause_of as root_cause_of
from monitor.core.incidents import Pattern as Pattern

Row = Mapping[str, Any]

# When several patterns fire, the incident is named after the most telling one.
PRECEDENCE = ["consecutive", "flapping", "window", "latency_drift"]


def severity_of(failed: Sequence[Row]) -> str:
    """``critical`` when any of these failed checks found the target down, ``warning`` when all were soft."""
    return "warning" if failed and all(row.get("severity") == "warning" for row in failed) else "critical"


# A failed heartbeat check already covers a whole period + grace of silence (or the job's own word that it
# failed): waiting for more of them would only add intervals before anyone hears of it.
# Its summary says what happened (silent for how long), not how many checks have seen it: one per interval.
CONCLUSIVE = {"heartbeat_missed": "silent", "heartbeat_failed": "failed"}


def consecutive(target: str, rows: Sequence[Row], n: int) -> Pattern | None:
    run = 0
    for row in rows:
        if row["ok"]:
            break
        run += 1
    if run and rows[0].get("error") in CONCLUSIVE:
        said = f"{target}: {CONCLUSIVE[rows[0]['error']]}: {rows[0].get('detail') or ''}".rstrip(": ")
        return Pattern("consecutive", target, said, severity_of(rows[:run]))
    if run >= n:
        return Pattern("consecutive", target, f"{run} consecutive failures of {target}", severity_of(rows[:run]))
    return None


def window(target: str, rows: Sequence[Row], k: int, m: int) -> Pattern | None:
    failed = [row for row in rows[:m] if not row["ok"]]
    if len(failed) >= k:
        return Pattern("window", target, f"{len(failed)} failures in last {len(rows[:m])} checks of {target}",
                       severity_of(failed))
    return None


def state_changes(rows: Sequence[Row], since: float) -> int:
    inside = [bool(row["ok"]) for row in rows if row["checked_at"] >= since]
    return sum(1 for a, b in zip(inside, inside[1:], strict=False) if a != b)


def flapping(target: str, rows: Sequence[Row], changes: int, seconds: float, now: float) -> Pattern | None:
    seen = state_changes(rows, now - seconds)
    if seen >= changes:
        return Pattern("flapping", target, f"flapping: {seen} changes in {_span(seconds)}", "warning")
    return None


def latency_drift(target: str, rows: Sequence[Row], factor: float, recent: int, baseline: int,
                  margin_ms: float = 0.0) -> Pattern | None:
    latencies = [row["latency_ms"] for row in rows if row["ok"] and row.get("latency_ms") is not None]
    if len(latencies) < recent + max(5, recent):
        return None
    now_median = statistics.median(latencies[:recent])
    base_median = statistics.median(latencies[recent:recent + baseline])
    if base_median > 0 and now_median > factor * base_median and now_median - base_median >= margin_ms:
        return Pattern("latency_drift", target,
                       f"latency drift on {target}: median {now_median:.0f} ms vs baseline {base_median:.0f} ms "
                       f"(x{now_median / base_median:.1f})", "warning")
    return None


def detect(target: str, rows: Sequence[Row], cfg: Detectors, now: float) -> list[Pattern]:
    """Every pattern the thresholds let through, most telling first."""
    found = [
        consecutive(target, rows, cfg.consecutive),
        window(target, rows, cfg.window_failures, cfg.window_size),
        flapping(target, rows, cfg.flap_changes, cfg.flap_window, now),
        latency_drift(target, rows, cfg.latency_factor, cfg.latency_recent, cfg.latency_baseline, cfg.latency_margin * 1000),
    ]
    return sorted((p for p in found if p is not None), key=lambda p: PRECEDENCE.index(p.name))


def recovered(rows: Sequence[Row], n: int) -> bool:
    """The last ``n`` checks all passed."""
    return len(rows) >= n and all(row["ok"] for row in rows[:n])


class _Past(Mapping[str, Any]):
    """An older result, reduced to the fields the detectors read: about 130 bytes instead of 600."""

    __slots__ = ("checked_at", "ok", "latency_ms", "severity", "error", "status_code")
    FIELDS = __slots__

    def __init__(self, row: Row) -> None:
        for name in self.FIELDS:
            setattr(self, name, row.get(name))

    def __getitem__(self, key: str) -> Any:
        if key not in self.FIELDS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.FIELDS)

    def __len__(self) -> int:
        return len(self.FIELDS)


class Window:
    """A target's recent results, newest first, as ``detect`` needs them, kept in memory.

    The newest row is whole; older ones keep what the detectors read. Old rows go once no detector
    can see them any more: beyond the longest count (``window_size``, ``consecutive``,
    ``recover_after``), the passing checks ``latency_drift`` compares, and the flapping time window;
    never during a run of failures (its length is in the incident's summary), and never more than
    ``limit`` rows. So ``detect`` finds in a window what it finds in the same rows read from the store.
    """

    def __init__(self, rows: Sequence[Row], limit: int) -> None:
        self.limit = limit
        self.rows: deque[Row] = deque((rows[0], *map(_Past, rows[1:limit])) if rows else ())
        self.passing = sum(1 for row in self.rows if row["ok"])

    def add(self, row: Row, cfg: Detectors, now: float) -> list[Row]:
        """Add a result just stored; returns the rows, newest first, in the store's order (by ``checked_at``:
        a check that started before the newest one and ended after it goes behind it)."""
        rows = self.rows
        if rows and row["checked_at"] < rows[0]["checked_at"]:
            rows.insert(next((i for i, r in enumerate(rows) if r["checked_at"] <= row["checked_at"]), len(rows)),
                        _Past(row))
        else:
            if rows:
                rows[0] = _Past(rows[0])
            rows.appendleft(row)
        self.passing += 1 if row["ok"] else 0
        self._trim(cfg, now)
        return list(self.rows)

    def _trim(self, cfg: Detectors, now: float) -> None:
        rows = self.rows
        counted = max(cfg.consecutive, cfg.window_size, cfg.recover_after)
        passing = cfg.latency_recent + max(cfg.latency_baseline, 5, cfg.latency_recent)
        while len(rows) > self.limit or (
                len(rows) > counted and rows[0]["ok"] and rows[-1]["checked_at"] < now - cfg.flap_window
                and (not rows[-1]["ok"] or self.passing > passing)):
            self.passing -= 1 if rows.pop()["ok"] else 0


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
