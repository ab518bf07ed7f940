"""The answer to one whole request on the metrics listener: /metrics, /healthz, a heartbeat ping, or /probe."""

from __future__ import annotations

import io
import json
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol
from urllib.parse import parse_qs

from prometheus_client.exposition import CONTENT_TYPE_LATEST

from monitor.checks.heartbeat import PING_PATH, event_of, message_of
from monitor.listener.pings import Busy, PingDesk
from monitor.listener.probe import Prober
from monitor.metrics.series import Metrics


class Serving(Protocol):
    """What a handler reads of its listener (:class:`~monitor.listener.server.MetricsServer`)."""

    metrics: Metrics
    max_age: float
    read_timeout: float
    desk: PingDesk | None
    prober: Prober | None


class Handler(BaseHTTPRequestHandler):
    """Answers a request whose head and body the listener's watcher already read; it only writes."""

    server: Serving  # type: ignore[assignment]

    def setup(self) -> None:
        conn, head, body, self.arrived = self.request
        self.request = self.connection = conn
        conn.settimeout(self.server.read_timeout)  # for writes: a client that reads nothing is let go
        self.rfile = io.BytesIO(head)
        self.body: bytes = body
        self.wfile = conn.makefile("wb")

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path.startswith("/ping/"):
            self._ping(path)
        elif path == "/metrics":
            names = parse_qs(query).get("name[]", [])
            self._send(200, self.server.metrics.scrape(names), CONTENT_TYPE_LATEST)
        elif path == "/probe":
            self._probe(query)
        elif path == "/healthz":
            ok, body = self.server.metrics.health(self.server.max_age)
            self._send(200 if ok else 503, json.dumps(body).encode(), "application/json")
        else:
            self._send(404, b"see /metrics and /healthz\n", "text/plain")

    def _probe(self, query: str) -> None:
        if self.server.prober is None:
            self._send(404, b"/probe is not served here\n", "text/plain")
            return
        status, body, content_type = self.server.prober.answer(query, self.headers.get("X-Prometheus-Scrape-Timeout-Seconds"))
        self._send(status, body, content_type)

    def do_HEAD(self) -> None:
        """A HEAD to /ping/<token> is a ping, as Healthchecks takes it: the status and headers alone."""
        if self.path.split("?")[0].startswith("/ping/"):
            self._ping(self.path.split("?")[0], head=True)
        else:
            self._send(405, b"", "text/plain", head=True)

    def do_POST(self) -> None:
        """Only pings take a POST (a job may send its output): a failure's body, read and capped by the watcher, is
        kept as what the job said (:func:`monitor.checks.heartbeat.message_of`); any other's is dropped."""
        path = self.path.split("?")[0]
        if not path.startswith("/ping/"):
            self._send(405, b"POST is for /ping/<token> only\n", "text/plain")
        else:
            self._ping(path)

    def _ping(self, path: str, head: bool = False) -> None:
        """``/ping/<token>[/start|/fail|/<exit code>]``: 200 for a known token, else 404. The token is never logged."""
        from monitor.store import database_errors

        match, desk = PING_PATH.match(path), self.server.desk
        try:
            event = event_of(match.group(2)) if match else ""
            said = message_of(self.body) if event == "fail" and self.command == "POST" else None
            name = desk.take(match.group(1), event, self.arrived, said) if match and desk is not None else None
        except Busy as exc:  # not confirmed within seconds: the job's retry (curl --retry) or next run pings again
            self._send(503, f"{exc}: ping again\n".encode(), "text/plain", head=head)
            return
        except database_errors():  # not stored, so not taken: the job's retry or next run pings again
            self._send(503, b"the database is unavailable: ping again\n", "text/plain", head=head)
            return
        if name is None:
            self._send(404, b"not found\n", "text/plain", head=head)
        else:
            self._send(200, b"OK\n", "text/plain", head=head)

    def _send(self, status: int, body: bytes, content_type: str, head: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)


def refuse(conn: socket.socket, status: int, reason: str) -> None:
    """Answer ``status`` from the watcher without blocking (a small answer fits any socket's buffer), and close."""
    text = reason.encode() + b"\n"
    answer = (
        f"HTTP/1.0 {status} {REASONS.get(status, 'Error')}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(text)}\r\nConnection: close\r\n\r\n"
    ).encode() + text
    try:
        conn.send(answer, socket.MSG_DONTWAIT)
    except OSError:
        pass
    conn.close()


REASONS = {
    400: "Bad Request",
    411: "Length Required",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    503: "Service Unavailable",
}
