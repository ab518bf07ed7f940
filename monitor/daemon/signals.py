"""The daemon's signals: SIGTERM or SIGINT stops it, SIGHUP reloads its config, :meth:`Signals.wake` stops it from
any thread (a lost claim on the database).

The handlers only let Python write the signal's number to a pipe (``set_wakeup_fd``); the main thread reads it and
acts. No lock is taken inside a handler, and a reload starts at once, on a thread of its own
(:class:`~monitor.daemon.reloads.Reloads`): a SIGTERM during a long reload still stops the daemon.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable

from monitor.daemon.reloads import Reloads


class Signals:
    """Runs a daemon from ``start`` to ``stop``, reloading on SIGHUP, until a stop signal or :meth:`wake`."""

    def __init__(self) -> None:
        self._wake: int | None = None  # the wake-up pipe's end, while :meth:`run` runs

    def wake(self) -> None:
        """From any thread: :meth:`run` looks at ``done()`` now (and stops when it says so)."""
        if self._wake is not None:
            with contextlib.suppress(BlockingIOError):  # a full pipe: it is awake already
                os.write(self._wake, b"\0")  # no signal has number 0

    def run(self, start: Callable[[], None], stop: Callable[[], None], reload: Callable[[], object], done: Callable[[], bool]) -> None:
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_write, False)
        previous = signal.set_wakeup_fd(wake_write)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, lambda *_: None)
        self._wake, reloads = wake_write, Reloads(reload)
        try:
            start()
            while True:
                received = set(os.read(wake_read, 64))
                if received & {signal.SIGTERM, signal.SIGINT} or done():
                    break
                if signal.SIGHUP in received:
                    reloads.request()
            stop()
        finally:
            self._wake = None
            signal.set_wakeup_fd(previous)
            os.close(wake_read)
            os.close(wake_write)
