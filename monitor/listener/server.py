"""The metrics listener: /metrics, /healthz, heartbeat pings (``/ping/<token>``) and /probe, with bounded resources."""

from __future__ import annotations

import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import HTTPServer

from monitor.listener.handler import Handler, refuse
from monitor.listener.pings import PingDesk
from monitor.listener.probe import Prober
from monitor.listener.refusals import Refusals
from monitor.listener.requests import Incoming, Refused
from monitor.metrics.series import Metrics

log = logging.getLogger("monitor.metrics")


class Lane:
    """``workers`` threads for one kind of request; past ``backlog`` more waiting, ``submit`` says no."""

    def __init__(self, name: str, workers: int, backlog: int) -> None:
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix=name)
        self._slots = threading.BoundedSemaphore(workers + backlog)

    def submit(self, work: Callable[..., None], *args: object) -> bool:
        if not self._slots.acquire(blocking=False):
            return False
        self._pool.submit(work, *args).add_done_callback(lambda _: self._slots.release())
        return True

    def stop(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class MetricsServer(HTTPServer):
    """Serves /metrics, /healthz and heartbeat pings from background threads, with bounded resources.

    One thread watches every open connection (``selectors``) and reads each request whole, head and
    body, before a worker sees it. A connection whose request has not all arrived ``idle_timeout``
    seconds after it opened is closed, and past ``max_connections`` the oldest still sending is closed
    to make room; each such close is counted and summed up in the log once a minute. Whole requests
    go to one of two lanes of threads: pings, which wait on the database (at most ``ping_wait``
    seconds: then 503, ping again), and everything else, so /healthz never waits behind a ping. A
    lane with a full queue answers 503 at once. So descriptors stay below ``max_connections`` plus
    the lanes' queues, whatever the clients do, and a scrape still gets through.
    """

    request_queue_size = 1024

    def __init__(
        self,
        metrics: Metrics,
        host: str,
        port: int,
        max_age: float,
        *,
        max_connections: int = 64,
        idle_timeout: float = 10.0,
        read_timeout: float = 5.0,
        workers: int = 4,
        ping_wait: float = 3.0,
        pings: Callable[[str, str, str | None], str | None] | None = None,
        prober: Prober | None = None,
    ) -> None:
        try:
            super().__init__((host, port), Handler)
        except OSError as exc:
            raise OSError(exc.errno, f"the metrics listener cannot listen on {host}:{port}: {exc.strerror}") from exc
        self.socket.setblocking(False)
        self.metrics, self.max_age = metrics, max_age
        self.desk = None if pings is None else PingDesk(pings, wait=ping_wait)
        self.max_connections, self.idle_timeout, self.read_timeout = max_connections, idle_timeout, read_timeout
        self.refusals = Refusals("the metrics listener", log=log)
        self.prober = prober
        self._lanes = {"ping": Lane("monitor-pings-answer", workers, 4 * workers), "other": Lane("monitor-metrics", workers, 4 * workers)}
        if prober is not None:  # probes wait on targets: a lane of their own, so a scrape of /metrics never waits
            self._lanes["probe"] = Lane("monitor-probes", prober.concurrency, 2 * prober.concurrency)
        self._pending: dict[socket.socket, Incoming] = {}  # insertion order: oldest first
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="monitor-metrics-accept", daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        assert isinstance(host, str)
        return f"http://{host}:{port}"

    @property
    def connections(self) -> int:
        """Connections whose request is still arriving."""
        return len(self._pending)

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(5)
        for lane in self._lanes.values():
            lane.stop()
        if self.desk is not None:
            self.desk.stop()
        self.server_close()

    def _watch(self) -> None:
        """Accept, read what arrives, hand whole requests to a lane, close the late."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.socket, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in selector.select(timeout=0.1):
                    if key.fileobj is self.socket:
                        self._accept(selector)
                    elif key.fileobj in self._pending:  # not closed by an earlier event of this batch
                        assert isinstance(key.fileobj, socket.socket)
                        self._read(selector, key.fileobj)
                now = time.monotonic()
                for conn in [c for c, incoming in self._pending.items() if incoming.deadline <= now]:
                    self._drop(selector, conn, "sent no whole request in time")
            for conn in list(self._pending):
                self._drop(selector, conn, None)

    def _accept(self, selector: selectors.BaseSelector) -> None:
        """Take every connection waiting; past the cap, the oldest still sending makes room."""
        for _ in range(self.request_queue_size):
            try:
                conn, _ = self.socket.accept()
            except BlockingIOError:
                return
            except OSError as exc:  # out of descriptors, most often: the waiting ones stay in the backlog
                self.refusals.note(f"not accepted ({exc.strerror})")
                self._stopping.wait(0.05)
                return
            while len(self._pending) >= self.max_connections:
                self._drop(selector, next(iter(self._pending)), "made room for a newer connection")
            conn.setblocking(False)
            self._pending[conn] = Incoming(time.monotonic() + self.idle_timeout)
            selector.register(conn, selectors.EVENT_READ)

    def _read(self, selector: selectors.BaseSelector, conn: socket.socket) -> None:
        """Feed what arrived to the connection's request; a whole one goes to its lane."""
        try:
            data = conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        incoming = self._pending[conn]
        try:
            whole = bool(data) and incoming.feed(data)
        except Refused as refused:
            self._forget(selector, conn)
            refuse(conn, refused.status, refused.reason)
            return
        if not data:
            self._drop(selector, conn, None)
        elif whole:
            self._forget(selector, conn)
            self._dispatch(conn, incoming)

    def _dispatch(self, conn: socket.socket, incoming: Incoming) -> None:
        lane = "ping" if incoming.path.startswith("/ping/") else "other"
        if incoming.path.split("?")[0] == "/probe" and "probe" in self._lanes:
            lane = "probe"
        conn.setblocking(True)
        if not self._lanes[lane].submit(self._serve, conn, incoming.head, incoming.body, time.monotonic()):
            self.refusals.note(f"answered 503: too many {lane} requests at once")
            refuse(conn, 503, "too many requests at once: try again")

    def _forget(self, selector: selectors.BaseSelector, conn: socket.socket) -> None:
        selector.unregister(conn)
        del self._pending[conn]

    def _drop(self, selector: selectors.BaseSelector, conn: socket.socket, reason: str | None) -> None:
        """Close a connection whose request did not arrive; ``reason`` is counted (None: the client left)."""
        self._forget(selector, conn)
        conn.close()
        if reason is not None:
            self.refusals.note(reason)

    def _serve(self, conn: socket.socket, head: bytes, body: bytes, arrived: float) -> None:
        try:
            self.finish_request((conn, head, body, arrived), conn.getpeername())  # type: ignore[arg-type]
        except Exception:  # a client that went away or timed out; nothing to report
            pass
        finally:
            self.shutdown_request(conn)
