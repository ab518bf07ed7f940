"""The watchdog of PostgreSQL connections: what ends a wait for a server that no longer answers.

A server that hangs (its host frozen, ``SIGSTOP``) or a network that drops packets without a reset leaves a
statement waiting for ever: the kernel at either end may go on acknowledging, so neither TCP keepalives nor a
``statement_timeout`` (the server's own clock is stopped) ends it. Once a statement has waited ``patience``
seconds, the watchdog asks the server for a new connection: one that comes within ``PROBE`` seconds says the
server is alive and the statement merely slow (it waits on); none says it is gone, and the waiting connection
is cut (its socket shut down), so that the statement fails like any lost connection: the caller keeps what it
meant to write, and the next statement connects again.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
import weakref
from typing import Any, Protocol

log = logging.getLogger("monitor.store.engines")

PROBE = 2  # seconds a new connection may take to say the server is alive (libpq's shortest connect_timeout)
EVERY = 0.5  # seconds between two looks at the connections


class Watched(Protocol):
    location: str
    shown: str
    patience: float
    asked: tuple[float, Any] | None  # since when the server was asked, on which connection; None: nothing asked
    probed_at: float

    def cut_off(self, reason: str) -> None: ...


class Watchdog:
    """One thread for every PostgreSQL engine of the process; it starts with the first."""

    def __init__(self) -> None:
        self.engines: weakref.WeakSet[Any] = weakref.WeakSet()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def watch(self, engine: Watched) -> None:
        with self.lock:
            self.engines.add(engine)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="monitor-db-watchdog", daemon=True)
                self.thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(EVERY)
            with self.lock:
                engines = list(self.engines)
            for engine in engines:
                try:
                    self.inspect(engine, time.monotonic())
                except Exception:  # a bug here must not end the watch over the others
                    log.exception("the database watchdog failed on %s", engine.shown)

    def inspect(self, engine: Watched, now: float) -> None:
        """Cut ``engine``'s connection if it has waited past its patience and the server takes no new one."""
        asked = engine.asked
        if asked is None or now - max(asked[0], engine.probed_at) < engine.patience:
            return
        engine.probed_at = now
        if answers(engine.location):
            return
        if engine.asked is asked:  # still the same wait
            engine.cut_off(f"no answer from the server in {engine.patience:.0f} s, nor to a new connection in {PROBE} s")
            cut(asked[1])


def answers(location: str) -> bool:
    """Whether the server at ``location`` takes a new connection within ``PROBE`` seconds."""
    import psycopg

    try:
        psycopg.connect(location, connect_timeout=PROBE, autocommit=True).close()
    except psycopg.Error:
        return False
    return True


def cut(conn: Any) -> None:
    """Shut ``conn``'s socket down under it: whatever waits on it wakes to a lost connection."""
    with contextlib.suppress(Exception), socket.socket(fileno=socket.dup(conn.pgconn.socket)) as sock:
        sock.shutdown(socket.SHUT_RDWR)


WATCHDOG = Watchdog()
