"""Results a second the store alone takes, with its hourly counts kept and retention pruning beside it.

    python bench/store_rate.py [--engine sqlite|postgres|URL] [--targets 20000] [--seconds 20] [--batch 250]
    python bench/store_rate.py --retention 1e9 --batch 4000 --seconds 60 --every 300000   # the table growing

With a short retention the table stays small; with a long one it grows as a daemon's does over its first hours,
and ``--every`` shows the rate as it does: each target's newest rows are a place of their own in the index by
target and time, so a row costs more as the table grows.

A writer stores batches of rows (``Store.add_rows``: one statement, one transaction each, as the recorder does) as
fast as the store takes them: ``--targets`` targets each checked once a simulated second, so the rows' times run
ahead of the clock and the table holds ``--retention`` simulated seconds of them. Beside it, on a connection of its
own, retention runs every second (``Store.prune``: results older than the retention, and their hourly counts), so
the table stays the size a daemon's would while it deletes as fast as it inserts; ``results_hourly`` is kept by
the store's trigger, row by row, as always. The engine is a fresh SQLite file (WAL), a private PostgreSQL cluster
(``postgres``: initdb in a temp dir, fsync off, as the tests run it) or a database by URL (a fresh schema in it).

Printed: rows a second (wall clock: on a loaded machine the writer waits for a core), the writer thread's CPU per
row (with PostgreSQL, the server's own CPU is not in it), the rows pruned, and the table's rows at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from monitor.core.results import Result  # noqa: E402
from monitor.store import Store, result_row  # noqa: E402

PHASES = {"dns": 0.05, "connect": 0.2, "first_byte": 1.1, "body": 0.1}


def templates(targets: int) -> list[tuple[Any, ...]]:
    """One row of each target, every 97th failing, whose time each check replaces."""
    out = []
    for n in range(targets):
        failed = n % 97 == 0
        result = Result(
            f"target-{n:06d}.example",
            "",
            not failed,
            "critical" if failed else "ok",
            503 if failed else 200,
            1.4,
            "http_5xx" if failed else None,
            "HTTP 503" if failed else "",
            0.0,
            phases=PHASES,
        )
        out.append(result_row(result))
    return out


def rows(fleet: list[tuple[Any, ...]], start: float, first: int, count: int) -> list[tuple[Any, ...]]:
    """Rows ``first`` to ``first + count`` of the fleet's stream: one check of each target a simulated second."""
    size = len(fleet)
    return [(row[0], start + n / size, *row[2:]) for n in range(first, first + count) for row in (fleet[n % size],)]


@contextlib.contextmanager
def database(engine: str, tmp: str) -> Iterator[str]:
    """Where the store goes: a SQLite file, a private PostgreSQL cluster's fresh schema, or one at a URL."""
    if engine == "sqlite":
        yield str(Path(tmp) / "rate.db")
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from fleet import fresh_schema  # bench/fleet.py, beside this script
    from postgres import Cluster  # tests/postgres.py: initdb in a temp dir

    if engine != "postgres":
        yield fresh_schema(engine, "store_rate")
        return
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) + sorted(glob.glob("/usr/local/bin/initdb"))
    cluster = Cluster(Path(found[-1]).parent)
    try:
        yield fresh_schema(cluster.start(), "store_rate")
    finally:
        cluster.stop()


def prune_beside(store: Store, stop: threading.Event, horizon: list[float], retention: float, pruned: list[int]) -> None:
    """Retention every second on its own connection: results older than ``retention`` simulated seconds."""
    while not stop.wait(1.0):
        pruned[0] += store.results.prune(horizon[0] - retention)["results"]


def measure(args: argparse.Namespace, location: str) -> dict[str, float]:
    store = Store(location)
    if args.no_target_index:  # what that index costs (a daemon needs it: windows and pages read a target's rows)
        with store.transaction() as db:
            db.execute("DROP INDEX results_target_time")
            db.execute("DROP INDEX IF EXISTS results_recent_target")  # the small table's (schema._v25)
    pruner = store.reopen()
    fleet, start = templates(args.targets), time.time() - 3600
    written = args.targets * args.history
    for first in range(0, written, 10_000):  # the history the indexes hold before the clock starts
        store.results.add_rows(rows(fleet, start, first, min(10_000, written - first)))
    stop, horizon, pruned = threading.Event(), [start + args.history], [0]
    thread = threading.Thread(target=prune_beside, args=(pruner, stop, horizon, args.retention, pruned), daemon=True)
    thread.start()
    began, cpu, stored = time.monotonic(), time.thread_time(), 0
    mark = (began, cpu, 0)
    while time.monotonic() - began < args.seconds:
        store.results.add_rows(rows(fleet, start, written, args.batch))
        written += args.batch
        stored += args.batch
        horizon[0] = start + written / args.targets
        if args.every and stored - mark[2] >= args.every:  # how the rate holds as the table grows
            now, spent = time.monotonic(), time.thread_time()
            done = stored - mark[2]
            print(
                f"  {written:>11,} rows in the table: {done / (now - mark[0]):>7,.0f} rows/s, {(spent - mark[1]) / done * 1e6:5.1f} µs/row"
            )
            mark = (now, spent, stored)
    wall, cpu = time.monotonic() - began, time.thread_time() - cpu
    stop.set()
    thread.join()
    left = store.results.count_results()
    store.close()
    pruner.close()
    return {"rows_s": stored / wall, "cpu_us": cpu / stored * 1e6, "pruned": pruned[0], "left": left, "stored": stored}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--engine", default="sqlite", help="sqlite, postgres (a private cluster), or a postgresql:// URL")
    parser.add_argument("--targets", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds the writer runs")
    parser.add_argument("--batch", type=int, default=250, help="rows a statement (backlog.batch)")
    parser.add_argument("--history", type=int, default=10, help="simulated seconds of results stored before the clock starts")
    parser.add_argument("--retention", type=float, default=10.0, help="simulated seconds of results the pruning keeps")
    parser.add_argument("--no-target-index", action="store_true", help="SQLite: drop the index by target and time first")
    parser.add_argument("--every", type=int, default=0, help="print the rate every this many rows (0: only the total)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, database(args.engine, tmp) as location:
        row = measure(args, location)
    engine = "PostgreSQL" if args.engine != "sqlite" else "SQLite (WAL)"
    load = os.getloadavg()[0]
    print(
        f"{engine}: {row['rows_s']:,.0f} rows/s stored ({row['stored']:,.0f} in {args.seconds:g} s, {args.batch} a statement, "
        f"{args.targets:,} targets; load average {load:.1f} on {os.cpu_count()} cores)\n"
        f"  writer CPU {row['cpu_us']:.1f} µs/row (its thread: rows made and stored): {1e6 / row['cpu_us']:,.0f} rows/s on one core; "
        f"hourly counts kept; retention pruned {row['pruned']:,.0f} rows beside it ({row['left']:,.0f} left)"
    )


if __name__ == "__main__":
    main()
