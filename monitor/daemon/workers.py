"""Every core: ``workers: N`` (or ``auto``: as many as the fleet needs, up to one per core) checking processes under
one daemon.

The daemon keeps everything that has state (the store, the recorder and detectors, the incident writer,
alerts, /metrics and /healthz) and hands the checking to worker processes (:mod:`monitor.checks.worker`)::

    daemon ──its share, live workers──▶ worker 0 … N-1 (rendezvous hashing over the live ones, by the daemon)
           ◀──judged batches, schedule lag── (one pipe each; a reader thread per worker)
    reader threads → Daemon.deliver → the recorder: one writer of results, so SQLite has one writer too

Each worker keeps its targets' detection windows and sends its results as a judged
:class:`~monitor.core.batches.Batch` (:mod:`monitor.incidents.verdicts`): the recorder stores a batch with one
statement and runs the incident logic only for the results whose verdict says something.

So ``monitor_checks_total`` and every per-target series are the recorder's, counted once for all workers, and
``monitor_schedule_lag_seconds`` comes from the workers' own starts. Heartbeat targets stay in the daemon,
where their pings arrive.

The first shares go out once every worker has said it is ready (or ``GATHER`` seconds after the first did),
so that no worker starts with the whole fleet and keeps its memory.

A worker that dies (its pipe closes) is left out of the live workers at once: each of its targets goes to that
target's next-best worker (the others are sent their new shares), due at once, so its share is checked on. /healthz says
``degraded`` meanwhile. It is started again after ``backoff`` seconds (doubling, up to a minute, while it dies
within a minute of starting); when it says it is ready it takes back exactly its share.

A worker that hangs without dying (SIGSTOP, a deadlock, its event loop blocked by CPU or a C call, a swap storm)
keeps its pipe open, so its silence tells instead: each worker says "alive" every second while its check loop
turns (results count as life too), and one that says nothing for ``SILENCE`` seconds while the daemon waits on
it is killed (SIGKILL) and its pipe shut, so from there on it is a death as above, counted with
``reason="hung"``.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import queue
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from monitor.checks.ownership import Ranking
from monitor.config import BacklogConfig, Target
from monitor.core.batches import Batch
from monitor.core.results import Result
from monitor.daemon.forks import Fork
from monitor.incidents.verdicts import Settings
from monitor.metrics import Metrics, bulk

log = logging.getLogger("monitor.daemon")

BACKOFF, MAX_BACKOFF, STEADY = 1.0, 60.0, 60.0  # seconds: first restart delay, its cap, a life that resets it
# checks a second one worker is given under ``workers: auto``: a core checks about 1,400 a second of plain HTTP
# (bench/fleet.py), so a worker has room for slower kinds (TLS, redirects) and the machine for the recorder
PER_WORKER = 1_000
SPREAD = 4  # by demand, a worker holds at most this many times ``concurrency`` checks in flight
# seconds a live worker may be silent: five of its heartbeats (monitor.checks.worker.BEAT), so that a loop held
# for a moment (a pickle of 50,000 targets, a GC pause, a busy machine) is not taken for a hang, while a hung
# worker's share is not left unchecked much longer than a death's (the backoff)
SILENCE = 5.0
STARTUP = 60.0  # seconds a worker may take to say it is ready (imports on a loaded machine)
# seconds the first shares wait, after the first worker is ready, for the others: a worker that started alone
# would take every target and keep the memory of all their windows (270 MB at 50,000) after handing them on
GATHER = 5.0
WATCH_EVERY = 0.25  # seconds between two looks at the workers' silence
GROUP = 8_000  # results recorded together at most: the batches waiting when the recording thread comes round


@dataclass
class Slot:
    """One worker's place: its number, the process in it now (if any), and how often it was started again."""

    number: int
    process: Fork | subprocess.Popen[bytes] | None = None
    conn: Connection | None = None
    live: bool = False
    restarts: int = 0
    started_at: float = 0.0
    backlog: int = 0  # results it held unsent (or sending), as its last batch said
    heard: float | None = None  # when the daemon last heard from it (monotonic); None while it handles a message
    hung: bool = False  # it was killed for its silence
    # one message at a time on its pipe; a send to a hung worker blocks only its sender, until the watch kills it
    sending: threading.Lock = field(default_factory=threading.Lock)


def needed(targets: list[Target], most: int) -> int:
    """How many workers ``workers: auto`` starts for ``targets``: one for each ``PER_WORKER`` checks a second they
    ask for, at least two (one dead or hung, the other checks its share meanwhile), at most ``most``."""
    rate = sum(1.0 / t.interval for t in targets)
    return max(min(2, most), min(most, math.ceil(rate / PER_WORKER)))


class Workers:
    """``count`` checking processes (``by_demand``: at most, as many as :func:`needed` says, more when a reload
    adds targets); batches go to ``deliver``, each start's lag and skipped slots to ``metrics``; ``settings``: what
    their judges need (thresholds, the database their windows are read from)."""

    def __init__(
        self,
        count: int,
        deliver: Callable[[Batch | list[Result]], None],
        *,
        metrics: Metrics,
        concurrency: Callable[[], int],
        backlog: Callable[[], BacklogConfig] = BacklogConfig,
        settings: Callable[[], Settings] = Settings,
        backoff: float = BACKOFF,
        by_demand: bool = False,
    ) -> None:
        self.deliver, self.metrics, self.concurrency, self.backoff = deliver, metrics, concurrency, backoff
        self.limits, self.settings, self.most, self.by_demand = backlog, settings, count, by_demand
        self.slots = [] if by_demand else [Slot(n) for n in range(count)]  # the workers started (or to start)
        self._started = False
        self._ranking = Ranking([], [])
        self._first_ready: float | None = None  # until the first shares go out: when the first worker was ready
        self._gathering = True
        self._gathered = False  # the watch has ended the gathering (once)
        self._lock = threading.Lock()  # one sender at a time, and one view of who is live
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        # batches read from the workers, each with the event its reader waits on until it is recorded
        self._recording: queue.SimpleQueue[tuple[Batch | list[Result], threading.Event]] = queue.SimpleQueue()
        threading.Thread(target=self._record, name="monitor-workers-recorder", daemon=True).start()

    def start(self) -> Workers:
        self._started = True
        for slot in self.slots:
            self._start(slot)
        watch = threading.Thread(target=self._watch, name="monitor-workers-watch", daemon=True)
        self._threads.append(watch)
        watch.start()
        self._observe()
        return self

    def assign(self, targets: list[Target]) -> list[Target]:
        """Share ``targets`` between the workers (by demand: first start more if they need more); returns those the
        daemon checks itself (heartbeats)."""
        checked = [t for t in targets if t.kind != "heartbeat"]
        if self.by_demand:
            self._grow(needed(checked, self.most))
        ranking = Ranking(checked, [s.number for s in self.slots], self._ranking)
        with self._lock:
            self._ranking = ranking
            self._share()
        return [t for t in targets if t.kind == "heartbeat"]

    def _grow(self, wanted: int) -> None:
        """Start workers up to ``wanted``; never fewer than there are (a fleet that shrank keeps them until a
        restart). Each new one takes its share once it says it is ready (on the others' beat, as after a restart)."""
        with self._lock:  # stopping is set under it too: no worker starts after stop() told the others
            if wanted <= len(self.slots) or self._stopping.is_set():
                return
            before, new = len(self.slots), [Slot(n) for n in range(len(self.slots), wanted)]
            self.slots = [*self.slots, *new]  # a new list: other threads go on over the one they read
        if self._started:
            if before:
                log.info("the fleet needs %d workers now (of at most %d): starting %d more", wanted, self.most, len(new))
            for slot in new:
                self._start(slot)

    def _start(self, slot: Slot) -> None:
        thread = threading.Thread(target=self._keep, args=(slot,), name=f"monitor-worker-{slot.number}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def each_concurrency(self) -> int:
        """Checks in flight each worker may hold: ``concurrency``; by demand, ``concurrency`` for each core spread
        over the workers started, so that fewer processes (started for the CPU they need) keep as many checks
        waiting on slow targets as one per core would, up to ``SPREAD`` times ``concurrency`` (each check in flight
        holds a descriptor or two, and a process has its own limit of them: 1,024 by default)."""
        if not self.by_demand or not self.slots:
            return self.concurrency()
        return min(SPREAD * self.concurrency(), math.ceil(self.concurrency() * self.most / len(self.slots)))

    def backlog(self) -> int:
        """Results the live workers hold, not yet recorded (as their last batches said)."""
        return sum(s.backlog for s in self.slots if s.live)

    def states(self) -> list[dict[str, Any]]:
        """Each worker: its number, its process id, whether it checks now, how often it was started again."""
        return [
            {"worker": s.number, "pid": s.process.pid if s.process else None, "live": s.live, "restarts": s.restarts} for s in self.slots
        ]

    def stop(self, grace: float) -> None:
        """Each worker finishes its checks in flight (within ``grace``) and sends them; then it exits."""
        with self._lock:
            self._stopping.set()
        stop = pickle.dumps(("stop", grace))
        for slot in self.slots:  # each from a thread of its own: a hung worker's full pipe holds only its own
            if slot.conn is not None:
                threading.Thread(target=self._send, args=(slot, stop), name=f"monitor-worker-{slot.number}-stop", daemon=True).start()
        deadline = time.monotonic() + grace + 5
        for thread in self._threads:
            thread.join(max(0.1, deadline - time.monotonic()))
        for slot in self.slots:
            if slot.process is not None and slot.process.poll() is None:
                log.warning("worker %d did not stop in time: killed", slot.number)
                slot.process.kill()
                slot.process.wait(5)

    # -- one thread per worker: start it, read its results, start it again when it dies -----------

    def _keep(self, slot: Slot) -> None:
        delay = self.backoff
        while not self._stopping.is_set():
            try:
                self._spawn(slot)
                self._read(slot)
            except Exception:  # a bug here must not leave the share unchecked for good
                log.exception("worker %d: reading its results failed", slot.number)
            code = self._bury(slot)
            if self._stopping.is_set():
                return
            delay = self.backoff if time.monotonic() - slot.started_at > STEADY else min(MAX_BACKOFF, delay * 2)
            log.error(
                "worker %d ended (exit code %s); its targets went to the others; starting it again in %.0f s", slot.number, code, delay
            )
            if self._stopping.wait(delay):
                return
            slot.restarts += 1
            self.metrics.observe_worker_restart("hung" if slot.hung else "died")

    def _spawn(self, slot: Slot) -> None:
        ours, theirs = socket.socketpair()
        level = logging.getLevelName(logging.getLogger("monitor").getEffectiveLevel())
        slot.heard, slot.hung = time.monotonic(), False
        end = Connection(theirs.detach())
        try:
            slot.process = Fork(end, slot.number, str(level))
        finally:
            end.close()  # the worker holds its own copy now
        slot.conn, slot.started_at = Connection(ours.detach()), time.monotonic()

    def _read(self, slot: Slot) -> None:
        """Until its pipe closes: on ready, its targets and a new view of the live workers; then its results."""
        assert slot.conn is not None
        while True:
            slot.heard = time.monotonic()
            try:
                message = slot.conn.recv()
            except (EOFError, OSError):
                return
            slot.heard = None  # recording its results is the daemon's time, not the worker's silence
            if message[0] in ("batch", "results"):
                bulk.observe_starts(self.metrics, message[2])
                slot.backlog = message[3]
                if len(message[1]):
                    self._hand(message[1])
            elif message[0] == "ready":
                with self._lock:  # live first, so that it gets only its own share from the start
                    slot.live, joined = True, not self._gathering  # else it is one of the first: all due at once
                    self._first_ready = self._first_ready or time.monotonic()
                    self._gathering = self._gathering and not all(s.live for s in self.slots)
                    self._share(joined=slot if joined else None)
                log.info("worker %d checks (pid %s)", slot.number, message[1])

    def _hand(self, batch: Batch | list[Result]) -> None:
        """Give a worker's batch to the recording thread and wait until it is recorded: the worker's next batch is
        read only then (backpressure)."""
        done = threading.Event()
        self._recording.put((batch, done))
        done.wait()

    def _record(self) -> None:
        """One thread records for every worker, the batches that came meanwhile together: one transaction and
        one pass over the metrics for them all. With a reader thread recording its own batch, 16 readers queued
        for the recorder's lock and the GIL, and the daemon recorded at 0.7 of a core with cores idle."""
        while True:
            group = [self._recording.get()]
            size = len(group[0][0])
            while size < GROUP:
                try:
                    group.append(self._recording.get_nowait())
                except queue.Empty:
                    break
                size += len(group[-1][0])
            try:
                batches = [batch for batch, _ in group]
                judged = [batch for batch in batches if isinstance(batch, Batch)]
                for each in [Batch.merged(judged)] if len(judged) == len(batches) else batches:
                    self.deliver(each)
            except Exception:  # deliver records or logs; a bug here must not leave the readers waiting
                log.exception("recording %d batches from the workers failed", len(group))
            finally:
                for _, done in group:
                    done.set()

    def _watch(self) -> None:
        """Kill each worker silent past its bound; its reader thread then buries it as a death."""
        while not self._stopping.wait(WATCH_EVERY):
            now = time.monotonic()
            if self._gathering and not self._gathered and self._first_ready is not None and now - self._first_ready > GATHER:
                self._gathered = True  # some never said ready: the live ones share everything, sent from elsewhere
                threading.Thread(target=self._end_gathering, name="monitor-workers-gathered", daemon=True).start()
            for slot in self.slots:
                process, conn, heard = slot.process, slot.conn, slot.heard
                if process is None or conn is None or heard is None or slot.hung or process.poll() is not None:
                    continue  # not started, being buried, handling a message, killed already, or dead
                if now - heard > (SILENCE if slot.live else STARTUP):
                    self._kill_hung(slot, process, conn, now - heard)

    def _end_gathering(self) -> None:
        """Send the first shares (not from the watch, which must stay free to kill a worker that hangs meanwhile)."""
        with self._lock:
            if self._gathering:
                self._gathering = False
                self._share()

    def _kill_hung(self, slot: Slot, process: Fork | subprocess.Popen[bytes], conn: Connection, silent: float) -> None:
        log.error("worker %d (pid %d) silent for %.1f s: hung; killed, its targets go to the others", slot.number, process.pid, silent)
        slot.hung = True
        process.kill()
        try:  # its reader sees the pipe close now, even if the kill takes a while to land (a process in D state)
            with socket.socket(fileno=os.dup(conn.fileno())) as ours:
                ours.shutdown(socket.SHUT_RDWR)
        except OSError:  # its reader closed the pipe in between: it is being buried already
            pass

    def _bury(self, slot: Slot) -> int | None:
        """A worker whose pipe closed: out of the live ones (the others take its share), its process reaped."""
        with self._lock:
            slot.live = False
            if not self._stopping.is_set():  # the others take its share (stopping, they no longer read)
                self._share()
            if slot.conn is not None:
                with slot.sending:  # a send in flight ends first: it fails, the worker being gone
                    slot.conn.close()
                slot.conn = None
        process, code = slot.process, None
        if process is not None:
            try:
                code = process.wait(10)
            except subprocess.TimeoutExpired:  # its pipe closed but it hangs on: it is replaced all the same
                process.kill()
                code = process.wait()
        return code

    def _share(self, joined: Slot | None = None) -> None:
        """Send every live worker its share among the live ones, and who they are (under the lock); nothing while
        the first workers gather. ``joined``: a worker ready after the first shares went out, whose new targets
        the others were checking: each is due at its next slot, on their beat (every other new target, the
        first shares' or a dead worker's, is due at once)."""
        if self._gathering:
            self._observe()
            return
        live = [s.number for s in self.slots if s.live]
        shares = self._ranking.shares(live)
        limits = (self.each_concurrency(), self.limits(), self.settings())
        for slot in self.slots:
            if slot.live:
                handed = slot is joined and len(live) > 1
                self._send(slot, pickle.dumps(("share", shares[slot.number], live, *limits, handed)))
        self._observe()

    def _send(self, slot: Slot, message: bytes) -> None:
        with slot.sending:
            conn = slot.conn
            if conn is None:
                return
            try:
                conn.send_bytes(message)
            except OSError:  # it just died: its reader thread sees the pipe close and buries it
                pass

    def _observe(self) -> None:
        self.metrics.observe_workers(sum(s.live for s in self.slots), len(self.slots), self.states())
