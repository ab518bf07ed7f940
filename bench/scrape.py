"""CPU seconds per full /metrics scrape at fleet sizes (issue 22, part 5), beside another checkout's.

    python bench/scrape.py [--sizes 5000,50000] [--scrapes 3] [--before DIR]

For each size, a fresh registry and :class:`~monitor.metrics.Metrics` with that many http targets, each
given one result (latency spread over the buckets, a few failing) and an open-incidents source over every
target, as the daemon's. Then it times, in CPU seconds of this process (``time.process_time``), a full
scrape (``Metrics.scrape()``, what ``GET /metrics`` returns):

    changed      every target got a new result since the last scrape (1 s checks, a 15 s scrape interval)
    unchanged    nothing changed since the last scrape
    observe      the CPU to record one result per target (the cost moved off the scrape, if any)

``--before DIR`` runs the same in a process importing ``monitor`` from another checkout (``git archive
<commit> | tar -x -C DIR``), so both figures print side by side; ``--histograms off`` runs this checkout
with ``metrics.target_histograms: false``. Print ``uptime`` beside it: a loaded machine moves CPU time a
little too (caches).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def figures(size: int, scrapes: int, histograms: bool) -> dict[str, Any]:
    """This process's ``monitor`` (whatever sys.path found) on ``size`` targets."""
    from prometheus_client import CollectorRegistry

    from monitor.core.results import Result
    from monitor.metrics import Metrics

    try:
        metrics = Metrics(CollectorRegistry(), target_histograms=histograms)
    except TypeError:  # a checkout without the setting: its histograms are always on
        metrics = Metrics(CollectorRegistry())
    names = [f"svc-{n:06d}" for n in range(size)]
    metrics.watch_incidents(lambda: dict.fromkeys(names, 0))

    def round_of(k: int) -> list[Result]:
        return [
            Result(
                name,
                f"http://127.0.0.1/{name}",
                n % 97 != 0,
                "ok" if n % 97 else "critical",
                200,
                float((n * 7 + k) % 900) + 0.5,
                None,
                "status 200",
                1_000.0 + k,
                phases={"connect": 0.2, "first_byte": 1.0},
            )
            for n, name in enumerate(names)
        ]

    started = time.process_time()
    metrics.observe_results(round_of(0))
    observe = time.process_time() - started
    metrics.scrape()  # the first: whatever is computed once
    changed, unchanged, size_bytes = [], [], 0
    for k in range(1, scrapes + 1):
        metrics.observe_results(round_of(k))
        started = time.process_time()
        size_bytes = len(metrics.scrape())
        changed.append(time.process_time() - started)
        started = time.process_time()
        metrics.scrape()
        unchanged.append(time.process_time() - started)
    return {"size": size, "changed": min(changed), "unchanged": min(unchanged), "observe": observe, "bytes": size_bytes}


def run_in(code: str | None, size: int, scrapes: int, histograms: bool) -> dict[str, Any]:
    """``figures`` in a fresh process, importing ``monitor`` from ``code`` (default: this checkout)."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", str(size), "--scrapes", str(scrapes), "--histograms", "on" if histograms else "off"],
        capture_output=True,
        text=True,
        check=True,
        cwd=code or ROOT,
        env={"PYTHONPATH": str(Path(code).resolve()) if code else str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="5000,50000")
    parser.add_argument("--scrapes", type=int, default=3, help="scrapes timed per size (the fastest is printed)")
    parser.add_argument("--before", metavar="DIR", help="another checkout, measured in the same run")
    parser.add_argument("--histograms", choices=("on", "off"), default="on")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(figures(args.child, args.scrapes, args.histograms == "on")))
        return
    import os

    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min), {os.cpu_count()} cores", flush=True)
    print(
        f"{'code':>7} | {'targets':>7} | {'histograms':>10} | {'changed':>9} | {'unchanged':>9} | {'observe':>8} | {'scrape MB':>9}",
        flush=True,
    )
    codes = [("before", args.before), ("after", None)] if args.before else [("after", None)]
    for size in (int(s) for s in args.sizes.split(",")):
        for label, code in codes:
            found = run_in(code, size, args.scrapes, args.histograms == "on")
            print(
                f"{label:>7} | {size:>7,} | {args.histograms:>10} | {found['changed']:>7.3f} s | "
                f"{found['unchanged']:>7.3f} s | {found['observe']:>6.3f} s | {found['bytes'] / 1e6:>9.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
