"""What a target's detector window costs in memory and CPU: the deque of ``_Past`` rows until issue 22, and now
the columns of fixed size (``monitor.incidents.history.Window``).

    python bench/window_memory.py [--targets 5000] [--checks 20000]

Both windows are built from the same 200 results (one a second, fresh objects for each window as a check makes
them; the old window is handed each as the dict it was handed then) and printed side by side:

* bytes per target for a full window, and per row (tracemalloc, in this process);
* the RSS of ``--targets`` full windows, each kind in a fresh process of its own (RSS after minus before);
* CPU per check on a full window: add the result, then run the detectors on what the window hands over
  (the old window with the detectors as they were, the new one with ``patterns.detect``).

The old window and detectors are copied here as they were: the baseline.
"""

from __future__ import annotations

import argparse
import pickle
import re
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from monitor.checks.engine import Result  # noqa: E402
from monitor.config import Detectors  # noqa: E402
from monitor.core.results import Checked  # noqa: E402
from monitor.incidents import patterns  # noqa: E402
from monitor.incidents.history import Window  # noqa: E402
from monitor.incidents.tracker import HISTORY  # noqa: E402

Row = Mapping[str, Any]
CFG = Detectors()


class _Past(Mapping[str, Any]):
    """Until issue 22: an older result, reduced to the fields the detectors read."""

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


class OldWindow:
    """Until issue 22: a deque of rows, the newest whole, older ones ``_Past``."""

    def __init__(self, rows: Sequence[Row], limit: int) -> None:
        self.limit = limit
        self.rows: deque[Row] = deque((rows[0], *map(_Past, rows[1:limit])) if rows else ())
        self.passing = sum(1 for row in self.rows if row["ok"])

    def add(self, result: Result, cfg: Detectors, now: float) -> list[Row]:
        row, rows = _row(result), self.rows
        if rows and row["checked_at"] < rows[0]["checked_at"]:
            rows.insert(next((i for i, r in enumerate(rows) if r["checked_at"] <= row["checked_at"]), len(rows)), _Past(row))
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
            len(rows) > counted
            and rows[0]["ok"]
            and rows[-1]["checked_at"] < now - cfg.flap_window
            and (not rows[-1]["ok"] or self.passing > passing)
        ):
            self.passing -= 1 if rows.pop()["ok"] else 0


def old_detect(rows: Sequence[Row], cfg: Detectors, now: float) -> list[str]:
    """The four detectors until issue 22, row by row (what they found, by name)."""
    found, run = [], 0
    for row in rows:
        if row["ok"]:
            break
        run += 1
    if run >= cfg.consecutive:
        found.append("consecutive")
    if len([row for row in rows[: cfg.window_size] if not row["ok"]]) >= cfg.window_failures:
        found.append("window")
    inside = [bool(row["ok"]) for row in rows if row["checked_at"] >= now - cfg.flap_window]
    if sum(1 for a, b in zip(inside, inside[1:], strict=False) if a != b) >= cfg.flap_changes:
        found.append("flapping")
    latencies = [row["latency_ms"] for row in rows if row["ok"] and row.get("latency_ms") is not None]
    if len(latencies) >= cfg.latency_recent + max(5, cfg.latency_recent):
        recent = statistics.median(latencies[: cfg.latency_recent])
        base = statistics.median(latencies[cfg.latency_recent : cfg.latency_recent + cfg.latency_baseline])
        if base > 0 and recent > cfg.latency_factor * base and recent - base >= cfg.latency_margin * 1000:
            found.append("latency_drift")
    return found


def _row(result: Result) -> Row:
    """A result as the old window was handed it: the dict a stored row was until issue 44."""
    return {
        "target": result.name,
        "checked_at": result.checked_at,
        "ok": int(result.ok),
        "severity": result.severity,
        "status_code": result.status_code,
        "latency_ms": result.latency_ms,
        "error": result.error,
        "detail": result.detail,
    }


def new_detect(rows: Sequence[Checked], cfg: Detectors, now: float) -> list[str]:
    return [p.name for p in patterns.detect("t", rows, cfg, now)]


KINDS: dict[str, tuple[Callable[[Sequence[Any], int], Any], Callable[[Sequence[Any], Detectors, float], list[str]]]] = {
    "before": (OldWindow, old_detect),
    "now": (Window, new_detect),
}


def results(count: int, start: float = 1_000_000.0) -> bytes:
    """``count`` results a second apart, oldest first, pickled: each load makes fresh objects, as checks do."""
    made = [
        Result(
            "t",
            "http://10.0.0.1/",
            n % 9 != 0,
            "ok" if n % 9 else "critical",
            200 if n % 9 else 503,
            3.0 + n % 5 * 0.5,
            None if n % 9 else "unexpected_status",
            "status 200" if n % 9 else "status 503",
            start + n,
        )
        for n in range(count)
    ]
    return pickle.dumps(made)


def full_window(kind: str, blob: bytes) -> Any:
    """A window of ``kind`` fed the results one at a time, as the tracker feeds it."""
    made: list[Result] = pickle.loads(blob)
    window = KINDS[kind][0]([], HISTORY)
    for result in made:
        window.add(result, CFG, result.checked_at)
    return window


def traced_bytes(kind: str, blob: bytes, windows: int = 100) -> float:
    """Bytes a full window of ``kind`` holds (tracemalloc, over ``windows`` of them: the allocator's free lists
    keep a few KB traced whatever is built)."""
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    built = [full_window(kind, blob) for _ in range(windows)]
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del built
    return held / windows


def rss_kb() -> int:
    found = re.search(r"^VmRSS:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.MULTILINE)
    return int(found.group(1)) if found else 0


def rss_of_windows(kind: str, targets: int) -> None:
    """In a process of its own: the RSS ``targets`` full windows of ``kind`` add, in MB, printed."""
    blob = results(HISTORY)
    full_window(kind, blob)  # the words, the classes: what every window shares
    before = rss_kb()
    windows = [full_window(kind, blob) for _ in range(targets)]
    print((rss_kb() - before) / 1024, len(windows))


def cpu_per_check(kind: str, checks: int) -> float:
    """Microseconds of CPU to add a result to a full window and run the detectors on it."""
    make, detect = KINDS[kind]
    window = full_window(kind, results(HISTORY))
    fresh: list[Result] = pickle.loads(results(checks, start=1_000_000.0 + HISTORY))
    started = time.process_time()
    for result in fresh:
        detect(window.add(result, CFG, result.checked_at), CFG, result.checked_at)
    return (time.process_time() - started) / checks * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", type=int, default=5000)
    parser.add_argument("--checks", type=int, default=20_000)
    parser.add_argument("--rss", choices=KINDS, help=argparse.SUPPRESS)  # the child process of one RSS figure
    args = parser.parse_args()
    if args.rss:
        rss_of_windows(args.rss, args.targets)
        return
    blob = results(HISTORY)
    full = {kind: full_window(kind, blob) for kind in KINDS}
    assert new_detect(full["now"].history(), CFG, 1e6 + HISTORY) == old_detect(list(full["before"].rows), CFG, 1e6 + HISTORY)
    per_target = {kind: traced_bytes(kind, blob) for kind in KINDS}
    rss = {
        kind: float(
            subprocess.run(
                [sys.executable, __file__, "--rss", kind, "--targets", str(args.targets)], check=True, capture_output=True, text=True
            ).stdout.split()[0]
        )
        for kind in KINDS
    }
    cpu = {kind: cpu_per_check(kind, args.checks) for kind in KINDS}
    print(f"a full window ({HISTORY} rows){'':<14} | {'before (_Past deque)':>20} | {'now (columns)':>14} | {'ratio':>6}")
    lines = [
        ("bytes per target", per_target, "{:,.0f}"),
        ("bytes per row", {k: v / HISTORY for k, v in per_target.items()}, "{:.1f}"),
        (f"RSS of {args.targets:,} full windows, MB", rss, "{:.1f}"),
        ("CPU per check (add + detect), µs", cpu, "{:.1f}"),
    ]
    for label, figures, form in lines:
        print(
            f"{label:<36} | {form.format(figures['before']):>20} | {form.format(figures['now']):>14} | "
            f"{figures['before'] / figures['now']:>5.1f}x"
        )


if __name__ == "__main__":
    main()
