"""Where the daemon's own process keeps its memory, at fleet scale (issue 45, item 3).

    python bench/daemon_memory.py [--targets 50000] [--interval 5] [--workers auto] [--settle 30] [--top 20]

Starts nginx and the real daemon as ``bench/fleet.py`` does (agent off, a fresh SQLite file, ``--targets`` on
the nginx at ``--interval``), twice in the same run: once plain (the baseline: RSS as a user sees it) and once
with ``tracemalloc`` started before anything is imported (which costs memory and CPU of its own). Once every
target was checked once and ``--settle`` seconds passed, the daemon's process writes what it holds:

    status       VmRSS split into anonymous, file-backed and shared memory (/proc/self/status)
    smaps        resident memory by mapping: the heap, anonymous mappings (malloc's arenas and its large
                 blocks, Python's arenas, thread stacks), each library (/proc/self/smaps)
    malloc       glibc's mallinfo2: bytes in use in its arenas, bytes free there but kept, bytes in mmap'd
                 blocks: what the C allocator holds beside what Python asked of it
    python       tracemalloc's total, and its largest sites (file:line) and files
    objects      the most numerous kinds of object the collector tracks, with their own (shallow) sizes

and the parent prints it with RSS and PSS summed over the daemon and its workers.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from fleet import Settings, fleet_config, free_port, own_rss_mb, pss_mb, rss_mb, scrape, start_nginx, wait_port


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


def malloc_figures() -> dict[str, float]:
    """glibc's view, in MB: in use and free in its arenas (sbrk'd heap and the threads' arenas), and mmap'd blocks."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return {}
    mb = 1024 * 1024
    return {"arenas": info.arena / mb, "in use": info.uordblks / mb, "free, kept": info.fordblks / mb, "mmap'd blocks": info.hblkhd / mb}


def pymalloc_figures() -> dict[str, float]:
    """Python's own allocator (objects up to 512 bytes, in arenas of its own, mmap'd): MB, from
    ``sys._debugmallocstats``, which writes to the C stderr."""
    with tempfile.TemporaryFile() as captured:
        saved = os.dup(2)
        try:
            os.dup2(captured.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        text = captured.read().decode(errors="replace")
    mb = 1024 * 1024
    wanted = {"arenas allocated current": "arenas", "bytes in allocated blocks": "in use", "bytes in available blocks": "free in pools"}
    found = {}
    for line in text.splitlines():
        for key, name in wanted.items():
            if line.startswith("# " + key) and name not in found:
                found[name] = int(line.split("=")[1].replace(",", "").strip())
    if "arenas" in found:
        found["arenas"] *= 1024 * 1024  # arenas of 1 MiB (Python 3.10 and later)
    return {name: value / mb for name, value in found.items()}


def smaps_groups(text: str) -> list[tuple[str, float, int]]:
    """Resident MB by mapping: each file by its name, anonymous mappings together, and how many mappings."""
    groups: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    name = ""
    for line in text.splitlines():
        head = re.match(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$", line)
        if head:
            name = head.group(1).strip() or "[anonymous]"
            name = os.path.basename(name) if name.startswith("/") else name
            counts[name] += 1
        elif line.startswith("Rss:"):
            groups[name] += int(line.split()[1])
    return sorted(((n, kb / 1024, counts[n]) for n, kb in groups.items()), key=lambda g: -g[1])


def objects(top: int) -> list[tuple[str, int, float]]:
    """The most numerous kinds of object the collector tracks: (kind, how many, MB of their own size)."""
    import gc

    counts: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    for obj in gc.get_objects():
        kind = type(obj).__name__
        counts[kind] += 1
        sizes[kind] += sys.getsizeof(obj)
    return [(kind, n, sizes[kind] / 1024 / 1024) for kind, n in counts.most_common(top)]


def report(top: int) -> dict[str, Any]:
    """What this process holds now."""
    import tracemalloc

    status = Path("/proc/self/status").read_text()
    found: dict[str, Any] = {
        key: int(m.group(1)) / 1024
        for key in ("VmRSS", "RssAnon", "RssFile", "RssShmem")
        if (m := re.search(rf"^{key}:\s+(\d+)", status, re.M))
    }
    found["threads"] = int(re.search(r"^Threads:\s+(\d+)", status, re.M).group(1))  # type: ignore[union-attr]
    found["smaps"] = smaps_groups(Path("/proc/self/smaps").read_text())[:top]
    found["malloc"] = malloc_figures()
    found["pymalloc"] = pymalloc_figures()
    if tracemalloc.is_tracing():
        snapshot = tracemalloc.take_snapshot()
        found["traced"] = tracemalloc.get_traced_memory()[0] / 1024 / 1024
        found["sites"] = [(str(s.traceback), s.size / 1024 / 1024, s.count) for s in snapshot.statistics("lineno")[:top]]
        found["files"] = [(str(s.traceback), s.size / 1024 / 1024, s.count) for s in snapshot.statistics("filename")[:top]]
    found["objects"] = objects(top)
    return found


def serve(config_file: str, out: str, top: int) -> None:
    """The daemon process; on SIGUSR1 it writes :func:`report` to ``out``."""
    if os.environ.get("DAEMON_MEMORY_TRACE"):
        import tracemalloc

        tracemalloc.start(1)
    import logging

    from monitor.config import Config
    from monitor.daemon import Daemon

    def write(*_: object) -> None:
        threading.Thread(target=lambda: Path(out).write_text(json.dumps(report(top))), daemon=True).start()

    signal.signal(signal.SIGUSR1, write)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    Daemon(Config.model_validate(json.loads(Path(config_file).read_text()))).run_forever()


def measure(workdir: Path, nginx_port: int, args: argparse.Namespace, trace: bool) -> dict[str, Any]:
    """One daemon: started, warmed up, settled, asked for its report, stopped."""
    metrics_port = free_port()
    workers = args.workers if args.workers == "auto" else int(args.workers)
    settings = Settings(window=0, warmup=0, concurrency=64, workers=workers)
    config_file, out = workdir / "daemon.json", workdir / f"report-{trace}.json"
    config = fleet_config(str(workdir / f"memory-{trace}.db"), nginx_port, metrics_port, args.targets, args.interval, settings, None)
    config_file.write_text(json.dumps(config))
    env = {**os.environ, **({"DAEMON_MEMORY_TRACE": "1"} if trace else {})}
    command = [sys.executable, __file__, "--serve", str(config_file), "--out", str(out), "--top", str(args.top)]
    daemon = subprocess.Popen(command, env=env)
    try:
        wait_port(metrics_port, 180)
        deadline = time.monotonic() + args.warmup
        while scrape(metrics_port)["started"] < args.targets and time.monotonic() < deadline:
            time.sleep(1)
        time.sleep(args.settle)
        figures = {"rss summed": rss_mb(daemon.pid), "pss summed": pss_mb(daemon.pid), "daemon rss": own_rss_mb(daemon.pid)}
        figures["started"] = scrape(metrics_port)["started"]
        daemon.send_signal(signal.SIGUSR1)
        for _ in range(600):
            if out.exists() and out.stat().st_size:
                time.sleep(0.5)
                break
            time.sleep(0.5)
        figures["report"] = json.loads(out.read_text())
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)
    return figures


def show(label: str, figures: dict[str, Any]) -> None:
    found = figures["report"]
    print(
        f"\n== {label}: RSS summed {figures['rss summed']:,.0f} MB, PSS summed {figures['pss summed']:,.0f} MB, daemon's RSS "
        f"{figures['daemon rss']:,.0f} MB ({figures['started']:,.0f} checks started)"
    )
    print(
        "  status: "
        + ", ".join(f"{k} {found[k]:,.1f} MB" for k in ("VmRSS", "RssAnon", "RssFile", "RssShmem") if k in found)
        + f", {found['threads']} threads"
    )
    print("  malloc: " + ", ".join(f"{k} {v:,.1f} MB" for k, v in found["malloc"].items()))
    print("  pymalloc: " + ", ".join(f"{k} {v:,.1f} MB" for k, v in found["pymalloc"].items()))
    print("  resident by mapping: " + "; ".join(f"{name} {mb:,.1f} MB ({n})" for name, mb, n in found["smaps"][:10]))
    if "traced" in found:
        print(f"  python (tracemalloc): {found['traced']:,.1f} MB traced; largest sites:")
        for site, mb, count in found["sites"]:
            print(f"    {mb:8,.1f} MB {count:>10,}  {site}")
        print("  by file:")
        for site, mb, count in found["files"]:
            print(f"    {mb:8,.1f} MB {count:>10,}  {site}")
    print("  objects the collector tracks (count, their own size):")
    print("    " + "; ".join(f"{kind} {n:,} ({mb:,.1f} MB)" for kind, n, mb in found["objects"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--targets", type=int, default=50_000)
    parser.add_argument("--interval", type=float, default=5.0)
    parser.add_argument("--workers", default="auto")
    parser.add_argument("--warmup", type=float, default=120.0, help="most seconds to wait for every target's first check")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds after the warm-up before the report")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.out, args.top)
        return
    fleet = f"{args.targets:,} targets at {args.interval:g} s, workers: {args.workers}"
    print(f"load before: {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores; {fleet}")
    with tempfile.TemporaryDirectory(prefix="daemon-memory-") as tmp:
        workdir = Path(tmp)
        nginx, nginx_port = start_nginx(workdir)
        try:
            for label, trace in (("plain", False), ("tracemalloc", True)):
                show(label, measure(workdir, nginx_port, args, trace))
        finally:
            nginx.terminate()
            nginx.wait()
    print(f"load after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
