"""How long forgetting takes: ``python bench/forgetting.py 10000 100000`` (a bound each; the store holds 11/10 of it).

Each run fills a fresh SQLite file with resolved incidents over a year (one in a hundred with a resolution note,
one in fifty recalled), then times one :func:`monitor.memory.forgetting.prune` down to nine tenths of the bound,
and one ``mark_recalled`` of 100 incidents.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from monitor import wiring
from monitor.config import Config
from monitor.memory import forgetting
from monitor.store import Store
from monitor.store.writes import IncidentWrites

YEAR = 365 * 86400.0
NOW = 1_790_000_000.0


def measure(bound: int) -> dict[str, float]:
    total = bound + bound // 10
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "forget.db", clock=lambda: NOW)
        step = YEAR / total
        IncidentWrites(store).load_dump(
            {
                "incidents": [
                    {
                        "id": n,
                        "target": f"t{n % 200}",
                        "pattern": "consecutive",
                        "status": "resolved",
                        "opened_at": NOW - YEAR + n * step,
                        "closed_at": NOW - YEAR + n * step + 60,
                        "root_cause": "timeout",
                        "resolution": "restarted" if n % 100 == 0 else None,
                    }
                    for n in range(total)
                ]
            },
            batch=5000,
        )
        store.importance.mark_recalled(range(0, total, 50))
        started = time.perf_counter()
        gone = forgetting.prune(wiring.writer(Config(), store), bound)
        pruned = time.perf_counter() - started
        started = time.perf_counter()
        store.importance.mark_recalled(range(0, 100 * 97, 97))
        recalled = time.perf_counter() - started
        left = store.incidents.count_incidents()
        store.close()
    return {"incidents": total, "pruned": gone, "left": left, "prune_s": pruned, "mark_recalled_100_s": recalled}


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["10000"]:
        print(measure(int(arg)))
