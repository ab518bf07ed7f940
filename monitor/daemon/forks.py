"""The worker processes of ``workers: N``, forked from one fork server that has imported what they run.

The first worker started starts ``multiprocessing``'s fork server: a process of its own, a child of the daemon,
that imports the worker, its judge and every check kind (:mod:`monitor.checks.preload`) and then forks each
worker on request. Sixteen workers share one copy of those modules' pages (about 45 MB) instead of importing
sixteen, and one starts in milliseconds once the server is up. The server exits when the daemon does; so does
each worker, whose pipe to the daemon closes.

:class:`Fork` gives the slots the part of :class:`subprocess.Popen`'s interface they use.
"""

from __future__ import annotations

import atexit
import functools
import multiprocessing
import multiprocessing.util  # its exit handler, which joins children, registered before ours (ours runs first)
import os
import select
import signal
import subprocess
import threading
import weakref
from multiprocessing.connection import Connection

from monitor import wiring

# what a worker imports: the composition root that makes it, its judge, the store (the judge reads windows from it);
# monitor.checks.preload last: it freezes
PRELOAD = ["monitor.wiring", "monitor.incidents.verdicts", "monitor.store", "monitor.checks.preload"]
SERVER = multiprocessing.get_context("forkserver")
_STARTED: weakref.WeakSet[Fork] = weakref.WeakSet()


@functools.cache
def prepare() -> None:
    """Once, before the first worker is forked: name what the fork server imports, and kill the workers still running
    when this process exits. Both change state global to the process (multiprocessing's one fork server, the exit
    handlers), so they happen here, when a daemon starts workers, not when this module is imported."""
    SERVER.set_forkserver_preload(PRELOAD)
    atexit.register(_kill_left)  # after multiprocessing's own exit handler (registered at its import): runs before it


class Fork:
    """Worker ``number`` forked on its end of the pipe (``conn``, which this process may close once it started).

    Whether it runs and how it is killed go through a pidfd of its own, not through the fork server: a server that
    died (the OOM killer, a stray signal) leaves multiprocessing saying 255 for a worker that still runs, and
    ignoring a kill. A worker whose server died is this process's child if this process is PID 1 (a container's
    entry point) or a subreaper: then it is reaped here too, and its real exit code read."""

    def __init__(self, conn: Connection, number: int, level: str) -> None:
        prepare()
        self._process = SERVER.Process(target=wiring.worker, args=(conn, number, level), name=f"monitor-worker-{number}")
        self._process.start()
        self.pid: int = self._process.pid or 0
        try:
            self._pidfd: int | None = os.pidfd_open(self.pid)
        except OSError:  # it is gone already, or a kernel before 5.3: the fork server's word is all there is
            self._pidfd = None
        self._code: int | None = None
        self._lock = threading.Lock()  # the watch, a reader and stop() may ask at once; the pidfd is closed once
        _STARTED.add(self)

    def poll(self) -> int | None:
        """Its exit code (minus the signal that killed it; 255: unknown), or None while it runs."""
        with self._lock:
            if self._code is not None:
                return self._code
            if self._pidfd is None:
                self._code = self._process.exitcode
                return self._code
            if not select.select([self._pidfd], [], [], 0)[0]:
                return None
            self._code = self._reaped(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
            return self._code

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code once it ended; TimeoutExpired if it runs on past ``timeout``."""
        pidfd = self._pidfd
        if pidfd is not None:
            try:
                select.select([pidfd], [], [], timeout)
            except (OSError, ValueError):  # closed meanwhile by a poll that saw it end
                pass
        else:
            self._process.join(timeout)
        code = self.poll()
        if code is None:
            raise subprocess.TimeoutExpired(self._process.name, timeout or 0.0)
        return code

    def kill(self) -> None:
        with self._lock:
            if self._code is not None:
                return
            if self._pidfd is None:
                self._process.kill()
                return
            try:
                signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
            except ProcessLookupError:  # it ended meanwhile
                pass

    def _reaped(self, pidfd: int) -> int:
        """The exit code of a worker that ended: reaped here if it became this process's child, else as its fork
        server said (255 if the server is gone too)."""
        try:
            ended = os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOHANG)
        except ChildProcessError:  # the fork server's child, as it should be
            ended = None
        if ended is not None:
            return ended.si_status if ended.si_code == os.CLD_EXITED else -ended.si_status
        self._process.join(1.0)
        return 255 if self._process.exitcode is None else self._process.exitcode


def _kill_left() -> None:
    """At exit, kill the workers still running: multiprocessing's handler then joins each, and one left running
    would wait for a pipe this process holds open until it exits (a daemon that died without stopping them)."""
    for fork in list(_STARTED):
        if fork.poll() is None:
            fork.kill()
