"""One checking process of ``workers: N``: its share of the targets on its own event loop, results sent up a pipe.

The daemon (:mod:`monitor.daemon.workers`) forks it from its fork server (:mod:`monitor.checks.preload`) and
runs :func:`serve` on one end of a socket pair. It never opens the store: every result goes to the daemon, which records it (one
writer, whatever the database). Over the pipe, as pickles::

    daemon → worker   ("share", [Target, ...], [0, 1, 3], concurrency, backlog, settings, handed)   its own share
                                                of the targets, the live workers (a dead one is left out), the
                                                limits of its own BacklogConfig, its judge's settings, and whether
                                                its new targets were being checked by live workers (then each is
                                                due at its next slot, on their beat; else at once)
                      ("stop", grace)                           finish what is in flight, send it, exit
    worker → daemon   ("ready", pid)                            listening; send it targets
                      ("alive",)                                every ``BEAT`` seconds while its check loop turns
                      ("results", [Result, ...], [(lag, skipped, held), ...], backlog)   finished checks, the
                                                starts since, and how many results it holds unsent
                      ("batch", Batch, [(lag, skipped, held), ...], backlog)    the same, judged, from a worker
                                                with a judge (:mod:`monitor.incidents.verdicts`)

Its :class:`CheckLoop` has its own backlog of unsent results: a send waits while the daemon records the
previous batch (it reads the next only then), so the worker starts checks only as fast as the daemon records
them, with no more than a socket's buffer between the two.

Its share is the targets whose best-scoring live worker it is (rendezvous hashing,
:mod:`monitor.checks.ownership`, as between replicas), worked out by the daemon, which sends each worker only
its own: a worker holds its share, not the fleet (50,000 targets weigh 140 MB in each process that holds them).
When a worker dies, each of its targets goes to that target's next-best worker and nothing else moves; when it
is back, it takes back exactly its own. It ignores
SIGINT and SIGTERM (the daemon stops it through the pipe, after its last results) and exits when the pipe
closes, so it never outlives a daemon that was killed. A share taken over from a dead worker is due at once; a
share taken back from live ones (this worker just started, the others checked its targets meanwhile) is due at
each target's next slot, so no slot is checked twice around the hand-back.

Its heartbeat comes from a thread of its own, but only while the check loop has gone round since the last one:
a slow check does not hold the loop (it awaits), so a busy worker beats on; a loop blocked by CPU or a C call,
a deadlock or a SIGSTOP silence it, and the daemon kills a worker silent past its bound (``SILENCE``).
"""

from __future__ import annotations

import logging
import math
import os
import signal
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any, Protocol

from monitor.checks.schedule import CheckLoop, Schedule, Taken
from monitor.config import BacklogConfig, Target
from monitor.core.batches import Batch
from monitor.core.results import Result

log = logging.getLogger("monitor.checks.worker")

BEAT = 1.0  # seconds between two heartbeats; the daemon's bound on silence is five of them


class Judge(Protocol):
    """What turns a batch of results into what is sent up (:class:`monitor.incidents.verdicts.Judge`)."""

    def follow(self, targets: list[Target], settings: object) -> None: ...

    def __call__(self, results: list[Result]) -> Batch: ...


class Worker:
    """The checking side of one worker: a :class:`Schedule` of its share and the :class:`CheckLoop` that runs it;
    with a ``judge``, its batches go up judged."""

    def __init__(self, conn: Connection, number: int, *, heartbeat: float = BEAT, judge: Judge | None = None) -> None:
        self.conn, self.number, self.heartbeat, self.judge = conn, number, heartbeat, judge
        self.settings: object = None  # the judge's, as the daemon sent them
        self.targets: list[Target] = []  # its share: nothing until the daemon says it is live
        self.members: list[int] = []
        self.concurrency, self.limits = 64, BacklogConfig()
        self.schedule = Schedule()
        self._starts: list[tuple[float, int, bool]] = []
        self._lock = threading.Lock()
        self._sending = threading.Lock()  # the writer thread's results and the heartbeat share the pipe
        self._stopped = threading.Event()
        self.loop = CheckLoop(
            self.schedule, self.send, concurrency=lambda: self.concurrency, observe=self.started, backlog=lambda: self.limits
        )

    def started(self, taken: Taken) -> None:
        with self._lock:
            self._starts.append((taken.lag, taken.skipped, taken.held))

    def send(self, results: list[Result]) -> None:
        """Finished checks, with the starts seen since the last batch, to the daemon (from the loop's writer thread)."""
        with self._lock:
            starts, self._starts = self._starts, []
        message = ("results", results) if self.judge is None else ("batch", self.judge(results))
        with self._sending:
            self.conn.send((*message, starts, len(self.loop.backlog)))

    def beat(self) -> None:
        """Every ``heartbeat`` seconds, "alive" to the daemon if the check loop went round since the last one."""
        seen = -math.inf
        while not self._stopped.wait(self.heartbeat):
            turned = self.loop.turned
            if turned <= seen:
                continue  # the loop is stuck: stay silent, so that the daemon sees it past its bound
            seen = turned
            with self._sending:
                try:
                    self.conn.send(("alive",))
                except OSError:  # the daemon went away: the main thread sees it too
                    return

    def own(self) -> list[Target]:
        """This worker's share of the targets among the live workers (none before it is told it is one)."""
        return self.targets if self.number in self.members else []

    def follow(self, message: Sequence[Any]) -> bool:
        """Act on one message from the daemon; False when it says stop."""
        kind = message[0]
        if kind == "stop":
            self._stopped.set()  # its last results may take a while: the daemon does not watch a stopping worker
            self.loop.stop(float(message[1]))
            return False
        handed = False
        if kind == "share":
            self.targets, self.members = list(message[1]), sorted(message[2])
            self.concurrency, self.limits, self.settings = int(message[3]), message[4], message[5]
            handed = bool(message[6]) if len(message) > 6 else False
        own = self.own()
        if self.judge is not None:
            self.judge.follow(own, self.settings)
        self.schedule.set_targets(own, on_beat=handed)
        self.loop.wake()
        return True

    def run(self) -> None:
        """Check until the daemon says stop, or goes away (then nothing more can be delivered)."""
        self.loop.start()
        with self._sending:
            self.conn.send(("ready", os.getpid()))
        threading.Thread(target=self.beat, name="monitor-heartbeat", daemon=True).start()
        while True:
            try:
                message = self.conn.recv()
            except (EOFError, OSError):
                log.warning("worker %d: the daemon went away; stopping", self.number)
                os._exit(1)  # the loop's threads would only try to send to nobody
            if not self.follow(message):
                return


def serve(conn: Connection, number: int, level: str, *, judge: Judge | None = None) -> None:
    """Be worker ``number`` on ``conn`` until the daemon says stop or goes away (logging at ``level``)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    logging.basicConfig(level=level, format=f"%(asctime)s %(levelname)s %(name)s[worker {number}]: %(message)s")
    try:
        Worker(conn, number, judge=judge).run()
    finally:
        conn.close()
