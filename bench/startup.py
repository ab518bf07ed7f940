"""One-shot start-up: ``monitor check URL`` against a plain httpx GET, each as a whole process.

    python bench/startup.py [-n 15] [--console-script]

A loopback HTTP server (its own thread) answers both. The commands run alternately, ``n`` times each, after
one warm-up run of each (the page cache, and bytecode written as an installed package has it); the script
prints each command's median wall-clock time with its quartiles and its median CPU time (user and system),
the ratios of the medians, and the load average (on a busy machine the CPU ratio is the steadier figure).
The goal (issue 34): ``monitor check URL`` within 1.3x the plain GET.
"""

from __future__ import annotations

import argparse
import http.server
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import threading
import time

BASELINE = "import httpx; httpx.get({url!r}).raise_for_status()"


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server protocol
        body = b'{"status": "ok"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve() -> tuple[str, http.server.ThreadingHTTPServer]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/health", server


def commands(url: str, console_script: bool) -> dict[str, list[str]]:
    """Each command measured, by name; the monitor command as installed, or through ``python -m``."""
    script = shutil.which("monitor", path=os.path.dirname(sys.executable))
    monitor = [script] if console_script and script else [sys.executable, "-m", "monitor"]
    return {"httpx.get": [sys.executable, "-c", BASELINE.format(url=url)], "monitor check": [*monitor, "check", url]}


def timed(argv: list[str]) -> tuple[float, float]:
    """The wall-clock seconds the process took, and the CPU seconds (user and system) it used."""
    # Bytecode is written (the warm-up's), as an installed package has it: compiling sources is no start-up cost.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env)
    took = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr.decode(errors='replace')}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def measure(argvs: dict[str, list[str]], n: int) -> dict[str, list[tuple[float, float]]]:
    """``n`` timings (wall, CPU) of each command, alternating, after one warm-up of each."""
    for argv in argvs.values():
        timed(argv)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in argvs}
    for _ in range(n):
        for name, argv in argvs.items():
            times[name].append(timed(argv))
    return times


def summary(times: dict[str, list[tuple[float, float]]], argvs: dict[str, list[str]]) -> None:
    medians = {}
    for name, pairs in times.items():
        wall, cpu = [w for w, _ in pairs], [c for _, c in pairs]
        medians[name] = statistics.median(wall), statistics.median(cpu)
        q1, _, q3 = statistics.quantiles(wall, n=4)
        print(
            f"{name:14} median {medians[name][0]:.3f} s (quartiles {q1:.3f}-{q3:.3f}), CPU {medians[name][1]:.3f} s, "
            f"n={len(pairs)}: {shlex.join(argvs[name])}"
        )
    (wall_a, cpu_a), (wall_b, cpu_b) = medians["httpx.get"], medians["monitor check"]
    print(f"ratio          {wall_b / wall_a:.2f}x wall-clock (goal <= 1.30), {cpu_b / cpu_a:.2f}x CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=15, help="runs of each command (default 15)")
    parser.add_argument("--console-script", action="store_true", help="run the installed `monitor` script, not python -m monitor")
    args = parser.parse_args()
    url, server = serve()
    argvs = commands(url, args.console_script)
    load = os.getloadavg()
    times = measure(argvs, args.n)
    server.shutdown()
    server.server_close()
    summary(times, argvs)
    print(f"load average   {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} before, {' '.join(f'{x:.2f}' for x in os.getloadavg())} after")


if __name__ == "__main__":
    main()
