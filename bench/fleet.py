"""The daemon at fleet scale, beside blackbox_exporter, in one run (issue 12).

    python bench/fleet.py [--sizes 1000,5000,20000,50000] [--intervals 1,5,30] [--window 20] [--quick]
                          [--database postgresql://...]

Needs Debian's ``nginx``, ``prometheus-blackbox-exporter`` and ``wrk``. The script starts nginx with
its own config on a free port (one worker, keep-alive, ``return 200`` for any path). For each fleet
size and interval it starts the real daemon (``Daemon.run_forever``, agent off, a fresh SQLite file)
in its own process, with that many targets, each its own name and path on that nginx. The config is
built in Python: a YAML config file is capped at 1 MiB, about 15,000 targets. Once every target
was checked once (the start-up burst: all are due at start) and one more interval passed (within
``--warmup`` seconds in all), it measures for ``--window`` seconds:

    demanded     targets / interval, checks per second
    achieved     checks started per second (``monitor_schedule_lag_seconds_count``)
    p99 lag      how late checks started after they were due (from the histogram's buckets)
    skipped/s    slots that passed unchecked (``monitor_checks_skipped_total``)
    CPU/check    the daemon process's CPU time (user + system) over the checks it made
    CPU          the same, as a share of one core (the daemon checks on one core; with the machine
                 shared, it may get less than a whole one: compare ``load``)

In the same run, blackbox_exporter (its own config on a free port, an ``http_2xx`` module) probes
the same nginx, driven by ``wrk`` cycling through the same target paths: its probes per second and
its own CPU time per probe.
Print ``uptime`` beside the figures: other work on the machine moves them.

With ``--database URL`` each row writes to a fresh schema of that PostgreSQL database instead of a
SQLite file, and ``PG CPU/check`` adds the CPU time of the machine's ``postgres`` processes (the
server must run on this machine for that column to mean anything).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

NGINX_CONF = """daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{ return 200 "ok\\n"; }}
    }}
}}
"""
BLACKBOX_CONF = """modules:
  http_2xx:
    prober: http
    timeout: 5s
    http:
      preferred_ip_protocol: ip4
"""
WRK_SCRIPT = """local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", "/probe?module=http_2xx&target=127.0.0.1:{port}/t" .. (n % {count}))
end
"""
SERIES = ("monitor_schedule_lag_seconds_bucket", "monitor_schedule_lag_seconds_count", "monitor_checks_skipped_total")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout:.0f} s")


def start_nginx(workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    conf = workdir / "nginx.conf"
    conf.write_text(NGINX_CONF.format(dir=workdir, port=port))
    process = subprocess.Popen(["nginx", "-e", str(workdir / "error.log"), "-p", str(workdir), "-c", str(conf)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port)
    return process, port


def blackbox_rate(workdir: Path, nginx_port: int, count: int, seconds: float, connections: int) -> tuple[float, float]:
    """blackbox_exporter's probes per second against the nginx, driven by wrk, and its CPU per probe (ms)."""
    port = free_port()
    (workdir / "blackbox.yml").write_text(BLACKBOX_CONF)
    (workdir / "probe.lua").write_text(WRK_SCRIPT.format(port=nginx_port, count=count))
    exporter = subprocess.Popen(["prometheus-blackbox-exporter", f"--config.file={workdir / 'blackbox.yml'}",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port)
        probe = urllib.request.urlopen(f"http://127.0.0.1:{port}/probe?module=http_2xx&target=127.0.0.1:{nginx_port}/t1",
                                       timeout=10).read().decode()
        if "probe_success 1" not in probe:
            raise RuntimeError(f"blackbox_exporter's probe of nginx failed:\n{probe}")
        cpu_before = cpu_seconds(exporter.pid)
        done = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{seconds:.0f}s", "-s", str(workdir / "probe.lua"),
                               f"http://127.0.0.1:{port}"], capture_output=True, text=True, check=True)
        cpu = cpu_seconds(exporter.pid) - cpu_before
        match = re.search(r"(\d+) requests in ([\d.]+)(m?s)", done.stdout)
        rate = re.search(r"Requests/sec:\s+([\d.]+)", done.stdout)
        if match is None or rate is None:
            raise RuntimeError(f"no rate in wrk's output:\n{done.stdout}")
        return float(rate.group(1)), cpu / int(match.group(1)) * 1000
    finally:
        exporter.terminate()
        exporter.wait()


def serve(config_file: str) -> None:
    """The daemon process: ``Daemon.run_forever`` on a config built from a JSON file."""
    import logging

    from monitor.config import Config
    from monitor.daemon import Daemon

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = Config.model_validate(json.loads(Path(config_file).read_text()))
    Daemon(config).run_forever()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def postgres_cpu_seconds() -> float:
    """CPU time of every ``postgres`` process on this machine (the server and its backends)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # ended meanwhile
        if text.split(" (", 1)[1].startswith("postgres)"):
            total += cpu_seconds(int(stat.parent.name))
    return total


def fresh_schema(url: str, name: str) -> str:
    """A new, empty schema ``name`` of the database at ``url``, and the URL that puts the store there."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{name}"


def scrape(port: int) -> dict[str, Any]:
    query = "&".join(f"name[]={name}" for name in SERIES)
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics?{query}", timeout=30).read().decode()
    buckets: dict[float, float] = {}
    figures: dict[str, Any] = {"buckets": buckets, "started": 0.0, "skipped": 0.0}
    for line in text.splitlines():
        if line.startswith("monitor_schedule_lag_seconds_bucket"):
            bound = re.search(r'le="([^"]+)"', line)
            assert bound is not None
            buckets[float(bound.group(1))] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("monitor_schedule_lag_seconds_count"):
            figures["started"] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("monitor_checks_skipped_total"):
            figures["skipped"] = float(line.rsplit(" ", 1)[1])
    return figures


def quantile(q: float, before: dict[float, float], after: dict[float, float]) -> float:
    """As PromQL's histogram_quantile over the increase between two scrapes."""
    bounds = sorted(after)
    counts = [after[b] - before.get(b, 0.0) for b in bounds]
    total = counts[-1]
    if total <= 0:
        return float("nan")
    rank, lower, below = q * total, 0.0, 0.0
    for bound, count in zip(bounds, counts, strict=True):
        if count >= rank:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * (rank - below) / max(count - below, 1e-9)
        lower, below = bound, count
    return lower


def measure(workdir: Path, nginx_port: int, size: int, interval: float, window: float, concurrency: int,
            warmup: float, postgres: str | None = None) -> dict[str, Any]:
    metrics_port = free_port()
    database = workdir / f"fleet-{size}-{interval:g}.db"
    location = fresh_schema(postgres, f"fleet_{size}_{interval:g}".replace(".", "_")) if postgres else str(database)
    config = {"database": location, "agent": {"mode": "off"}, "concurrency": concurrency,
              "metrics": {"host": "127.0.0.1", "port": metrics_port},
              "targets": [{"name": f"t{i}", "url": f"http://127.0.0.1:{nginx_port}/t{i}", "interval": interval,
                           "timeout": 5.0} for i in range(size)]}
    config_file = workdir / "fleet.json"
    config_file.write_text(json.dumps(config))
    window = max(window, interval)  # a whole interval: each target is due exactly once in it
    daemon = subprocess.Popen([sys.executable, __file__, "--serve", str(config_file)])
    try:
        wait_port(metrics_port, 120)
        deadline = time.monotonic() + warmup
        while scrape(metrics_port)["started"] < size and time.monotonic() < deadline:
            time.sleep(0.5)  # the start-up burst: every target is due at start
        time.sleep(max(0.0, min(interval, deadline - time.monotonic())))  # and the first slots after it
        first, cpu_first, at_first = scrape(metrics_port), cpu_seconds(daemon.pid), time.monotonic()
        pg_first = postgres_cpu_seconds() if postgres else 0.0
        time.sleep(window)
        last, cpu_last, at_last = scrape(metrics_port), cpu_seconds(daemon.pid), time.monotonic()
        pg_last = postgres_cpu_seconds() if postgres else 0.0
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)
        for path in workdir.glob(database.name + "*"):
            path.unlink()
    elapsed = at_last - at_first
    checks = last["started"] - first["started"]
    cpu = cpu_last - cpu_first
    return {"targets": size, "interval": interval, "demanded": size / interval, "achieved": checks / elapsed,
            "p99_lag": quantile(0.99, first["buckets"], last["buckets"]),
            "skipped": (last["skipped"] - first["skipped"]) / elapsed,
            "cpu_per_check_ms": cpu / checks * 1000 if checks else float("nan"), "cpu": cpu / elapsed,
            "pg_cpu_per_check_ms": (pg_last - pg_first) / checks * 1000 if checks else float("nan")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,5000,20000,50000")
    parser.add_argument("--intervals", default="1,5,30")
    parser.add_argument("--window", type=float, default=20.0, help="seconds measured per row")
    parser.add_argument("--warmup", type=float, default=60.0, help="most seconds to wait for the start-up burst")
    parser.add_argument("--concurrency", type=int, default=64, help="the daemon's concurrency setting")
    parser.add_argument("--wrk-connections", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="1k and 5k targets at 1 s and 5 s, 10 s windows")
    parser.add_argument("--database", metavar="URL", help="a PostgreSQL database to write to instead of SQLite")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    if args.quick:
        args.sizes, args.intervals, args.window = "1000,5000", "1,5", min(args.window, 10.0)
    for tool in ("nginx", "prometheus-blackbox-exporter", "wrk"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            sys.exit(f"{tool} is not installed (apt-get install nginx prometheus-blackbox-exporter wrk)")
    sizes = [int(s) for s in args.sizes.split(",")]
    intervals = [float(s) for s in args.intervals.split(",")]
    with tempfile.TemporaryDirectory(prefix="fleet-") as tmp:
        workdir = Path(tmp)
        nginx, nginx_port = start_nginx(workdir)
        try:
            print(f"load before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores", flush=True)
            blackbox, blackbox_cpu = blackbox_rate(workdir, nginx_port, max(sizes), args.window, args.wrk_connections)
            print(f"blackbox_exporter: {blackbox:,.0f} probes/s (wrk -c{args.wrk_connections}), "
                  f"{blackbox_cpu:.3f} ms of its CPU per probe", flush=True)
            print(f"{'targets':>8} | {'interval':>8} | {'demanded/s':>10} | {'achieved/s':>10} | {'ratio':>6} | "
                  f"{'p99 lag':>8} | {'skipped/s':>9} | {'CPU/check':>9} | {'CPU':>5} | {'load':>5}"
                  + (f" | {'PG CPU/check':>12}" if args.database else ""), flush=True)
            for size in sizes:
                for interval in intervals:
                    row = measure(workdir, nginx_port, size, interval, args.window, args.concurrency, args.warmup,
                                  args.database)
                    print(f"{size:>8,} | {interval:>7g}s | {row['demanded']:>10,.0f} | {row['achieved']:>10,.0f} | "
                          f"{row['achieved'] / row['demanded']:>6.0%} | {row['p99_lag']:>7.3f}s | "
                          f"{row['skipped']:>9,.0f} | {row['cpu_per_check_ms']:>6.3f} ms | {row['cpu']:>5.0%} | "
                          f"{os.getloadavg()[0]:>5.2f}"
                          + (f" | {row['pg_cpu_per_check_ms']:>9.3f} ms" if args.database else ""), flush=True)
            print(f"blackbox_exporter: {blackbox:,.0f} probes/s, {blackbox_cpu:.3f} ms CPU per probe; "
                  f"load after: {os.getloadavg()[0]:.2f}", flush=True)
        finally:
            nginx.terminate()
            nginx.wait()


if __name__ == "__main__":
    main()
