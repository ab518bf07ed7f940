"""Issue #33, item 4's soak: 200 targets fail at once while one receiver streams its answers for ever and the other
never answers. The daemon stays small and its /healthz quick; once the receivers recover, every notification is
delivered, each once."""

from __future__ import annotations

import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from servers import Background, free_port, stop_processes, wait_for

from monitor.store import Store

TARGETS = 200


class _Receiver(socketserver.BaseRequestHandler):
    server: Receiver

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(30)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(65536)
            if not chunk:
                return
            head += chunk
        head, _, body = head.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
        while len(body) < length:
            body += sock.recv(65536)
        key = next(line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n") if line.lower().startswith(b"idempotency-key"))
        try:
            self.answer(sock, key, json.loads(body))
        except OSError:  # the client hung up (its deadline, or it read enough)
            pass

    def answer(self, sock: socket.socket, key: str, message: dict[str, Any]) -> None:
        server = self.server
        if server.mode == "silent":
            server.recovered.wait(60)  # answered only once it recovers
        if server.mode == "endless" and not server.recovered.is_set():
            sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            server.answered.append((key, message))
            while not server.stopping.is_set():
                sock.sendall(b"%x\r\n%s\r\n" % (1 << 20, b"y" * (1 << 20)))
                server.stopping.wait(0.1)
            return
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        server.answered.append((key, message))


class Receiver(Background):
    def __init__(self, mode: str) -> None:
        super().__init__(_Receiver)
        self.mode, self.recovered = mode, threading.Event()
        self.answered: list[tuple[str, dict[str, Any]]] = []

    @property
    def url(self) -> str:
        return self.base + "/hook"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def healthz_seconds(port: int) -> float:
    """How long /healthz took to answer; a 503 (results late under the storm, on a loaded machine) is an answer."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
            answer.read()
    except urllib.error.HTTPError as refused:
        refused.read()
    return time.monotonic() - started


@pytest.mark.timeout(120)
def test_two_hundred_failing_targets_against_a_receiver_that_streams_and_one_that_never_answers(
    tmp_path: Path, store_location: Any
) -> None:
    names = [f"t{i:03d}" for i in range(TARGETS)]
    with Receiver("endless") as endless, Receiver("silent") as silent:
        config = tmp_path / "monitor.yaml"
        config.write_text(
            f"database: {store_location(tmp_path / 'm.db')}\nworkers: 1\nagent: {{mode: 'off'}}\n"
            "detectors: {consecutive: 1}\ndefaults: {interval: 1s, timeout: 1s}\n"
            f"alerts: {{webhooks: [{{url: '{endless.url}'}}, {{url: '{silent.url}'}}], retry_max: 1s}}\n"
            "targets:\n" + "".join(f"  - {{name: {n}, url: 'http://127.0.0.1:9/{n}'}}\n" for n in names)
        )
        port = free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "monitor", "run", "--config", str(config)],
            env={**os.environ, "MONITOR_METRICS_LISTEN": f"127.0.0.1:{port}"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        store = Store(store_location(tmp_path / "m.db")) if False else None
        try:
            wait_for(lambda: len(endless.answered) >= TARGETS // 2, timeout=30, every=0.2)  # the storm is under way
            rss, slowest, ends = [], 0.0, time.monotonic() + 4
            while time.monotonic() < ends:
                rss.append(rss_mb(process.pid))
                slowest = max(slowest, healthz_seconds(port))
                time.sleep(0.2)
            print(
                f"\nsoak: RSS up to {max(rss):.0f} MB, /healthz in {slowest * 1000:.0f} ms at the slowest, "
                f"{len(endless.answered)} answers streamed"
            )
            assert max(rss) < 300 and slowest < 1, (rss, slowest)
            endless.recovered.set()
            silent.recovered.set()
            store = Store(store_location(tmp_path / "m.db"))
            undelivered = "SELECT count(*) FROM outbox WHERE delivered_at IS NULL"
            wait_for(lambda: store is not None and store._scalar(undelivered) == 0, timeout=40, every=0.5)
            dropped = store._scalar("SELECT count(*) FROM outbox WHERE dropped_at IS NOT NULL")
            assert dropped == 0 and store._scalar("SELECT count(*) FROM outbox") == 2 * TARGETS
        finally:
            stop_processes([process])
            if store is not None:
                store.close()
        for receiver in (endless, silent):
            opened = Counter(m["incident"]["target"] for _, m in receiver.answered if m["event"] == "opened")
            assert set(opened) == set(names), receiver.mode  # every first message arrived
        assert max(Counter(key for key, _ in endless.answered).values()) == 1  # a cut-short 200 is not sent again
