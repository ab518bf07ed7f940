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
from dataclasses import dataclass
from typing import Any

from monitor.config import Detectors

Row = Mapping[str, Any]

# When several patterns fire, the incident is named after the most telling one.
PRECEDENCE = ["consecutive", "flapping", "window", "latency_drift"]


@dataclass(frozen=True)
class Pattern:
    name: str
    target: str
    summary: str
    severity: str = "critical"


def severity_of(failed: Sequence[Row]) -> str:
    """``critical`` when any of these failed checks found the target down, ``warning`` when all were soft."""
    return "warning" if failed and all(row.get("severity") == "warning" for row in failed) else "critical"


# A failed heartbeat check already covers a whole period + grace of silence (or the job's own word that it
# failed): waiting for more of them would only add intervals before anyone hears of it.
CONCLUSIVE = frozenset({"heartbeat_missed", "heartbeat_failed"})


def consecutive(target: str, rows: Sequence[Row], n: int) -> Pattern | None:
    run = 0
    for row in rows:
        if row["ok"]:
            break
        run += 1
    if 0 < run < n and rows[0].get("error") in CONCLUSIVE:
        return Pattern("consecutive", target, f"{target}: {rows[0]['error'].replace('_', ' ')}", severity_of(rows[:run]))
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

    def __init__(self, rows: Sequence[Row], limit: int, *, version: int = 0) -> None:
        self.limit = limit
        self.version = version  # the writer's count of stored results these rows include (Store.results_written)
        self.rows: deque[Row] = deque((rows[0], *map(_Past, rows[1:limit])) if rows else ())
        self.passing = sum(1 for row in self.rows if row["ok"])

    def add(self, row: Row, cfg: Detectors, now: float) -> list[Row]:
        """Add the newest result; returns the rows, newest first."""
        if self.rows:
            self.rows[0] = _Past(self.rows[0])
        self.rows.appendleft(row)
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


# The closed set a diagnosis picks its root cause from (record_diagnosis, the eval, the builtin model).
ROOT_CAUSES = {
    "server_error": "the application answers with 5xx error statuses",
    "client_error": "the endpoint answers 4xx: moved, removed, or its auth changed",
    "timeout": "the service hangs or is overloaded: checks time out",
    "connection_refused": "the process is down or not listening on its port",
    "connection_reset": "the process crashes or something drops connections",
    "dns_failure": "the host name does not resolve",
    "tls_error": "TLS handshake or certificate problem: expired, wrong name or untrusted",
    "redirect_loop": "redirects go round in a loop",
    "bad_content": "it answers, but the body or a JSON health field is wrong",
    "slow_response": "it answers correctly, but far slower than its baseline",
    "flapping": "it keeps alternating between up and down",
    "job_missing": "a job that pings (cron, worker, backup) stopped pinging: it hangs, crashed or never started",
    "job_failed": "the job ran and reported its own failure",
    "recovered": "the failure did not last: the target passes again",
    "unknown": "the evidence points to no single cause",
}
NOT_ACTIONABLE = frozenset({"recovered"})
ERROR_CAUSES = {"timeout": "timeout", "connection_refused": "connection_refused", "connection_reset": "connection_reset",
                "dns": "dns_failure", "tls": "tls_error", "too_many_redirects": "redirect_loop",
                "body_too_large": "bad_content", "protocol": "unknown", "connection_error": "unknown",
                "tcp_refused": "connection_refused", "tcp_timeout": "timeout", "tcp_unexpected_reply": "bad_content",
                "cert_expired": "tls_error", "cert_expiring": "tls_error", "cert_untrusted": "tls_error",
                "cert_hostname_mismatch": "tls_error", "dns_nxdomain": "dns_failure", "dns_servfail": "dns_failure",
                "dns_timeout": "dns_failure", "dns_unexpected_answer": "dns_failure", "dns_error": "dns_failure",
                "heartbeat_missed": "job_missing", "heartbeat_failed": "job_failed"}


def root_cause_of(error: str | None, status: int | None = None, detail: str = "", pattern: str = "") -> str:
    """The root cause a check result and the detectors' pattern point to, read literally (no memory)."""
    if "flapping" in pattern:
        return "flapping"
    if "latency_drift" in pattern or (error == "condition_failed" and "latency" in detail):
        return "slow_response"
    if error is None:
        return "recovered"
    if error == "unexpected_status":
        return "server_error" if (status or 0) >= 500 else "client_error"
    if error == "condition_failed":
        return "tls_error" if "certificate" in detail else "bad_content"
    return ERROR_CAUSES.get(error, "unknown")


def read_cause(rows: Sequence[Row], pattern: str) -> str | None:
    """The root cause a target's recent results (newest first) and the detectors' pattern point to.

    A literal reading, no memory: a passing latest check reads as recovered, unless the failures are
    scattered among passes (the window detector), when it reads as the latest failure's cause.
    """
    if not rows:
        return None
    if "flapping" in pattern or "latency_drift" in pattern:
        return root_cause_of(None, pattern=pattern)
    failing = next((r for r in rows if not r["ok"]), None)
    if rows[0]["ok"] and ("window" not in pattern or failing is None):
        return "recovered"
    row = rows[0] if not rows[0]["ok"] else failing
    assert row is not None
    return root_cause_of(row["error"], row.get("status_code"), row.get("detail") or "", pattern)
