"""CPU per check in the daemon's cycle as the fleet grows: before (metrics walked every target) and now.

    python bench/cycle_cost.py [--checks 1000] [--sizes 100,1000,5000]

For each fleet size, a config of that many targets and a fresh SQLite database; 1% of the targets
have an open incident. Then ``--checks`` results (synthetic, passing, round robin over the fleet:
the HTTP part is ``bench/checks.py``'s business) go through ``Cycle.after_checks`` one at a time, as
scheduled jobs deliver them, and the process CPU time per check is printed. "before" is the cycle
until issue 12: after every check, ``monitor_incidents_open`` was set for every configured target
from a read of every open incident, so a cycle over the fleet cost O(targets²). "now" counts open
incidents at scrape time. The CPU of one scrape of everything the run left in the registry is
printed for both.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import CollectorRegistry, Gauge  # noqa: E402

from monitor import wiring  # noqa: E402
from monitor.checks.engine import Result  # noqa: E402
from monitor.config import Config  # noqa: E402
from monitor.core.incidents import Incident
from monitor.daemon import Cycle  # noqa: E402
from monitor.incidents.tracker import Event  # noqa: E402
from monitor.metrics import Metrics  # noqa: E402
from monitor.store import Store  # noqa: E402
from monitor.store.writes import IncidentWrites


def set_open_incidents_before(gauge: Gauge, targets: Iterable[str], open_rows: Iterable[Incident]) -> None:
    """``Metrics.set_open_incidents`` until issue 12: a gauge set for every configured target."""
    counts = dict.fromkeys(targets, 0)
    for row in open_rows:
        counts[row.target] = counts.get(row.target, 0) + 1
    for target, count in counts.items():
        gauge.labels(target).set(count)


class CycleBefore(Cycle):
    """``Cycle.after_checks`` until issue 12: after each check, every target's open-incident gauge."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        registry = self.metrics.registry if self.metrics is not None else CollectorRegistry()
        self.gauge = Gauge("monitor_incidents_open_before", "Open incidents.", ["target"], registry=registry)

    def after_checks(self, results: list[Result]) -> list[Event]:
        events = super().after_checks(results)
        names = self.target_names()
        set_open_incidents_before(self.gauge, names, (i for i in self.store.incidents.open_incidents() if i.target in names))
        return events


def fleet(size: int, database: str) -> Config:
    return Config.model_validate(
        {
            "database": database,
            "agent": {"mode": "off"},
            "targets": [{"name": f"t{i}", "url": f"http://127.0.0.1:9/t{i}"} for i in range(size)],
        }
    )


def cpu_per_check(cycle_class: type[Cycle], size: int, checks: int, hourly: bool = True) -> tuple[float, float]:
    """Milliseconds of CPU per check through the cycle, and per scrape of its metrics; without ``hourly``,
    the store keeps no hourly counts (the web's uptime and charts read them)."""
    with tempfile.TemporaryDirectory() as tmp:
        config = fleet(size, str(Path(tmp) / "bench.db"))
        store = Store(config.database or "")
        if not hourly:
            store.results.drop_hourly_counts()
        for i in range(0, size, 100):
            IncidentWrites(store).open_incident(f"t{i}", "consecutive", f"t{i} is down")
        metrics = Metrics(CollectorRegistry())
        in_force = wiring.Fleet(config)
        parts = wiring.incidents(config, store, metrics=metrics, fleet=in_force)
        cycle = cycle_class(config, store, parts, fleet=in_force, metrics=metrics)
        now = time.time()
        results = [
            Result(f"t{n % size}", f"http://127.0.0.1:9/t{n % size}", True, "ok", 200, 1.0, None, "", now + n) for n in range(checks)
        ]
        cycle.after_checks(results[:1])  # warm-up
        started = time.process_time()
        for result in results:
            cycle.after_checks([result])
        per_check = (time.process_time() - started) / checks * 1000
        started = time.process_time()
        metrics.scrape()
        per_scrape = (time.process_time() - started) * 1000
        store.close()
    return per_check, per_scrape


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checks", type=int, default=1000)
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument(
        "--hourly", action="store_true", help="instead: CPU per check with and without the hourly counts the web reads (migration 9)"
    )
    args = parser.parse_args()
    if args.hourly:
        hourly_cost(args)
        return
    print(f"{'targets':>8} | {'CPU/check before':>17} | {'now':>9} | {'ratio':>6} | {'CPU/scrape before':>17} | {'now':>9}")
    for size in (int(s) for s in args.sizes.split(",")):
        before, scrape_before = cpu_per_check(CycleBefore, size, args.checks)
        now, scrape = cpu_per_check(Cycle, size, args.checks)
        print(f"{size:>8,} | {before:>14.3f} ms | {now:>6.3f} ms | {before / now:>5.1f}x | {scrape_before:>14.1f} ms | {scrape:>6.1f} ms")


def cycle_cpu_per_check(size: int, checks: int, hourly: bool) -> float:
    return cpu_per_check(Cycle, size, checks, hourly)[0]


def store_cpu_per_check(checks: int, batch: int, hourly: bool) -> float:
    """Milliseconds of CPU per result in ``Store.add_results`` alone, ``batch`` results a transaction."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(str(Path(tmp) / "bench.db"))
        if not hourly:
            store.results.drop_hourly_counts()
        now = time.time()
        results = [Result(f"t{n % 1000}", "http://127.0.0.1:9/", True, "ok", 200, 1.0, None, "", now + n) for n in range(checks)]
        started = time.process_time()
        for i in range(0, checks, batch):
            store.results.add_results(results[i : i + batch])
        per_check = (time.process_time() - started) / checks * 1000
        store.close()
    return per_check


def hourly_cost(args: argparse.Namespace) -> None:
    """What keeping ``results_hourly`` costs per check, with it and without, alternately, best of 3:
    through the whole cycle (one result at a time), and in the store alone."""
    print(f"{'per check, best of 3':<34} | {'without':>9} | {'with':>9} | {'cost':>6}")

    def line(label: str, measure: Callable[[bool], float]) -> None:
        without, with_ = [], []
        for _ in range(3):
            without.append(measure(False))
            with_.append(measure(True))
        a, b = min(without), min(with_)
        print(f"{label:<34} | {a:>6.3f} ms | {b:>6.3f} ms | {(b - a) / a * 100:>+5.1f}%", flush=True)

    for size in (int(s) for s in args.sizes.split(",")):
        line(f"cycle CPU, {size:,} targets", partial(cycle_cpu_per_check, size, args.checks))
    for batch in (1, 100):
        line(f"store CPU, {batch} result(s) a batch", partial(store_cpu_per_check, args.checks, batch))


if __name__ == "__main__":
    main()
