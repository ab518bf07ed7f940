"""How long each web page takes to render with a real history: 1,000,000 results and 10,000 incidents.

    python bench/pages.py                  # build a database in a temp dir, time every page
    python bench/pages.py --db pages.db    # keep (or reuse) the database

Builds the database through the store's own write methods (results in batches of 50,000), then asks
each page and API endpoint several times in-process (Starlette's TestClient, so the figure is server
time: routing, SQL, templates, no network) and prints the median and p95 against the 200 ms goal.
It runs every page twice: without the indexes migration 9 added (``store.drop_web_indexes``), and
with them, so the table shows what they buy.

    python bench/pages.py --targets 5000 --results 1000000 --incidents 2000 --only /,/fragments,/api/v1/targets

is the fleet case: the overview pages its targets (100 a page, problems first), so its cost is that of
a page, not of the fleet. Beside it, the same run times the overview as it was before paging (every
target read in full: state, uptime, last 40 checks and their chart, without the HTML), for comparison.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from starlette.testclient import TestClient  # noqa: E402

from monitor.checks.engine import Result  # noqa: E402
from monitor.config import Config  # noqa: E402
from monitor.core.memory import MemoryStats, WorkingStats  # noqa: E402
from monitor.core.runs import NewStep  # noqa: E402
from monitor.store import Store  # noqa: E402
from monitor.store.writes import IncidentWrites
from monitor.web import charts  # noqa: E402
from monitor.web.app import create_app  # noqa: E402
from monitor.web.pages import RECENT, Pages  # noqa: E402

GOAL_MS = 200.0
TARGETS = 20
DAYS = 30
ERRORS = ["unexpected_status", "timeout", "connect_error", "dns_error"]


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def build(store: Store, clock: Clock, results: int, incidents: int, now: float, rng: random.Random) -> None:
    span = DAYS * 86400.0
    per_target = results // TARGETS
    started = time.perf_counter()
    batch: list[Result] = []
    for i in range(per_target):
        at = now - span + i * span / per_target
        for t in range(TARGETS):
            ok = rng.random() > 0.02
            latency = rng.lognormvariate(3.5, 0.5)
            phases = {"dns": 0.5, "connect": 1.0, "tls": 3.0, "first_byte": latency * 0.8, "body": latency * 0.2 - 4.5}
            batch.append(
                Result(
                    f"t{t:02d}",
                    "https://example.test/",
                    ok,
                    "ok" if ok else "critical",
                    200 if ok else 503,
                    latency,
                    None if ok else rng.choice(ERRORS),
                    "" if ok else "status 503 not in expected codes",
                    at + t,
                    phases=phases,
                )
            )
        if len(batch) >= 50_000:
            store.results.add_results(batch)
            batch = []
    store.results.add_results(batch)
    print(f"  {store.results.count_results():,} results in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    for n in range(incidents):
        clock.now = now - span + n * span / incidents
        target = f"t{n % TARGETS:02d}"
        pattern = rng.choice(["consecutive", "window", "latency"])
        incident = IncidentWrites(store).open_incident(target, pattern, "2 consecutive failures")
        store.outbox.enqueue(
            "webhook:https://hooks.example.test/x", {"event": "opened", "incident": {"id": incident}}, key=f"incident:{incident}"
        )
        if n % 5 == 0:
            run = store.runs.start_run(f"investigate {target}", target=target, incident_id=incident, model="builtin")
            store.runs.add_step(
                run, NewStep(0, "recall", observations=f"#{max(1, incident - TARGETS)} [resolved] target {target}, consecutive: x")
            )
            for step in range(1, 5):
                store.runs.add_step(
                    run,
                    NewStep(
                        step,
                        "action",
                        duration=0.2,
                        tool_calls=json.dumps([{"name": "check_target", "arguments": {"name": target}}]),
                        observations="status 503 " * 40,
                        input_tokens=900,
                        output_tokens=30,
                    ),
                )
            store.runs.finish_run(run, "success", "restart the pool")
        if n < incidents - TARGETS:
            clock.now += 600
            IncidentWrites(store).close_incident(incident, "restarted the pool" if n % 3 == 0 else None)
    for minute in range(0, int(span // 60), 10):
        clock.now = now - span + minute * 60
        working = WorkingStats({"action": 8}, 20_000 + minute % 5000, 5000)
        store.memory.add_memory_sample(MemoryStats(working, minute, 10**8), keep_since=now - span)
    clock.now = now
    print(f"  {store.incidents.count_incidents():,} incidents in {time.perf_counter() - started:.1f} s", flush=True)


def pages(store: Store) -> list[str]:
    middle = store.incidents.count_incidents() // 2
    run = store.runs.runs_page(limit=1, before=store.runs.last_run_id())[0].id
    deep = store.results.results_page("t07", limit=1, before=(time.time() - 20 * 86400, 0))[0]
    return [
        "/",
        "/fragments/overview",
        "/?page=2",
        "/?q=t1",
        "/targets/t07",
        "/targets/t07?window=30d",
        f"/targets/t07?before={deep.checked_at!r}:{deep.id}",
        "/incidents",
        "/incidents?target=t07",
        "/incidents?status=open",
        f"/incidents/{middle}",
        "/runs",
        f"/runs/{run}",
        "/memory?window=30d",
        "/badges/t07/status.svg",
        "/badges/t07/uptime.svg?window=30d",
        "/badges/t07/latency.svg?window=30d",
        "/api/v1/targets",
        "/api/v1/targets/t07/results?limit=100",
        f"/api/v1/incidents/{middle}",
        "/api/v1/incidents?target=t07&limit=100",
        "/api/v1/runs?limit=100",
        "/api/v1/memory",
    ]


def timed(client: TestClient, url: str, repeat: int) -> tuple[float, float]:
    assert client.get(url).status_code == 200, url  # warm: templates compiled, pages cached by SQLite
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        answer = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, url
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


def unpaged_overview(store: Store, config: Config, repeat: int) -> tuple[float, float]:
    """The overview's data before paging: every target read in full, one at a time (no HTML rendered)."""
    pages = Pages(store, config)

    def every_target() -> None:
        now = time.time()
        for name in pages.target_names():
            charts.phase_bars(pages.target_row(name, now, recent=RECENT)["recent"])

    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        every_target()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


def main() -> None:
    global TARGETS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", help="database file (built when missing)")
    parser.add_argument("--results", type=int, default=1_000_000)
    parser.add_argument("--incidents", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--targets", type=int, default=TARGETS, help="how many targets share the results")
    parser.add_argument("--only", help="time only the pages whose address starts with one of these (comma-separated)")
    parser.add_argument("--unpaged", type=int, default=3, help="runs of the overview before paging (0: skip)")
    args = parser.parse_args()
    TARGETS = args.targets
    path = Path(args.db) if args.db else Path(tempfile.mkdtemp()) / "pages.db"
    now = time.time()
    clock = Clock(now)
    fresh = not path.exists()
    store = Store(path, clock=clock)
    if fresh:
        print(f"building {path}: {args.results:,} results over {DAYS} days, {TARGETS} targets, {args.incidents:,} incidents", flush=True)
        build(store, clock, args.results, args.incidents, now, random.Random(7))
    config = Config.model_validate({"targets": [{"name": f"t{t:02d}", "url": "https://example.test/"} for t in range(TARGETS)]})
    client = TestClient(create_app(store, config, clock=time.time), base_url="http://localhost")  # a known host
    urls = pages(store)
    if args.only:
        urls = [url for url in urls if any(url.split("?")[0] == p or (p != "/" and url.startswith(p)) for p in args.only.split(","))]
    figures: dict[str, dict[str, tuple[float, float]]] = {}
    for label, prepare in (("without", store.incidents.drop_web_indexes), ("with", store.incidents.create_web_indexes)):
        prepare()
        print(f"timing {len(urls)} pages {label} the web indexes ({args.repeat} requests each)...", flush=True)
        figures[label] = {url: timed(client, url, args.repeat) for url in urls}
    report(urls, figures, store.size_bytes())
    if args.unpaged:
        median, p95 = unpaged_overview(store, config, args.unpaged)
        print(
            f"the overview before paging ({TARGETS:,} targets, every one read in full, no HTML; "
            f"{args.unpaged} runs): {median:.1f} / {p95:.1f} ms"
        )
    store.close()


def report(urls: list[str], figures: dict[str, dict[str, tuple[float, float]]], size: int) -> None:
    print(f"\ndatabase {size / 1e6:.0f} MB; server time per page in ms (median / p95), goal {GOAL_MS:.0f} ms")
    print(f"{'page':<52} {'without indexes':>17} {'with indexes':>17}  goal")
    worst = 0.0
    for url in urls:
        before, after = figures["without"][url], figures["with"][url]
        worst = max(worst, after[1])
        verdict = "ok" if after[1] < GOAL_MS else "SLOW"
        print(f"{url[:52]:<52} {before[0]:7.1f} / {before[1]:7.1f} {after[0]:7.1f} / {after[1]:7.1f}  {verdict}")
    print(f"\nslowest p95 with indexes: {worst:.1f} ms ({'within' if worst < GOAL_MS else 'over'} the goal)")


if __name__ == "__main__":
    main()
