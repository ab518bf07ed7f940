"""A large ``memory import`` beside a running daemon's writes: before (one transaction, unindexed look-ups) and now.

    python bench/import_lock.py [--incidents 20000] [--existing 20000] [--runs 2000] [--targets 2]

Each variant imports the same export (``--incidents`` incidents, ``--runs`` runs with two steps
each, over ``--targets`` targets) into a copy of the same database (``--existing`` incidents
already there), while another
process writes one check result every 20 ms, as a daemon's cycles do, with the store's 30 s busy
timeout. Prints, for each: the import's wall time, the writer's longest wait for one write, and
its writes that failed with ``database is locked``. "before" is the import as it was until
issue 8: one transaction, and a look-up that scanned the table for every row.
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from monitor.checks.engine import Result  # noqa: E402
from monitor.memory import exports  # noqa: E402
from monitor.store import Store  # noqa: E402
from monitor.store.memory import MemoryImport
from monitor.store.writes import IncidentWrites


def load_before(store: Store, data: dict[str, list[dict[str, Any]]]) -> None:
    """The import until issue 8: every row in one transaction, each look-up a table scan."""
    incident_ids: dict[Any, int] = {}
    run_ids: dict[Any, int] = {}
    with store.transaction() as db:
        db.execute("DROP INDEX IF EXISTS incidents_dedup")
        db.execute("DROP INDEX IF EXISTS agent_runs_started")
        for row in data["incidents"]:
            found = db.execute(
                "SELECT id FROM incidents WHERE target = ? AND pattern = ? AND opened_at = ?",
                (row["target"], row["pattern"], row["opened_at"]),
            ).fetchone()
            incident_ids[row["id"]] = found[0] if found else MemoryImport(store)._insert(db, "incidents", row)
        for row in data["agent_runs"]:
            found = db.execute("SELECT id FROM agent_runs WHERE task = ? AND started_at = ?", (row["task"], row["started_at"])).fetchone()
            if found is None:
                importer = MemoryImport(store)
                run_ids[row["id"]] = importer._insert(db, "agent_runs", {**row, "incident_id": incident_ids.get(row["incident_id"])})
        for row in data["agent_steps"]:
            if row["run_id"] in run_ids:
                MemoryImport(store)._insert(db, "agent_steps", {**row, "run_id": run_ids[row["run_id"]]})


def export(incidents: int, runs: int, targets: int) -> dict[str, list[dict[str, Any]]]:
    data = {
        "format": "monitor-memory",
        "version": 1,
        "incidents": [
            {
                "id": n,
                "target": f"t{n % targets}",
                "pattern": "consecutive",
                "status": "resolved",
                "opened_at": 1.8e9 + n,
                "summary": f"t{n % targets} failed 3 checks in a row ({n})",
                "resolution": "restarted the upstream pool",
            }
            for n in range(incidents)
        ],
        "agent_runs": [
            {
                "id": n,
                "incident_id": n,
                "target": f"t{n % targets}",
                "task": f"Investigate t{n % targets}: #{n}",
                "state": "success",
                "started_at": 1.8e9 + n,
            }
            for n in range(runs)
        ],
        "agent_steps": [
            {"id": 2 * n + k, "run_id": n, "step_number": k + 1, "kind": "action", "observations": "t: CRITICAL status=500 " * 4}
            for n in range(runs)
            for k in range(2)
        ],
    }
    return exports.check(data)


def seed(path: Path, existing: int, targets: int) -> None:
    store = Store(path)
    with store.transaction() as db:
        db.conn.executemany(
            "INSERT INTO incidents (target, pattern, status, opened_at, summary) VALUES (?, ?, ?, ?, ?)",
            [(f"t{n % targets}", "consecutive", "resolved", 1.7e9 + n, "old") for n in range(existing)],
        )
    store.close()


def writer(path: str, stop: Any, out: Any) -> None:
    """A daemon's cycles: one result every 20 ms; records the longest wait and the failed writes."""
    store = Store(path)
    longest, failed, n = 0.0, 0, 0
    while not stop.is_set():
        started = time.monotonic()
        try:
            store.results.add_results([Result("w", "http://w/", True, "ok", 200, 1.0, None, "", float(n))])
        except sqlite3.OperationalError:
            failed += 1
        longest = max(longest, time.monotonic() - started)
        n += 1
        time.sleep(0.02)
    out.put((longest, failed, n))


def measure(path: Path, data: dict[str, list[dict[str, Any]]], before: bool) -> tuple[float, float, int, int]:
    stop = multiprocessing.Event()
    out: multiprocessing.Queue[tuple[float, int, int]] = multiprocessing.Queue()
    proc = multiprocessing.Process(target=writer, args=(str(path), stop, out), daemon=True)
    proc.start()
    time.sleep(0.5)  # the writer is writing
    store = Store(path)
    started = time.monotonic()
    try:
        if before:
            load_before(store, data)
        else:
            IncidentWrites(store).load_dump(data)
    finally:
        seconds = time.monotonic() - started
        store.close()
        stop.set()
    longest, failed, writes = out.get(timeout=120)
    proc.join()
    return seconds, longest, failed, writes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--incidents", type=int, default=20000)
    parser.add_argument("--existing", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--targets", type=int, default=2, help="targets the incidents are spread over")
    args = parser.parse_args()
    data = export(args.incidents, args.runs, args.targets)
    with tempfile.TemporaryDirectory() as tmp:
        seed(Path(tmp) / "seed.db", args.existing, args.targets)
        print(
            f"import of {args.incidents} incidents, {args.runs} runs, {2 * args.runs} steps "
            f"into a database holding {args.existing} incidents, over {args.targets} targets, beside a writer every 20 ms:"
        )
        for label, before in (("before (one transaction, table scans)", True), ("now (indexed, batches)", False)):
            path = Path(tmp) / f"{'before' if before else 'now'}.db"
            shutil.copy(Path(tmp) / "seed.db", path)
            seconds, longest, failed, writes = measure(path, data, before)
            print(f"  {label:40} import {seconds:6.2f} s   writer's longest wait {longest:6.2f} s   locked writes {failed} of {writes}")


if __name__ == "__main__":
    main()
