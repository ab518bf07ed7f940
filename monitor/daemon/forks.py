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
import multiprocessing
import multiprocessing.util  # its exit handler, which joins children, registered before ours (ours runs first)
import subprocess
import weakref
from multiprocessing.connection import Connection

from monitor.incidents import verdicts

# what a worker imports, the store too (its judge reads windows from it); monitor.checks.preload last: it freezes
PRELOAD = ["monitor.incidents.verdicts", "monitor.store", "monitor.checks.preload"]
SERVER = multiprocessing.get_context("forkserver")
SERVER.set_forkserver_preload(PRELOAD)
_STARTED: weakref.WeakSet[Fork] = weakref.WeakSet()


class Fork:
    """Worker ``number`` forked on its end of the pipe (``conn``, which this process may close once it started)."""

    def __init__(self, conn: Connection, number: int, level: str) -> None:
        self._process = SERVER.Process(target=verdicts.serve, args=(conn, number, level), name=f"monitor-worker-{number}")
        self._process.start()
        self.pid: int = self._process.pid or 0
        _STARTED.add(self)

    def poll(self) -> int | None:
        """Its exit code (minus the signal that killed it), or None while it runs."""
        return self._process.exitcode

    def wait(self, timeout: float | None = None) -> int:
        """Its exit code once it ended (reaped by the fork server); TimeoutExpired if it runs on past ``timeout``."""
        self._process.join(timeout)
        code = self._process.exitcode
        if code is None:
            raise subprocess.TimeoutExpired(self._process.name, timeout or 0.0)
        return code

    def kill(self) -> None:
        self._process.kill()


@atexit.register  # after multiprocessing's own exit handler is registered, so it runs before that one
def _kill_left() -> None:
    """At exit, kill the workers still running: multiprocessing's handler then joins each, and one left running
    would wait for a pipe this process holds open until it exits (a daemon that died without stopping them)."""
    for fork in list(_STARTED):
        if fork.poll() is None:
            fork.kill()
