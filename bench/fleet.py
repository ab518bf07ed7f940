"""The daemon at fleet scale, beside blackbox_exporter, in one run (issue 12).

    python bench/fleet.py [--sizes 1000,5000,20000,50000] [--intervals 1,5,30] [--window 20] [--quick]
                          [--database postgresql://...] [--flapping 50] [--before DIR] [--repeat 2]
                          [--workers auto] [--blackbox-window 20] [--blackbox-each]

Needs Debian's ``nginx``, ``prometheus-blackbox-exporter`` and ``wrk``. The script starts nginx with
its own config on a free port (one worker, keep-alive, ``return 200`` for any path). For each fleet
size and interval it starts the real daemon (``Daemon.run_forever``, agent off, a fresh SQLite file)
in its own process, with that many targets, each its own name and path on that nginx. The config is
built in Python: a YAML config file is capped at 1 MiB, about 15,000 targets. Once every target
was checked once (the start-up burst: all are due at start) and one more interval passed (within
``--warmup`` seconds in all), it measures for ``--window`` seconds:

    demanded     targets / interval, checks per second
    started      checks started per second (``monitor_schedule_lag_seconds_count``)
    recorded     checks recorded per second (``monitor_checks_total``, summed): what a user gets; ``ratio``
                 is recorded / demanded, ``rec/start`` recorded / started (issue 22: within 5%)
    rows         rows of ``results`` stored per second (SQLite only): the same, read from the database
    p99 lag      how late checks started after they were due (from the histogram's buckets)
    p99 age      how long after its check ended a result was stored (``monitor_result_age_seconds``; a
                 daemon without backpressure has no such series: nan)
    skipped/s    slots that passed unchecked (``monitor_checks_skipped_total``, every reason)
    RSS, RSS +   the daemon's resident memory (its workers' included) at the window's start, and its highest in
                 the window above that
    CPU/check    the daemon's CPU time (user + system, its workers' included) over the checks it recorded
    CPU          the same, as a share of one core (without workers the daemon checks on one core; with the
                 machine shared, it may get less than a whole one: compare ``load``)
    vs bbox      recorded per second over blackbox_exporter's probes per second in the same run

``--workers N`` (or ``auto``) sets the daemon's ``workers``: that many checking processes, the daemon recording
their results (README, "Every core"). ``auto`` is the default config: ``workers: auto`` reads as if left out.

Every ``--every`` seconds of the window a line prints started/s, recorded/s, skipped/s, RSS and the p99 age
over the seconds since the last: the RSS over time.

``--flapping N`` makes N of the targets flap on a 20 s cycle (nginx answers them 500 for 10 s, then 200
for 10 s; detectors: 2 failures open, 2 passes resolve), so incidents keep opening, resolving and being
embedded (``memory.embedder: builtin``) while the window is measured: ``opened`` incidents and ``embedded``
(``monitor_memory_embedded_total``) in the window are printed. ``--before DIR`` runs the daemon of another
checkout (``git worktree add --detach DIR <commit>``) in the same run, with the same settings, alternating
with this one ``--repeat`` times, so that the machine's load falls on both alike; ``code`` says which.

Measured here (2 shared cores, load 4-6 from other work; each row a 20-30 s window, alternating):

    5,000 at 5 s, no flapping     before 756330d: 87.8%, 54.9% recorded, 0.664 / 0.938 ms CPU per check
                                  after:          71.2%, 60.9% recorded, 0.892 / 0.913 ms   (medians +12.7%)
    5,000 at 5 s, 50 flapping     before: 78.4%, 64.5%, 0.892 / 0.872 ms
                                  after:  54.6%, 60.3%, 0.972 / 0.931 ms, 29 / 16 embedded  (medians +7.8%)
    2,000 at 5 s, 50 flapping     before: 103.1%, 99.5%, 0.985 / 1.213 ms
                                  after:  100.5%, 99.9%, 1.765 / 1.497 ms, 67 / 95 embedded

At 5,000 targets neither daemon got the ~0.9 core that 1,000 checks/s take (55-70% of one), so neither
kept up; the spread between runs of the same code (up to 40%) is larger than the difference between the
two. At 2,000 both record every check, the embedding included; its CPU (about 60-80 ms an incident) is
in the daemon's CPU per check.

In the same run, blackbox_exporter (its own config on a free port, an ``http_2xx`` module) probes
the same nginx, driven by ``wrk`` cycling through the same target paths: its probes per second and
its own CPU time per probe. ``--blackbox-each`` drives it again just before each row, and that row's ``vs bbox`` is
against it: on a machine others share, the load changes within a run, and both then see about the same.
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
from dataclasses import dataclass
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
    map $time_iso8601 $down {{ "~T..:..:[024]" 1; default 0; }}  # 10 s down, 10 s up
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{ return 200 "ok\\n"; }}
        location /flap/ {{
            if ($down) {{ return 500 "upstream pg-main.db.internal:5432 refused the connection: pool exhausted\\n"; }}
            return 200 "ok\\n";
        }}
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
SERIES = (
    "monitor_schedule_lag_seconds_bucket",
    "monitor_schedule_lag_seconds_count",
    "monitor_checks_skipped_total",
    "monitor_checks_total",
    "monitor_result_age_seconds_bucket",
)


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
    process = subprocess.Popen(
        ["nginx", "-e", str(workdir / "error.log"), "-p", str(workdir), "-c", str(conf)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_port(port)
    return process, port


def blackbox_rate(workdir: Path, nginx_port: int, count: int, seconds: float, connections: int) -> tuple[float, float]:
    """blackbox_exporter's probes per second against the nginx, driven by wrk, and its CPU per probe (ms)."""
    port = free_port()
    (workdir / "blackbox.yml").write_text(BLACKBOX_CONF)
    (workdir / "probe.lua").write_text(WRK_SCRIPT.format(port=nginx_port, count=count))
    exporter = subprocess.Popen(
        ["prometheus-blackbox-exporter", f"--config.file={workdir / 'blackbox.yml'}", f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port)
        probe = (
            urllib.request.urlopen(f"http://127.0.0.1:{port}/probe?module=http_2xx&target=127.0.0.1:{nginx_port}/t1", timeout=10)
            .read()
            .decode()
        )
        if "probe_success 1" not in probe:
            raise RuntimeError(f"blackbox_exporter's probe of nginx failed:\n{probe}")
        cpu_before = cpu_seconds(exporter.pid)
        done = subprocess.run(
            ["wrk", "-t2", f"-c{connections}", f"-d{seconds:.0f}s", "-s", str(workdir / "probe.lua"), f"http://127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            check=True,
        )
        cpu = cpu_seconds(exporter.pid) - cpu_before
        match = re.search(r"(\d+) requests in ([\d.]+)(ms|s|m)\b", done.stdout)  # wrk writes a minute as 1.00m
        rate = re.search(r"Requests/sec:\s+([\d.]+)", done.stdout)
        if match is None or rate is None:
            raise RuntimeError(f"no rate in wrk's output:\n{done.stdout}")
        return float(rate.group(1)), cpu / int(match.group(1)) * 1000
    finally:
        exporter.terminate()
        exporter.wait()


def serve(config_file: str, code: str | None = None) -> None:
    """The daemon process: ``Daemon.run_forever`` on a config built from a JSON file; ``code``: the checkout
    whose daemon runs (default: this one)."""
    import logging

    if code:  # neither this checkout (sys.path, PYTHONPATH) nor its monitor
        sys.path[:] = [code, *(entry for entry in sys.path if Path(entry or ".").resolve() != ROOT)]

    import monitor
    from monitor.config import Config
    from monitor.daemon import Daemon

    print(f"daemon: {Path(monitor.__file__).parent}", file=sys.stderr, flush=True)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    config = Config.model_validate(json.loads(Path(config_file).read_text()))
    Daemon(config).run_forever()


def tree(pid: int) -> list[int]:
    """The process and its descendants still running (the daemon's workers)."""
    found = [pid]
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            for child in children.read_text().split():
                found.extend(tree(int(child)))
        except OSError:
            pass  # ended meanwhile
    return found


def summed_mb(pids: list[int], file: str, key: str) -> float:
    """``key`` (a figure in kB) of ``/proc/PID/file`` summed over ``pids``, in MB; NaN when none was read."""
    total = 0
    for each in pids:
        try:
            found = re.search(rf"^{key}:\s+(\d+) kB", Path(f"/proc/{each}/{file}").read_text(), re.MULTILINE)
        except OSError:
            continue
        total += int(found.group(1)) if found else 0
    return total / 1024 if total else float("nan")


def rss_mb(pid: int) -> float:
    """The resident memory of the process and its descendants."""
    return summed_mb(tree(pid), "status", "VmRSS")


def pss_mb(pid: int) -> float:
    """The proportional memory of the process and its descendants: each shared page (a library's code, a page
    two processes share) counted once across them, as the machine spends it; RSS counts it in each."""
    return summed_mb(tree(pid), "smaps_rollup", "Pss")


def own_rss_mb(pid: int) -> float:
    """The resident memory of the daemon's own process, without its workers."""
    return summed_mb([pid], "status", "VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of the process, of its descendants still running, and of the children it reaped (a restarted
    worker's predecessor)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")
    for each in tree(pid):
        try:
            total += cpu_seconds(each)
        except OSError:
            pass  # ended meanwhile
    return total


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
    ages: dict[float, float] = {}  # monitor_result_age_seconds: only a daemon with backpressure has it
    figures: dict[str, Any] = {"buckets": buckets, "ages": ages, "started": 0.0, "skipped": 0.0, "checks": 0.0}
    for line in text.splitlines():
        value = line.rsplit(" ", 1)[-1]
        if line.startswith(("monitor_schedule_lag_seconds_bucket", "monitor_result_age_seconds_bucket")):
            bound = re.search(r'le="([^"]+)"', line)
            assert bound is not None
            (buckets if line.startswith("monitor_schedule") else ages)[float(bound.group(1))] = float(value)
        elif line.startswith("monitor_schedule_lag_seconds_count"):
            figures["started"] = float(value)
        elif line.startswith("monitor_checks_skipped_total"):  # with or without its reason label: summed
            figures["skipped"] += float(value)
        elif line.startswith("monitor_checks_total"):  # each target's, by result: recorded checks
            figures["checks"] += float(value)
    return figures


def recorded(location: str) -> tuple[int, int]:
    """Results and incidents stored so far (the newest row ids): what a user gets, read beside the daemon."""
    import sqlite3

    with sqlite3.connect(f"file:{location}?mode=ro", uri=True, timeout=30) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        newest = "SELECT seq FROM sqlite_sequence WHERE name = 'results_recent'"  # a view has no rowid; ids go on here
        results = (
            (db.execute(newest).fetchone() or [0])[0]
            if "results_recent" in tables
            else db.execute("SELECT coalesce(max(rowid), 0) FROM results").fetchone()[0]
        )
        incidents = db.execute("SELECT coalesce(max(rowid), 0) FROM incidents").fetchone()[0]
    return int(results), int(incidents)


def embedded(port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics?name[]=monitor_memory_embedded_total", timeout=30).read().decode()
    found = re.search(r"^monitor_memory_embedded_total (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def quantile(q: float, before: dict[float, float], after: dict[float, float]) -> float:
    """As PromQL's histogram_quantile over the increase between two scrapes."""
    bounds = sorted(after)
    if not bounds:
        return float("nan")
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


@dataclass(frozen=True)
class Settings:
    """What every row shares: the window, the daemon's settings, the flapping targets, the database."""

    window: float
    warmup: float
    concurrency: int
    flapping: int = 0
    postgres: str | None = None
    every: float = 10.0
    workers: int | str = 1


def fleet_config(
    location: str, nginx_port: int, metrics_port: int, size: int, interval: float, settings: Settings, code: str | None
) -> dict[str, Any]:
    """The daemon's config: ``size`` targets on the nginx, the first ``settings.flapping`` of them flapping;
    with flapping targets this checkout embeds incident memories (``code``, another checkout, may not know how)."""

    def url(i: int) -> str:
        return f"http://127.0.0.1:{nginx_port}/{'flap/' if i < settings.flapping else ''}t{i}"

    config: dict[str, Any] = {
        "database": location,
        "agent": {"mode": "off"},
        "concurrency": settings.concurrency,
        "workers": settings.workers,
        "metrics": {"host": "127.0.0.1", "port": metrics_port},
        "targets": [{"name": f"t{i}", "url": url(i), "interval": interval, "timeout": 5.0} for i in range(size)],
    }
    if settings.flapping:
        config["detectors"] = {"consecutive": 2, "recover_after": 2}
        if code is None:
            config["memory"] = {"embedder": "builtin"}
    return config


def measure(workdir: Path, nginx_port: int, size: int, interval: float, settings: Settings, code: str | None = None) -> dict[str, Any]:
    """One row: the daemon of this checkout (or of ``code``) on ``size`` targets at ``interval``."""
    metrics_port, postgres = free_port(), settings.postgres
    database = workdir / f"fleet-{size}-{interval:g}.db"
    location = fresh_schema(postgres, f"fleet_{size}_{interval:g}".replace(".", "_")) if postgres else str(database)
    config_file = workdir / "fleet.json"
    config_file.write_text(json.dumps(fleet_config(location, nginx_port, metrics_port, size, interval, settings, code)))
    window = max(settings.window, interval)  # a whole interval: each target is due exactly once in it
    daemon = subprocess.Popen([sys.executable, __file__, "--serve", str(config_file), *(["--code", code] if code else [])])
    try:
        wait_port(metrics_port, 120)
        deadline = time.monotonic() + settings.warmup
        while scrape(metrics_port)["started"] < size and time.monotonic() < deadline:
            time.sleep(0.5)  # the start-up burst: every target is due at start
        time.sleep(max(0.0, min(interval, deadline - time.monotonic())))  # and the first slots after it
        samples = watch(daemon.pid, metrics_port, None if postgres else location, postgres is not None, window, settings.every)
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)
        for path in workdir.glob(database.name + "*"):
            path.unlink()
    return row_of(size, interval, samples)


def watch(pid: int, metrics_port: int, sqlite: str | None, postgres: bool, window: float, every: float) -> list[dict[str, Any]]:
    """Snapshots every ``every`` seconds over ``window``, each interval between two printed as it ends."""
    samples = [snapshot(pid, metrics_port, sqlite, postgres)]
    end = samples[0]["at"] + window
    while samples[-1]["at"] < end - 0.5:
        time.sleep(max(0.0, min(every, end - time.monotonic())))
        samples.append(snapshot(pid, metrics_port, sqlite, postgres))
        before, now = samples[-2], samples[-1]
        elapsed = now["at"] - before["at"]
        print(
            f"    {now['at'] - samples[0]['at']:>5.0f} s: started {(now['started'] - before['started']) / elapsed:>6,.0f}/s"
            f"  recorded {(now['checks'] - before['checks']) / elapsed:>6,.0f}/s"
            f"  skipped {(now['skipped'] - before['skipped']) / elapsed:>6,.0f}/s  RSS {now['rss']:>6.1f} MB"
            f" (daemon {now['own_rss']:.0f}, PSS {now['pss']:.0f})"
            f"  p99 age {quantile(0.99, before['ages'], now['ages']):>6.3f} s"
            f"  load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
    return samples


def snapshot(pid: int, metrics_port: int, sqlite: str | None, postgres: bool) -> dict[str, Any]:
    """The daemon's figures at one moment: its series, its CPU time, what it stored, what it embedded."""
    figures = scrape(metrics_port)
    results, incidents = recorded(sqlite) if sqlite else (0, 0)
    return {
        **figures,
        "cpu": tree_cpu_seconds(pid),
        "rss": rss_mb(pid),
        "own_rss": own_rss_mb(pid),
        "pss": pss_mb(pid),
        "at": time.monotonic(),
        "results": results,
        "incidents": incidents,
        "embedded": embedded(metrics_port),
        "pg_cpu": postgres_cpu_seconds() if postgres else 0.0,
    }


def row_of(size: int, interval: float, samples: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole window's figures: rates, quantiles, CPU, and RSS (at its start, its highest, the drift)."""
    first, last = samples[0], samples[-1]
    elapsed = last["at"] - first["at"]
    checks = last["checks"] - first["checks"]  # recorded: what a user gets
    stored = last["results"] - first["results"]
    cpu = last["cpu"] - first["cpu"]
    nan = float("nan")
    rss = [sample["rss"] for sample in samples]
    return {
        "targets": size,
        "interval": interval,
        "demanded": size / interval,
        "started": (last["started"] - first["started"]) / elapsed,
        "achieved": checks / elapsed,
        "recorded": stored / elapsed if stored else nan,
        "rss": rss[0],
        "rss_drift": max(rss) / rss[0] - 1,
        "pss": max(sample["pss"] for sample in samples),
        "own_rss": max(sample["own_rss"] for sample in samples),
        "p99_age": quantile(0.99, first["ages"], last["ages"]),
        "p99_lag": quantile(0.99, first["buckets"], last["buckets"]),
        "skipped": (last["skipped"] - first["skipped"]) / elapsed,
        "cpu_per_check_ms": cpu / checks * 1000 if checks else nan,
        "cpu": cpu / elapsed,
        "opened": last["incidents"] - first["incidents"],
        "embedded": last["embedded"] - first["embedded"],
        "pg_cpu_per_check_ms": (last["pg_cpu"] - first["pg_cpu"]) / checks * 1000 if checks else nan,
    }


HEADER = (
    f"{'code':>6} | {'targets':>7} | {'interval':>8} | {'demanded/s':>10} | {'started/s':>9} | "
    f"{'recorded/s':>10} | {'rows/s':>6} | {'rec/start':>9} | {'ratio':>6} | {'vs bbox':>7} | {'p99 lag':>8} | {'p99 age':>8} | "
    f"{'skipped/s':>9} | {'RSS MB':>6} | {'RSS +':>6} | {'CPU/check':>9} | {'CPU':>5} | "
    f"{'opened':>6} | {'embedded':>8} | {'load':>5} | {'PSS MB':>6} | {'daemon MB':>9}"
)


def line(code: str, row: dict[str, Any], postgres: bool, blackbox: float | None = None) -> str:
    ratio = row["achieved"] / row["demanded"]
    versus = f"{row['achieved'] / blackbox:>6.2f}x" if blackbox else f"{'-':>7}"
    return (
        f"{code:>6} | {row['targets']:>7,} | {row['interval']:>7g}s | {row['demanded']:>10,.0f} | "
        f"{row['started']:>9,.0f} | {row['achieved']:>10,.0f} | {row['recorded']:>6,.0f} | "
        f"{row['achieved'] / row['started'] if row['started'] else float('nan'):>9.1%} | {ratio:>6.1%} | {versus} | "
        f"{row['p99_lag']:>7.3f}s | {row['p99_age']:>7.3f}s | {row['skipped']:>9,.0f} | {row['rss']:>6.0f} | "
        f"{row['rss_drift']:>+6.1%} | {row['cpu_per_check_ms']:>6.3f} ms | {row['cpu']:>5.0%} | "
        f"{row['opened']:>6} | {row['embedded']:>8.0f} | {os.getloadavg()[0]:>5.2f} | {row['pss']:>6.0f} | {row['own_rss']:>9.0f}"
        + (f" | {row['pg_cpu_per_check_ms']:>9.3f} ms" if postgres else "")
    )


def summary(rows: list[tuple[str, dict[str, Any]]]) -> None:
    """Each code's median CPU per check and its worst ratio over the repeats, and after against before."""
    import statistics

    by_code: dict[str, list[dict[str, Any]]] = {}
    for code, row in rows:
        by_code.setdefault(code, []).append(row)
    medians = {}
    for code, found in by_code.items():
        medians[code] = statistics.median(r["cpu_per_check_ms"] for r in found)
        worst = min(r["achieved"] / r["demanded"] for r in found)
        each = ", ".join(f"{r['cpu_per_check_ms']:.3f}" for r in found)
        print(f"{code}: median CPU/check {medians[code]:.3f} ms over {len(found)} runs ({each}), lowest ratio {worst:.1%}", flush=True)
    if "before" in medians and "after" in medians:
        print(f"CPU/check after vs before: {medians['after'] / medians['before'] - 1:+.1%}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,5000,20000,50000")
    parser.add_argument("--intervals", default="1,5,30")
    parser.add_argument("--window", type=float, default=20.0, help="seconds measured per row")
    parser.add_argument("--warmup", type=float, default=60.0, help="most seconds to wait for the start-up burst")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between two printed samples of a row")
    parser.add_argument("--concurrency", type=int, default=64, help="the daemon's concurrency setting")
    parser.add_argument("--wrk-connections", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="1k and 5k targets at 1 s and 5 s, 10 s windows")
    parser.add_argument("--database", metavar="URL", help="a PostgreSQL database to write to instead of SQLite")
    parser.add_argument("--flapping", type=int, default=0, help="targets that flap (incidents open and are embedded)")
    parser.add_argument("--before", metavar="DIR", help="another checkout whose daemon runs too, alternating")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each row (alternating with --before)")
    parser.add_argument("--no-blackbox", action="store_true", help="leave out blackbox_exporter")
    parser.add_argument("--blackbox-window", type=float, help="seconds blackbox_exporter is driven (default: --window)")
    parser.add_argument(
        "--blackbox-each", action="store_true", help="drive blackbox_exporter again just before each row: both under the same load"
    )
    parser.add_argument("--workers", default="auto", help="the daemon's workers: a number, or auto (one per core, the default config's)")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--code", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.code)
        return
    if args.quick:
        args.sizes, args.intervals, args.window = "1000,5000", "1,5", min(args.window, 10.0)
    for tool in ("nginx", "prometheus-blackbox-exporter", "wrk"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            sys.exit(f"{tool} is not installed (apt-get install nginx prometheus-blackbox-exporter wrk)")
    settings = Settings(
        args.window,
        args.warmup,
        args.concurrency,
        args.flapping,
        args.database,
        args.every,
        args.workers if args.workers == "auto" else int(args.workers),
    )
    with tempfile.TemporaryDirectory(prefix="fleet-") as tmp:
        workdir = Path(tmp)
        nginx, nginx_port = start_nginx(workdir)
        try:
            run(args, workdir, nginx_port, settings)
        finally:
            nginx.terminate()
            nginx.wait()


def probe_blackbox(args: argparse.Namespace, workdir: Path, nginx_port: int, count: int) -> float:
    """blackbox_exporter's probes per second now, printed with its CPU per probe and the load."""
    rate, cpu = blackbox_rate(workdir, nginx_port, count, args.blackbox_window or args.window, args.wrk_connections)
    print(
        f"blackbox_exporter: {rate:,.0f} probes/s (wrk -c{args.wrk_connections}), {cpu:.3f} ms of its CPU per probe, "
        f"load {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    return rate


def run(args: argparse.Namespace, workdir: Path, nginx_port: int, settings: Settings) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    intervals = [float(s) for s in args.intervals.split(",")]
    print(
        f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min), {os.cpu_count()} cores; "
        f"{settings.flapping} targets flapping; workers: {settings.workers}",
        flush=True,
    )
    blackbox = None if args.no_blackbox else probe_blackbox(args, workdir, nginx_port, max(sizes))
    print(HEADER + (f" | {'PG CPU/check':>12}" if args.database else ""), flush=True)
    codes = [("before", str(Path(args.before).resolve())), ("after", None)] if args.before else [("after", None)]
    for size in sizes:
        for interval in intervals:
            rows = []
            for _ in range(args.repeat):
                for label, code in codes:
                    if args.blackbox_each and not args.no_blackbox:
                        blackbox = probe_blackbox(args, workdir, nginx_port, size)
                    row = measure(workdir, nginx_port, size, interval, settings, code)
                    rows.append((label, row))
                    print(line(label, row, args.database is not None, blackbox), flush=True)
            summary(rows)
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)", flush=True)


if __name__ == "__main__":
    main()
