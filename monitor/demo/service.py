"""A small web service on loopback whose health can be switched, for the demo.

    service = DemoService().start()
    service.set("erroring")          # healthy | erroring | slow | flapping | down | recovering
    service.url("/health")

``/health`` answers by state: ``healthy`` 200; ``erroring`` 500; ``slow`` after
3 s; ``flapping`` alternates 200 and 500; ``down`` resets every connection;
``recovering`` fails twice more, then is healthy. ``POST /restart`` (the
remediation endpoint) makes it healthy and counts restarts. ``GET /state``
shows the state; ``POST /state?set=NAME`` switches it.

Run it alone with ``python -m monitor.demo.service --port 8080``.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

STATES = ("healthy", "erroring", "slow", "flapping", "down", "recovering")


class _Handler(BaseHTTPRequestHandler):
    server: DemoService
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = urlparse(self.path).path
        if path == "/health":
            self._health()
        elif path == "/state":
            self._send(200, self.server.describe())
        else:
            self._send(404, {"error": "see /health, /state, /restart"})

    def do_POST(self) -> None:
        url = urlparse(self.path)
        if url.path == "/restart":
            self.server.restart()
            self._send(200, self.server.describe())
        elif url.path == "/state":
            wanted = parse_qs(url.query).get("set", [""])[0]
            if wanted not in STATES:
                self._send(400, {"error": f"unknown state {wanted!r}; one of {', '.join(STATES)}"})
                return
            self.server.set(wanted)
            self._send(200, self.server.describe())
        else:
            self._send(404, {"error": "see /health, /state, /restart"})

    def _health(self) -> None:
        state = self.server.answer_state()
        if state == "down":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        if state == "slow":
            self.server.stopping.wait(3)
        if state in ("erroring", "failing"):
            self._send(500, {"status": "error", "error": "database connection pool exhausted"})
        else:
            self._send(200, {"status": "ok"})


class DemoService(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.state = "healthy"
        self.restarts = 0
        self.requests = 0
        self._left_failing = 0
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, path: str = "/health") -> str:
        host, port = self.server_address[:2]
        assert isinstance(host, str)
        return f"http://{host}:{port}{path}"

    def set(self, state: str) -> None:
        if state not in STATES:
            raise ValueError(f"unknown state {state!r}; one of {', '.join(STATES)}")
        with self._lock:
            self.state, self._left_failing = state, 2 if state == "recovering" else 0

    def restart(self) -> None:
        with self._lock:
            self.restarts += 1
            self.state = "healthy"

    def answer_state(self) -> str:
        """The behaviour of this request (flapping alternates, recovering counts down)."""
        with self._lock:
            self.requests += 1
            if self.state == "flapping":
                return "healthy" if self.requests % 2 else "failing"
            if self.state == "recovering":
                if self._left_failing > 0:
                    self._left_failing -= 1
                    return "failing"
                self.state = "healthy"
            return self.state

    def describe(self) -> dict[str, Any]:
        return {"state": self.state, "restarts": self.restarts, "requests": self.requests}

    def start(self) -> DemoService:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description="monitor's demo service")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--state", choices=STATES, default="healthy")
    args = parser.parse_args()
    service = DemoService(args.host, args.port)
    service.set(args.state)
    print(f"demo service on {service.url()} ({args.state}); POST /state?set=NAME to switch")
    service.serve_forever()


if __name__ == "__main__":
    main()
