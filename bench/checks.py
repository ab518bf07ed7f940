"""Check throughput: monitor's engine against a plain httpx loop, in the same run.

    python bench/checks.py [--targets 2000] [--concurrency 16 64] [--cli-runs 10]

The target server runs in its own process (a minimal asyncio HTTP/1.1 server
with keep-alive), so the client process's CPU time is the checker's own. Also
times `monitor check URL` end to end (median wall time of a fresh process).

TCP checks (``tcp://``) go to the same server, in the same run, beside the HTTP figure: a bare
connect, and a connect that sends a line and expects a reply matching a pattern (the server's
HTTP status line). A TCP check opens a new connection each time; HTTP checks reuse kept-alive ones.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

import httpx
import loopback

from monitor.checks.engine import Checker
from monitor.config import Target

BODY = b'{"status": "ok"}'
REPLY = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY)


def ok(head: bytes) -> bytes:
    return REPLY


def cpu_seconds() -> float:
    """This process's CPU, plus its reaped children's (the forked checkers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed(run: object) -> tuple[float, float, list[bool]]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    oks = run()  # type: ignore[operator]
    return time.perf_counter() - wall, cpu_seconds() - cpu, oks


def plain_httpx(urls: list[str], concurrency: int) -> list[bool]:
    async def main() -> list[bool]:
        limit = asyncio.Semaphore(concurrency)
        async with httpx.AsyncClient(limits=httpx.Limits(max_connections=concurrency)) as client:

            async def one(url: str) -> bool:
                async with limit:
                    try:
                        return (await client.get(url, timeout=10)).status_code == 200
                    except httpx.HTTPError:
                        return False

            return list(await asyncio.gather(*(one(u) for u in urls)))

    return asyncio.run(main())


def engine(urls: list[str], concurrency: int, processes: int = 1) -> list[bool]:
    targets = [Target(name=f"t{i}", url=u, timeout=10) for i, u in enumerate(urls)]
    return [r.ok for r in Checker(concurrency=concurrency, processes=processes).run(targets)]


def engine_2p(urls: list[str], concurrency: int) -> list[bool]:
    return engine(urls, concurrency, processes=2)


def tcp_targets(urls: list[str], **settings: str) -> list[Target]:
    address = urls[0].removeprefix("http://").split("/")[0]
    return [
        Target.model_validate({"name": f"t{i}", "url": f"tcp://{address}", "timeout": 10, **({"tcp": settings} if settings else {})})
        for i in range(len(urls))
    ]


def tcp_connect(urls: list[str], concurrency: int) -> list[bool]:
    return [r.ok for r in Checker(concurrency=concurrency).run(tcp_targets(urls))]


def tcp_expect(urls: list[str], concurrency: int) -> list[bool]:
    targets = tcp_targets(urls, send="PING\r\n\r\n", expect="^HTTP/1.1 200")
    return [r.ok for r in Checker(concurrency=concurrency).run(targets)]


def cli_median(url: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "monitor", "check", url], capture_output=True, check=False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--targets", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--cli-runs", type=int, default=10)
    args = parser.parse_args()

    base, server = loopback.start(ok)
    urls = [f"{base}/t/{i}" for i in range(args.targets)]
    engine(urls[:50], 4)  # warm up imports and the server

    print(f"{args.targets} loopback targets, server in its own process; CPU includes forked checkers")
    print(f"{'concurrency':>11} {'client':>15} {'checks/s':>9} {'CPU ms/check':>13} {'ok':>6}")
    for concurrency in args.concurrency:
        figures = {}
        for name, run in (
            ("plain httpx", plain_httpx),
            ("monitor", engine),
            ("monitor x2 proc", engine_2p),
            ("tcp connect", tcp_connect),
            ("tcp send+expect", tcp_expect),
        ):
            wall, cpu, oks = timed(lambda run=run, c=concurrency: run(urls, c))
            figures[name] = args.targets / wall
            print(f"{concurrency:>11} {name:>15} {args.targets / wall:>9.0f} {cpu / args.targets * 1000:>13.3f} {sum(oks):>6}")
        print(
            f"{concurrency:>11} {'ratio':>15} {figures['monitor'] / figures['plain httpx']:>9.2f}x"
            f" (x2 processes: {figures['monitor x2 proc'] / figures['plain httpx']:.2f}x;"
            f" tcp connect / monitor http: {figures['tcp connect'] / figures['monitor']:.2f}x)"
        )
    if args.cli_runs:
        print(f"monitor check URL: median wall {cli_median(urls[0], args.cli_runs):.3f} s over {args.cli_runs} runs")
    server.terminate()


if __name__ == "__main__":
    main()
