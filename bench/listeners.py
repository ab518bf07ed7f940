"""/healthz latency and the daemon's descriptors while 200 slow clients sit on each of its two listeners.

    python bench/listeners.py [--seconds 20] [--baseline /work/main]

Starts ``monitor run`` as a child (with ``ulimit -n 1024``, systemd's default) with the metrics listener
and the web UI on loopback ports and one HTTP target, checked every second, on a loopback server. Then
200 clients per listener (half send their request head a line at a time, half a ping's body a byte at a
time; a client the daemon closes connects again at once) drip for ``--seconds`` while /healthz is asked
every 0.25 s (5 s timeout). Prints /healthz latency p50/p95/max, answers missed, the daemon's peak open
descriptors, and the checks stored against those due. ``--baseline DIR`` runs the same against the
checkout in DIR (e.g. main) first.
"""

from __future__ import annotations

import argparse
import http.server
import os
import resource
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import BinaryIO

HERE = Path(__file__).resolve().parent.parent
SLOW_HEAD = b"GET / HTTP/1.1\r\nHost: x\r\n"
SLOW_BODY = b"POST /ping/xxxxxxxx HTTP/1.1\r\nHost: x\r\nContent-Length: 9000\r\n\r\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def target_server() -> str:
    class Quiet(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def start_daemon(checkout: Path, work: Path, metrics: int, web: int, target: str, log: BinaryIO) -> subprocess.Popen[bytes]:
    (work / "monitor.yaml").write_text(
        f"agent: {{mode: 'off'}}\nmetrics: {{host: 127.0.0.1, port: {metrics}}}\n"
        f"web: {{enabled: true, listen: '127.0.0.1:{web}'}}\n"
        f"targets:\n  - {{name: api, url: '{target}', interval: 1s, timeout: 2s}}\n"
    )

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    env = {**os.environ, "PYTHONPATH": str(checkout)}
    daemon = subprocess.Popen(
        [sys.executable, "-m", "monitor", "run", "--config", str(work / "monitor.yaml"), "--db", str(work / "monitor.db")],
        cwd=work,
        env=env,
        preexec_fn=limit,
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and healthz(metrics, 1.0) is None:
        time.sleep(0.2)
    return daemon


def healthz(port: int, timeout: float) -> float | None:
    """Seconds /healthz took to answer; None when it did not within ``timeout``."""
    started = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
            return time.monotonic() - started if sock.recv(64).startswith(b"HTTP/") else None
    except OSError:
        return None


class Crowd:
    """``size`` slow clients on ``port``, kept at ``size``: the closed ones connect again."""

    def __init__(self, port: int, size: int) -> None:
        self.port = port
        self.socks = [self._open(i) for i in range(size)]

    def _open(self, i: int) -> socket.socket | None:
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=1)
            sock.sendall(SLOW_HEAD if i % 2 else SLOW_BODY)
            sock.setblocking(False)
            return sock
        except OSError:
            return None

    def drip(self) -> None:
        for i, sock in enumerate(self.socks):
            try:
                if sock is None:
                    raise OSError
                sock.send(b"X-Drip: 1\r\n" if i % 2 else b"x")
            except OSError:
                if sock is not None:
                    sock.close()
                self.socks[i] = self._open(i)

    def close(self) -> None:
        for sock in self.socks:
            if sock is not None:
                sock.close()


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def run(checkout: Path, seconds: float) -> dict[str, float]:
    metrics, web = free_port(), free_port()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with open(work / "daemon.log", "wb") as log:
            daemon = start_daemon(checkout, work, metrics, web, target_server(), log)
            try:
                return flood(daemon, work, metrics, web, seconds)
            finally:
                daemon.terminate()
                daemon.wait(20)


def flood(daemon: subprocess.Popen[bytes], work: Path, metrics: int, web: int, seconds: float) -> dict[str, float]:
    idle = descriptors(daemon.pid)
    crowds = [Crowd(metrics, 200), Crowd(web, 200)]
    latencies: list[float | None] = []
    peak, started, last_drip = 0, time.time(), 0.0
    while time.time() - started < seconds:
        if time.monotonic() - last_drip >= 2.0:
            for crowd in crowds:
                crowd.drip()
            last_drip = time.monotonic()
        latencies.append(healthz(metrics, 5.0))
        peak = max(peak, descriptors(daemon.pid))
        time.sleep(0.25)
    ended = time.time()
    for crowd in crowds:
        crowd.close()
    with sqlite3.connect(work / "monitor.db") as db:
        stored = db.execute("SELECT COUNT(*) FROM results WHERE checked_at BETWEEN ? AND ?", (started, ended)).fetchone()[0]
    answered = sorted(t for t in latencies if t is not None)
    return {
        "asked": len(latencies),
        "missed": len(latencies) - len(answered),
        "p50": statistics.median(answered) if answered else float("nan"),
        "p95": answered[int(0.95 * (len(answered) - 1))] if answered else float("nan"),
        "max": answered[-1] if answered else float("nan"),
        "peak_fds": peak,
        "idle_fds": idle,
        "checks": stored,
        "due": int(ended - started),
        "log_bytes": (work / "daemon.log").stat().st_size,
    }


def show(label: str, r: dict[str, float]) -> None:
    print(
        f"{label:>9}: /healthz p50 {r['p50'] * 1000:7.1f} ms  p95 {r['p95'] * 1000:7.1f} ms  max "
        f"{r['max'] * 1000:7.1f} ms  missed {r['missed']:.0f}/{r['asked']:.0f}  fds {r['idle_fds']:.0f} idle, "
        f"{r['peak_fds']:.0f} peak of 1024  "
        f"checks {r['checks']:.0f}/{r['due']:.0f} due  log {r['log_bytes']:.0f} B"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--baseline", type=Path, help="another checkout to compare with, e.g. /work/main")
    args = parser.parse_args()
    if args.baseline:
        show("baseline", run(args.baseline, args.seconds))
    show("this", run(HERE, args.seconds))


if __name__ == "__main__":
    main()
