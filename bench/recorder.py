"""CPU per recorded result in the process that records everything (``workers: N``'s parent): before and now.

    python bench/recorder.py [--targets 5000] [--results 50000] [--batch 100] [--failing 1] [--engine sqlite|URL]

Real parts throughout: a config of ``--targets`` targets, a fresh SQLite file (or a PostgreSQL database by URL)
with its hourly counts, a fresh Prometheus registry, the daemon's :class:`~monitor.daemon.cycle.Cycle`. The
results are real :class:`~monitor.core.results.Result` values, passing with their phases, round robin over the
fleet, except ``--failing`` percent of the targets, which fail every check (their incidents open, then stay
open). Each batch is pickled as a worker sends it, and what the parent does with it is timed in process CPU:

    before  ("results", [Result, ...]) unpickled, each start's lag observed, ``Cycle.after_checks``: the store,
            the metrics, and each result's window and detectors in the parent
    now     ("batch", Batch) made by the worker's :class:`~monitor.incidents.verdicts.Judge`, unpickled, the starts
            counted at once, ``Cycle.after_batch``: one statement, metrics per batch, incidents only where a
            verdict says something or one is open

The worker's own cost of judging (its windows, the detectors, the rows) is printed beside it: it runs in the
workers, in parallel. The first pass over the fleet (which reads every window) is not timed; each path gets a
store of its own.

Measured on 2 shared cores (load average 8-13 from other work), 5,000 targets, 25,000 results, best of 2:

    250 a batch, 1% failing    before 95.2 µs/result   now 18.4 µs/result (the workers: 36.8 µs judging)
    250 a batch, none failing  before 87.4             now 14.2
    100 a batch, 1% failing    before 102.4            now 22.4

Most of the 14 µs is SQLite's insert (three b-trees and the hourly counts' trigger: bench/store_rate.py).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import CollectorRegistry  # noqa: E402

from monitor.config import Config  # noqa: E402
from monitor.core.results import Result  # noqa: E402
from monitor.daemon import daemon_cycle
from monitor.daemon.cycle import Cycle  # noqa: E402
from monitor.incidents.verdicts import Judge, Settings  # noqa: E402
from monitor.metrics import Metrics, bulk  # noqa: E402
from monitor.store import Store  # noqa: E402

PHASES = {"dns": 0.05, "connect": 0.2, "first_byte": 1.1, "body": 0.1}


def fleet(size: int, database: str) -> Config:
    return Config.model_validate(
        {
            "database": database,
            "agent": {"mode": "off"},
            "targets": [{"name": f"t{i}", "url": f"http://127.0.0.1:9/t{i}"} for i in range(size)],
        }
    )


def results(size: int, count: int, failing: float, start: float) -> list[Result]:
    down = max(1, int(size * failing / 100)) if failing else 0
    out = []
    for n in range(count):
        i = n % size
        at = start + n / size  # each target once a second
        if i < down:
            out.append(Result(f"t{i}", f"http://127.0.0.1:9/t{i}", False, "critical", 503, 2.0, "http_5xx", "503", at, phases=PHASES))
        else:
            out.append(Result(f"t{i}", f"http://127.0.0.1:9/t{i}", True, "ok", 200, 1.45, None, "", at, phases=PHASES))
    return out


def messages(batches: list[list[Result]], judge: Judge | None) -> tuple[list[bytes], float]:
    """The pickled messages a worker sends, and the worker's CPU seconds making them."""
    started, out = time.process_time(), []
    for batch in batches:
        starts = [(0.002, 0, False)] * len(batch)
        body = ("results", batch) if judge is None else ("batch", judge(batch))
        out.append(pickle.dumps((*body, starts, 0)))
    return out, time.process_time() - started


def parent(cycle: Cycle, blobs: list[bytes]) -> float:
    """The parent's CPU seconds for these messages: unpickled, the starts counted, recorded."""
    assert cycle.metrics is not None
    started = time.process_time()
    for blob in blobs:
        kind, body, starts, _ = pickle.loads(blob)
        if kind == "results":
            for lag, skipped, held in starts:
                cycle.metrics.observe_schedule(lag, skipped, "backlog" if held else "late")
            cycle.after_checks(body)
        else:
            bulk.observe_starts(cycle.metrics, starts)
            cycle.after_batch(body)
    return time.process_time() - started


def run(args: argparse.Namespace, path: str, judged: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        database = args.engine if args.engine != "sqlite" else str(Path(tmp) / f"{path}.db")
        config = fleet(args.targets, database)
        store = Store(database)
        cycle = daemon_cycle(config, store, metrics=Metrics(CollectorRegistry()))
        all_results = results(args.targets, args.targets + args.results, args.failing, time.time() - args.results / args.targets)
        batches = [all_results[i : i + args.batch] for i in range(0, len(all_results), args.batch)]
        judge = Judge(lambda name: store.results.recent_results(name, 200)) if judged else None
        if judge is not None:
            judge.follow(config.targets, Settings(config.detectors))
        warm = args.targets // args.batch
        blobs, _ = messages(batches[:warm], judge)
        parent(cycle, blobs)  # every window read, the incidents of the failing targets opened
        blobs, worker_cpu = messages(batches[warm:], judge)
        cpu = parent(cycle, blobs)
        recorded = store.results.count_results()
        opened = len(store.incidents.open_incidents())
        store.close()
    n = len(all_results) - warm * args.batch
    return {"parent_us": cpu / n * 1e6, "worker_us": worker_cpu / n * 1e6, "recorded": recorded, "open": opened}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", type=int, default=5000)
    parser.add_argument("--results", type=int, default=50_000, help="results timed, after a first pass over the fleet")
    parser.add_argument("--batch", type=int, default=250, help="results a worker sends at once (backlog.batch's default)")
    parser.add_argument("--failing", type=float, default=1.0, help="percent of the targets failing every check")
    parser.add_argument("--engine", default="sqlite", help="sqlite (a fresh file), or a PostgreSQL URL")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each path, alternating; the best is printed")
    args = parser.parse_args()
    print(f"{args.targets:,} targets, {args.results:,} results timed, {args.batch} a batch, {args.failing:g}% failing")
    best: dict[str, dict[str, Any]] = {}
    for _ in range(args.repeat):
        for path, judged in (("before", False), ("now", True)):
            row = run(args, path, judged)
            if path not in best or row["parent_us"] < best[path]["parent_us"]:
                best[path] = row
    for path, row in best.items():
        print(
            f"{path:>6}: recorder CPU {row['parent_us']:6.1f} µs/result   worker CPU {row['worker_us']:6.1f} µs/result"
            f"   ({row['recorded']:,} stored, {row['open']} incidents open)"
        )
    ratio = best["before"]["parent_us"] / best["now"]["parent_us"]
    print(f"recorder: {ratio:.1f}x less CPU per result; its ceiling ≈ {1e6 / best['now']['parent_us']:,.0f} results/s on one core")


if __name__ == "__main__":
    main()
