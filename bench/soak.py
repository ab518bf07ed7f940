"""Soak: the daemon's cycle against 200 loopback targets, 10% of them flapping, with a fast clock.

    python bench/soak.py [--targets 200] [--cycles 300] [--interval 30]

The targets are served by a separate process. Cycles run back to back through
the daemon's own job (``Daemon.check``: check → store → detect → incidents →
agent → alerts), while a simulated clock advances one interval per cycle, so
hours of monitoring take a minute or two. The agent talks to the scripted
Ollama test server over HTTP, so every model call is counted.

Prints RSS after warm-up and at the end, the database size, model calls per
cycle (healthy cycles and cycles with a new incident apart), and the detection
delay in intervals: from a target's first failure, and from the check that
completed a detector's threshold, to its incident opening.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import loopback  # noqa: E402
from ollama import FakeOllama, call, final  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from monitor.config import Config  # noqa: E402
from monitor.daemon import Daemon  # noqa: E402
from monitor.incidents import patterns  # noqa: E402
from monitor.incidents.history import Held  # noqa: E402

OK = b'HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{"status":"ok"}'
FAIL = b'HTTP/1.1 500 ERR\r\nContent-Length: 15\r\n\r\n{"status":"no"}'


def flap_start(index: int) -> int:
    """Flapping target ``index`` starts flapping at this cycle (staggered)."""
    return 20 + (index // 10) * 7


def failing(index: int, cycle: int) -> bool:
    return index % 10 == 0 and cycle >= flap_start(index) and (cycle - flap_start(index)) % 2 == 0


CYCLE: Any = None  # the shared cycle number, set before the server process forks


def reply(head: bytes) -> bytes:
    index = int(head.split(b" ")[1].rsplit(b"/", 1)[1])
    return FAIL if failing(index, CYCLE.value) else OK


def rss_mib() -> float:
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--targets", type=int, default=200)
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--interval", type=float, default=30.0)
    args = parser.parse_args()

    global CYCLE
    cycle = CYCLE = multiprocessing.Value("i", 0)
    base, server = loopback.start(reply)
    clock = [1_800_000_000.0]

    with FakeOllama(script=[], default=lambda body: final("flapping; see history")) as ollama, tempfile.TemporaryDirectory() as tmp:
        ollama.default = _investigation()
        config = Config.model_validate(
            {
                "database": os.path.join(tmp, "soak.db"),
                "targets": [
                    {"name": f"t{i}", "url": f"{base}/t/{i}", "interval": args.interval, "timeout": "2s"} for i in range(args.targets)
                ],
                "model": {"id": "ollama_chat/llama3.2", "api_base": ollama.url, "retries": 0},
                "agent": {"max_runs_per_hour": 30},
                "detectors": {"flap_window": args.interval * 10},
                "metrics": {"enabled": False},
            }
        )
        daemon = Daemon(config, registry=CollectorRegistry(), clock=lambda: clock[0])
        daemon.store.clock = lambda: clock[0]
        checker_clock = lambda: clock[0]  # noqa: E731 - results carry the simulated time

        opened_at: dict[str, int] = {}
        calls_healthy: list[int] = []
        calls_incident: list[int] = []
        rss_start = rss_warm = 0.0
        warm_cycle = max(11, args.cycles // 4)
        started = time.perf_counter()
        for number in range(1, args.cycles + 1):
            cycle.value = number
            clock[0] += args.interval
            before = len(ollama.chats)
            events = _check_all(daemon, checker_clock)
            new = [e for e in events if e.kind == "opened"]
            for event in new:
                opened_at.setdefault(event.incident.target, number)
            (calls_incident if new else calls_healthy).append(len(ollama.chats) - before)
            if number == 10:
                rss_start = rss_mib()
            if number == warm_cycle:
                rss_warm = rss_mib()
        elapsed = time.perf_counter() - started
        rss_end = rss_mib()
        db_bytes = daemon.store.size_bytes()
        results = daemon.store.results.count_results()
        threshold = {t.name: _threshold_cycle(config, i) for i, t in enumerate(config.targets) if i % 10 == 0}
        daemon.close()

    flapping = [f"t{i}" for i in range(0, args.targets, 10) if flap_start(i) <= args.cycles]
    from_failure = [opened_at[t] - flap_start(int(t[1:])) for t in flapping if t in opened_at]
    from_threshold = [opened_at[t] - met for t in flapping if t in opened_at and (met := threshold[t]) is not None]
    false_alarms = sorted(set(opened_at) - set(flapping))
    print(
        f"{args.targets} targets ({len(flapping)} flapping), {args.cycles} cycles of {args.interval:g}s "
        f"simulated ({args.cycles * args.interval / 3600:.1f} h) in {elapsed:.1f}s wall, "
        f"{results:,} results stored"
    )
    print(
        f"RSS: {rss_start:.0f} MiB after 10 cycles, {rss_warm:.0f} MiB after {warm_cycle} (warm: the agent "
        f"has run), {rss_end:.0f} MiB at the end: {(rss_end / rss_warm - 1) * 100:+.1f}% since warm, "
        f"{(rss_end / rss_start - 1) * 100:+.1f}% since cycle 10"
    )
    print(f"database: {db_bytes / 1e6:.1f} MB")
    print(
        f"model calls per cycle: healthy cycles {_mean(calls_healthy):.2f} (max {max(calls_healthy, default=0)}) "
        f"over {len(calls_healthy)} cycles; cycles with a new incident {_mean(calls_incident):.2f} "
        f"over {len(calls_incident)} cycles"
    )
    print(f"detected {len(from_failure)} of {len(flapping)} flapping targets; false alarms: {false_alarms or 'none'}")
    print(
        f"detection delay (intervals) from the first failure: max {max(from_failure, default=0)}, "
        f"mean {_mean(from_failure):.1f}; from the check that met the threshold: "
        f"max {max(from_threshold, default=0)}, mean {_mean(from_threshold):.1f}"
    )
    server.terminate()


def _check_all(daemon: Daemon, clock: Any) -> list[Any]:
    from monitor.checks.engine import Checker

    results = Checker(concurrency=daemon.config.concurrency, clock=clock).run(daemon.config.targets)
    events = daemon.cycle.after_checks(results)
    return events


def _threshold_cycle(config: Config, index: int) -> int | None:
    """The first cycle whose results meet any detector threshold for a flapping target (ground truth)."""
    rows: list[Held] = []
    for number in range(1, 10_000):
        rows.insert(0, Held(number * 30.0, int(not failing(index, number)), 1.0))
        found = patterns.detect(f"t{index}", rows[:200], config.detectors, number * 30.0)
        if found and not rows[0].ok:
            return number
        if number > flap_start(index) + 50:
            return None
    return None


def _investigation() -> Any:
    replies = [call("check_target", name="t0"), final("flapping; see history")]
    count = [0]

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        count[0] += 1
        return replies[(count[0] - 1) % 2]

    return reply


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


if __name__ == "__main__":
    main()
