"""Issue #33, item 4: a receiver's answer is read no further than 64 KiB, and each delivery has a total deadline,
against loopback receivers that stream forever, never answer, or trickle their status line."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from outbox import plain_alerts, queue
from past import known
from servers import Background, wait_for

from monitor.alerts.client import delivery_client, post
from monitor.config import Config
from monitor.incidents.tracker import Event
from monitor.store import Store
from monitor.store.writes import IncidentWrites

CHUNK = 1 << 20


class _Hostile(socketserver.BaseRequestHandler):
    server: Hostile

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(30)
        received = b""
        while b"\r\n\r\n" not in received:
            received += sock.recv(65536)
        stop, sent = self.server.stopping, 0
        try:
            if self.server.mode == "endless":  # 200, then a 1 MiB chunk every 0.1 s, for ever
                sock.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                while not stop.wait(0.1):
                    sock.sendall(b"%x\r\n%s\r\n" % (CHUNK, b"y" * CHUNK))
                    sent += CHUNK
            elif self.server.mode == "trickle":  # the status line, a byte every 0.2 s
                for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n":
                    if stop.wait(0.2):
                        break
                    sock.sendall(bytes([byte]))
            else:  # silent: the request is read, no answer ever comes
                stop.wait(60)
        except OSError:  # the client hung up: what the test waits for
            pass
        self.server.ended.append((time.monotonic(), sent))


class Hostile(Background):
    def __init__(self, mode: str) -> None:
        super().__init__(_Hostile)
        self.mode = mode
        self.ended: list[tuple[float, int]] = []  # when each connection ended, and the bytes of body sent on it

    @property
    def url(self) -> str:
        return self.base + "/hook"


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[Hostile]:
    with Hostile(request.param) as server:
        yield server


def timed(call: Callable[[], Any], limit: float) -> tuple[Any, float]:
    """``call()``'s value and its seconds, on a thread; fails if it has not returned within ``limit``."""
    outcome: list[Any] = []
    started = time.monotonic()
    worker = threading.Thread(target=lambda: outcome.append(call()), daemon=True)
    worker.start()
    worker.join(limit)
    assert outcome, f"still running after {limit} s"
    return outcome[0], time.monotonic() - started


@pytest.mark.parametrize("receiver", ["endless"], indirect=True)
def test_an_endless_answer_is_read_no_further_than_the_cap_and_the_connection_dropped(receiver: Hostile) -> None:
    with delivery_client() as client:
        error, seconds = timed(lambda: post(client, receiver.url, {"event": "opened"}), 10)
        assert error is None and seconds < 2  # a 200 is a delivery, whatever follows it
        ended = time.monotonic()
        wait_for(lambda: receiver.ended, timeout=5)  # the receiver's writes failed: the client hung up
    [(when, sent)] = receiver.ended
    assert when - ended < 5 and sent <= 8 * CHUNK  # socket buffers, not the endless body


@pytest.mark.parametrize("receiver", ["silent", "trickle"], indirect=True)
def test_a_delivery_ends_by_its_deadline_however_the_receiver_stalls(receiver: Hostile) -> None:
    """A silent receiver would hold each read for the 5 s timeout; a trickling one, each read for 0.2 s, for ever."""
    with delivery_client() as client:
        error, seconds = timed(lambda: post(client, receiver.url, {"event": "opened"}, deadline=1.0), 10)
    assert error is not None and error.startswith("ReadTimeout") and 0.9 < seconds < 2.0, (error, seconds)


@pytest.mark.parametrize("receiver", ["endless"], indirect=True)
def test_the_outbox_delivers_to_an_endless_receiver_once_and_goes_on(receiver: Hostile, db_path: str) -> None:
    store = Store(db_path)
    alerts = plain_alerts(Config.model_validate({"alerts": {"webhooks": [{"url": receiver.url}]}}).alerts, store)
    incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
    queue(alerts, Event("opened", known(store.incidents.incident(incident))))
    delivered, seconds = timed(alerts.deliver_due, 15)
    alerts.stop()
    assert delivered == 1 and seconds < 3 and store.outbox.pending_notifications() == 0


def test_a_receivers_name_that_never_resolves_ends_by_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A resolver that hangs (the edge of the world, faked: the system's cannot be pointed at one here)."""
    looked_up = threading.Event()

    def hanging(*args: Any, **kwargs: Any) -> Any:
        looked_up.set()
        time.sleep(3)
        raise socket.gaierror("no answer")

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    with delivery_client() as client:
        error, seconds = timed(lambda: post(client, "http://hooks.slow-dns.test/x", {"event": "opened"}, deadline=0.5), 10)
    assert looked_up.is_set() and error is not None and error.startswith("ConnectTimeout"), error
    assert seconds < 2.0, seconds
