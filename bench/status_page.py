"""How long a status page takes with 50 targets and a year of history, a check a minute each (26 million
results), beside the admin overview over the same database.

    python bench/status_page.py                     # build a database in a temp dir, time the pages
    python bench/status_page.py --db status.db      # keep (or reuse) the database
    python bench/status_page.py --full              # every one of the 26 million results (about 6 minutes here)

Status pages read a day's uptime from the hourly counts (``results_hourly``), never the results. By
default the newest ``--recent`` days are real results, a check a minute, written by one INSERT ... SELECT
over a generated series (so the store's own trigger keeps their hourly counts, as for every insert), and
the older part of the year is the hourly counts such checks leave (60 checks an hour, the same failures):
the rows the page reads are those of a full year. ``--full`` writes every result instead (70,000 rows a
second on this machine: about 6 minutes). Incidents (one a target every few days,
each with a public note) go through the store's methods. Each page is asked ``--repeat`` times in-process
(Starlette's TestClient: routing, SQL, templates, no network), and the median and p95 are printed
against the 200 ms goal.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from starlette.testclient import TestClient  # noqa: E402

from monitor.config import Config  # noqa: E402
from monitor.store import Store  # noqa: E402
from monitor.store.writes import IncidentWrites
from monitor.web.app import create_app, create_status_app  # noqa: E402

GOAL_MS = 200.0
TARGETS = 50
GROUPS = 5


def build(store: Store, days: int, recent: int, now: float) -> None:
    """``days`` of a check a minute for each target (one in 200 fails): the newest ``recent`` days as results,
    the rest as hourly counts; and an incident a target every 5 days with a public note."""
    started = time.perf_counter()
    first = now - days * 86400
    with store.transaction() as db:
        older = (days - recent) * 24
        for t in range(TARGETS):
            db.execute(
                """WITH RECURSIVE h(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM h WHERE i < ?)
                   INSERT INTO results_hourly (target, hour, checks, passed, up, latency_sum, latency_max)
                   SELECT ?, CAST(? / 3600 AS INTEGER) + i, 60, 60 - ((i + ?) % 7 = 0), 60 - ((i + ?) % 7 = 0), 3600.0,
                          99.0 FROM h""",
                (older - 1, f"t{t:02d}", first, t, t),
            )
        minutes = recent * 1440
        for t in range(TARGETS):
            db.execute(
                """WITH RECURSIVE m(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM m WHERE i < ?)
                   INSERT INTO results (target, checked_at, ok, severity, status_code, latency_ms, error, detail)
                   SELECT ?, ? + i * 60.0, (i * 7 + ?) % 200 != 0, CASE WHEN (i * 7 + ?) % 200 != 0 THEN 'ok'
                          ELSE 'critical' END, 200, 20 + (i * 13) % 80, NULL, '' FROM m""",
                (minutes - 1, f"t{t:02d}", now - minutes * 60 + t, t, t),
            )
            print(
                f"\r  target {t + 1}/{TARGETS}: {(t + 1) * minutes:,} results, {time.perf_counter() - started:.0f} s   ", end="", flush=True
            )
    print()
    clock = store.clock
    for t in range(TARGETS):
        for day in range(t % 5, days, 5):
            opened = first + day * 86400 + 3600 * (t % 24)
            store.clock = functools.partial(float, opened)
            incident = IncidentWrites(store).open_incident(f"t{t:02d}", "consecutive", "3 consecutive failures")
            IncidentWrites(store).add_public_note(incident, "We are looking into slow answers from the API.")
            store.clock = functools.partial(float, opened + 1200)
            IncidentWrites(store).close_incident(incident, "restarted the pool")
    store.clock = clock
    print(
        f"  {store.results.count_results():,} results, {store.incidents.count_incidents():,} incidents"
        f" in {time.perf_counter() - started:.0f} s",
        flush=True,
    )


def config() -> Config:
    names = [f"t{t:02d}" for t in range(TARGETS)]
    per = TARGETS // GROUPS
    return Config.model_validate(
        {
            "targets": [{"name": name, "url": "https://example.test/"} for name in names],
            "maintenance": [
                {
                    "targets": names[:3],
                    "rrule": "FREQ=WEEKLY;BYDAY=SU;BYHOUR=2",
                    "timezone": "Europe/Berlin",
                    "duration": "1h",
                    "reason": "weekly upgrade",
                }
            ],
            "status_pages": [
                {
                    "slug": "public",
                    "title": "Example status",
                    "logo": "https://cdn.example.test/logo.png",
                    "groups": [{"name": f"group {g}", "targets": names[g * per : (g + 1) * per]} for g in range(GROUPS)],
                }
            ],
        }
    )


def timed(client: TestClient, url: str, repeat: int) -> tuple[float, float, float]:
    """The first request's time (cold: nothing read yet), and the median and p95 of the next ``repeat``."""
    started = time.perf_counter()
    assert client.get(url).status_code == 200, url
    first = (time.perf_counter() - started) * 1000
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        answer = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, url
    times.sort()
    return first, statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


def admin(store: Store, cfg: Config) -> TestClient:
    """The admin UI, asked by a host it knows (it answers 421 to a host name it does not: DNS rebinding)."""
    return TestClient(create_app(store, cfg), base_url="http://localhost")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", help="database file (built when missing)")
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--recent", type=int, default=3, help="newest days written as results (the rest: hourly counts)")
    parser.add_argument("--full", action="store_true", help="every day as results (slow)")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    path = Path(args.db) if args.db else Path(tempfile.mkdtemp()) / "status.db"
    fresh = not path.exists()
    store = Store(path)
    now = time.time()
    if fresh:
        recent = args.days if args.full else min(args.recent, args.days)
        print(f"building {path}: {TARGETS} targets, {args.days} days of a check a minute (the newest {recent} as results)", flush=True)
        build(store, args.days, recent, now)
    cfg = config()
    rows = [
        (
            "status page /status/public (50 targets, 90 days of bars)",
            timed(TestClient(create_status_app(store, cfg)), "/status/public", args.repeat),
        ),
        ("status page on the admin UI", timed(admin(store, cfg), "/status/public", args.repeat)),
        ("baseline: admin overview /", timed(admin(store, cfg), "/", args.repeat)),
    ]
    hourly = store._scalar("SELECT count(*) FROM results_hourly")
    print(
        f"\ndatabase {store.size_bytes() / 1e6:,.0f} MB: {store.results.count_results():,} results, {hourly:,} hourly "
        f"counts ({args.days} days); server time in ms, "
        f"first request, then {args.repeat} more (median / p95); goal {GOAL_MS:.0f} ms"
    )
    for label, (first, median, p95) in rows:
        print(f"{label:<58} {first:7.1f}, {median:7.1f} / {p95:7.1f}  {'ok' if p95 <= GOAL_MS else 'SLOW'}")
    print(f"(load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    store.close()


if __name__ == "__main__":
    main()
