"""Real HTTP servers on loopback for tests and benchmarks, well- and ill-behaved.

``Misbehaving`` serves, by path:

    /healthy      200 {"status": "ok"}          /500        500
    /slow         answers after 3 s             /hang       accepts, reads, never answers
    /slowish      answers after 50 ms
    /drip         one byte every 0.2 s          /endless    a body that never ends
    /reset        resets the connection         /loop       redirects to itself
    /garbage      not HTTP                      /json-wrong 200 {"status": "degraded"}
    /big          a 2 MiB body                  /state      whatever ``server.state`` says

``server.state`` (``healthy``, ``error``, ``slow``, ``down``) lets a test
switch one target between behaviours while a daemon checks it.
"""

from __future__ import annotations

import json
import signal
import socket
import socketserver
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, Self, TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T | None], timeout: float = 10.0, every: float = 0.02) -> T:
    """Poll ``condition`` until it is truthy (and return it), or fail after ``timeout`` seconds.

    To wait for a value that a test then uses, give it when ready and None until then (``value if ready else
    None``), so the test gets the value's own type; ``ready and value`` gives a union with bool."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError("condition not met in time")


def stop_processes(processes: Iterable[subprocess.Popen[Any]], wait: float = 20.0) -> None:
    """SIGTERM to every process still running, then wait for each (killed if it does not end in ``wait``)."""
    processes = list(processes)
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            process.kill()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def response(status: int, body: bytes, content_type: str = "application/json", extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n{extra}Connection: keep-alive\r\n\r\n"
    return head.encode() + body


OK_BODY = json.dumps({"status": "ok"}).encode()


class _Handler(socketserver.BaseRequestHandler):
    server: Misbehaving

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(30)
        buffer = b""
        while True:
            while b"\r\n\r\n" not in buffer:
                try:
                    chunk = sock.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                buffer += chunk
            head, _, buffer = buffer.partition(b"\r\n\r\n")
            path = head.split(b" ")[1].decode()
            self.server.hits.append(path)
            if not self.answer(sock, path.split("?")[0]):
                return

    def answer(self, sock: socket.socket, path: str) -> bool:
        """Send the answer for ``path``; False closes the connection."""
        stop = self.server.stopping
        if path == "/state":
            path = {"healthy": "/healthy", "error": "/500", "slow": "/slow", "down": "/reset"}[self.server.state]
        if path == "/healthy":
            sock.sendall(response(200, OK_BODY))
        elif path == "/500":
            sock.sendall(response(500, b'{"error": "boom"}'))
        elif path == "/json-wrong":
            sock.sendall(response(200, b'{"status": "degraded"}'))
        elif path == "/json-deep":  # 50,000 nested lists: Python's json recursion limit
            sock.sendall(response(200, b"[" * 50_000))
        elif path == "/slowish":
            stop.wait(0.05)
            sock.sendall(response(200, OK_BODY))
        elif path == "/slow":
            stop.wait(3)
            sock.sendall(response(200, OK_BODY))
        elif path == "/hang":
            stop.wait(60)
            return False
        elif path == "/drip":
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
            for _ in range(1000):
                if stop.wait(0.2):
                    break
                sock.sendall(b"x")
            return False
        elif path == "/endless":
            sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            chunk = b"%x\r\n%s\r\n" % (65536, b"y" * 65536)
            deadline = time.monotonic() + 30
            while not stop.is_set() and time.monotonic() < deadline:
                try:
                    sock.sendall(chunk)
                except OSError:
                    break
            return False
        elif path == "/big":
            sock.sendall(response(200, b"z" * (2 << 20), "text/plain"))
        elif path == "/reset":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
            return False
        elif path == "/loop":
            sock.sendall(response(302, b"", extra="Location: /loop\r\n"))
        elif path == "/garbage":
            sock.sendall(b"\x00\x01garbage that is not HTTP at all\r\n\r\n")
            return False
        else:
            sock.sendall(response(404, b'{"error": "no such path"}'))
        return True


class Background(socketserver.ThreadingTCPServer):
    """A loopback server that serves from a thread inside ``with``; ``base`` is its address."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the default 5 drops simultaneous SYNs, which clients retry 1 s later

    def __init__(self, handler: Any) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()

    @property
    def base(self) -> str:
        host, port = self.server_address[:2]
        assert isinstance(host, str)  # an AF_INET address: (host, port)
        return f"http://{host}:{port}"


class Misbehaving(Background):
    """Start with ``with Misbehaving() as server:``; ``server.url('/healthy')``."""

    def __init__(self, handler: type[_Handler] = _Handler) -> None:
        super().__init__(handler)
        self.hits: list[str] = []
        self.state = "healthy"

    def url(self, path: str) -> str:
        return self.base + path


class _ReceiverHandler(BaseHTTPRequestHandler):
    server: Receiver

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.heads.append(dict(self.headers))
        if self.server.status < 300:
            self.server.received.append(json.loads(body) if body else None)
        self.send_response(self.server.status)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Receiver(Background):
    """A webhook receiver: records JSON bodies POSTed to it; ``status`` sets its answer."""

    def __init__(self, status: int = 200) -> None:
        super().__init__(_ReceiverHandler)
        self.status = status
        self.received: list[Any] = []
        self.heads: list[dict[str, str]] = []  # the headers of every POST, answered with success or not

    @property
    def url(self) -> str:
        return self.base + "/hook"


class _AnswerHandler(BaseHTTPRequestHandler):
    server: Answering

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = self.server.body.encode()
        self.send_response(self.server.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Answering(Background):
    """A loopback target that answers every request with ``status`` and a JSON ``body``, which a test may change;
    ``url`` is its health endpoint."""

    def __init__(self, status: int = 200, body: str = '{"status":"up"}') -> None:
        super().__init__(_AnswerHandler)
        self.status, self.body = status, body

    @property
    def url(self) -> str:
        return self.base + "/health"


class Shifted:
    """A store's clock, ``ago`` seconds in the past: occurrences of a failure days apart, in one test."""

    def __init__(self) -> None:
        self.ago = 0.0

    def __call__(self) -> float:
        return time.time() - self.ago


class _TcpHandler(socketserver.BaseRequestHandler):
    server: TcpServer

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(30)
        mode = self.server.mode
        if mode == "reset":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        if mode == "close":
            return
        try:
            data = sock.recv(65536)
        except OSError:
            return
        if mode == "echo" and data:
            sock.sendall(data.upper())
        elif mode == "silent":
            self.server.stopping.wait(30)


class TcpServer(Background):
    """A TCP server on loopback; ``mode``: echo (answers what it reads, upper-cased), silent (reads, never
    answers), reset (accepts, then resets), close (accepts, then closes without a word)."""

    def __init__(self, mode: str = "echo") -> None:
        super().__init__(_TcpHandler)
        self.mode = mode

    @property
    def address(self) -> str:
        host, port = self.server_address[:2]
        assert isinstance(host, str)  # an AF_INET address: (host, port)
        return f"{host}:{port}"


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)
