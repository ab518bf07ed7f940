"""When each target is checked: a schedule with a stable phase per target, run by one event loop.

``Schedule`` is bookkeeping only, with an injected clock. Each target is due at the slots of
its own phase, ``phase + k * interval``, where the phase is a stable hash of its name: a fleet is
spread evenly over its intervals, and a restart (or another replica) keeps each target on the
same beat. A target is first due when it is added (at start or by a reload), then at its slots::

    schedule = Schedule(config.targets)
    for taken in schedule.take(limit=8):      # oldest due first
        ...                                   # check taken.target
        schedule.done(taken.target.name, taken.started)

It holds one entry per target and a target is never taken twice at once, so a daemon that falls
behind never queues up a storm of missed runs: it checks what is oldest due, and each ``Taken``
says how late it started (``lag``) and how many of the target's slots passed unchecked
(``skipped``).

``CheckLoop`` runs a schedule: one thread with one asyncio loop and one :class:`~monitor.checks.engine.Checker`,
whose connection pools live as long as the loop (keep-alive where the target allows it). Every
few milliseconds it starts, as one batch, every due target it has a free worker for and the
:class:`~monitor.checks.backlog.Backlog` has room for; finished results go, in bounded batches, to
``deliver`` on a writer thread (the daemon stores each batch in one transaction and runs the
detectors). So checks start only as fast as results are recorded: slots that pass while the backlog
holds checks back count as skipped for that reason (``Taken.held``). ``stop`` lets checks in flight
finish within a grace period and delivers every result that finished.
"""

from __future__ import annotations

import asyncio
import hashlib
import heapq
import logging
import math
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from monitor.checks.backlog import Backlog
from monitor.checks.engine import Checker
from monitor.config import BacklogConfig, Target
from monitor.core.results import Result

log = logging.getLogger("monitor.checks.schedule")

TICK = 0.005  # seconds: the loop wakes at most this often unless a worker frees up while targets wait
IDLE = 0.25  # seconds: the longest the loop sleeps, so a stop or a reload is seen soon
FLUSH_EVERY = 0.2  # seconds between two deliveries of finished results


def phase(name: str, interval: float) -> float:
    """Where in its interval a target is due: a stable hash of its name (the same in every process)."""
    return zlib.crc32(name.encode()) / 2**32 * interval


def replica_of(name: str, replicas: int) -> int:
    """Which of ``replicas`` checks a target: Lamping and Veach's jump consistent hash of its name.

    Each name has one replica; going from n to n + 1 replicas moves 1/(n + 1) of the targets, all of
    them to the new replica, and nothing else moves.
    """
    key = int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big")
    bucket, jump = -1, 0
    while jump < replicas:
        bucket = jump
        key = (key * 2862933555777941757 + 1) & 0xFFFF_FFFF_FFFF_FFFF
        jump = int((bucket + 1) * (1 << 31) / ((key >> 33) + 1))
    return bucket


def shard(targets: Iterable[Target], replicas: int, index: int) -> list[Target]:
    """The targets replica ``index`` of ``replicas`` checks."""
    return list(targets) if replicas == 1 else [t for t in targets if replica_of(t.name, replicas) == index]


def next_slot(after: float, offset: float, interval: float) -> float:
    """The first ``offset + k * interval`` strictly after ``after``."""
    slot = offset + (math.floor((after - offset) / interval) + 1) * interval
    return slot if slot > after else slot + interval


@dataclass
class _Entry:
    target: Target
    due: float
    seq: int = 0  # which heap item is current; older items for this target are stale
    busy: bool = False  # taken, not yet done


@dataclass(frozen=True)
class Taken:
    """A target taken for a check: when it was due, when it started, and the slots it missed (``held``:
    while the backlog of unrecorded results held checks back)."""

    target: Target
    due: float
    started: float
    held: bool = False

    @property
    def lag(self) -> float:
        return max(0.0, self.started - self.due)

    @property
    def skipped(self) -> int:
        """Slots of this target that passed, after the one being served, before this check started."""
        if self.started <= self.due:
            return 0
        return max(0, math.ceil((self.started - self.due) / self.target.interval) - 1)


class Schedule:
    """Each target's next due time, taken oldest due first. Safe to share between threads."""

    def __init__(self, targets: Iterable[Target] = (), *, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._entries: dict[str, _Entry] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._seq = 0
        self._lock = threading.Lock()
        self.set_targets(targets)

    def __len__(self) -> int:
        return len(self._entries)

    def set_targets(self, targets: Iterable[Target], *, on_beat: bool = False) -> None:
        """Follow a new list of targets: new ones are due now (``on_beat``: at their next slot, for targets handed
        over by a checker that kept that beat), removed ones go, changed ones keep their due time unless their
        interval changed (then their next slot of the new interval)."""
        now = self.clock()
        with self._lock:
            wanted = {t.name: t for t in targets}
            for name in self._entries.keys() - wanted.keys():
                del self._entries[name]
            for name, target in wanted.items():
                entry = self._entries.get(name)
                if entry is None:
                    due = next_slot(now, phase(name, target.interval), target.interval) if on_beat else now
                    self._entries[name] = entry = _Entry(target, due)
                    self._push(name, entry)
                    continue
                moved = entry.target.interval != target.interval
                entry.target = target
                if moved and not entry.busy:
                    entry.due = next_slot(now, phase(name, target.interval), target.interval)
                    self._push(name, entry)

    def take(self, limit: int, now: float | None = None) -> list[Taken]:
        """Up to ``limit`` targets due by ``now``, oldest due first; each is busy until :meth:`done`."""
        now = self.clock() if now is None else now
        taken: list[Taken] = []
        with self._lock:
            while self._heap and len(taken) < limit and self._heap[0][0] <= now:
                due, seq, name = heapq.heappop(self._heap)
                entry = self._entries.get(name)
                if entry is None or entry.seq != seq or entry.busy:
                    continue  # removed or rescheduled since it was pushed
                entry.busy = True
                taken.append(Taken(entry.target, due, now))
        return taken

    def done(self, name: str, started: float) -> None:
        """A check that started at ``started`` ended: the target is next due at its first slot after that."""
        with self._lock:
            entry = self._entries.get(name)
            if entry is None:
                return  # removed by a reload while it was checked
            entry.busy = False
            interval = entry.target.interval
            entry.due = next_slot(started, phase(name, interval), interval)
            self._push(name, entry)

    def next_due(self) -> float | None:
        """When the next target is due (None: nothing to wait for)."""
        with self._lock:
            while self._heap:
                due, seq, name = self._heap[0]
                entry = self._entries.get(name)
                if entry is not None and entry.seq == seq and not entry.busy:
                    return due
                heapq.heappop(self._heap)
            return None

    def due_times(self) -> dict[str, float]:
        """Each target's current due time, by name (a busy target: the slot its check serves)."""
        with self._lock:
            return {name: entry.due for name, entry in self._entries.items()}

    def _push(self, name: str, entry: _Entry) -> None:
        self._seq += 1
        entry.seq = self._seq
        heapq.heappush(self._heap, (entry.due, self._seq, name))
        if len(self._heap) > 4 * len(self._entries) + 64:  # stale items from many reloads
            self._heap = [(e.due, e.seq, n) for n, e in self._entries.items() if not e.busy]
            heapq.heapify(self._heap)


class CheckLoop:
    """Checks a :class:`Schedule`'s due targets on one event loop; hands results to ``deliver`` in batches.

    ``concurrency`` (a number, or a function read at every tick so a reload takes effect) bounds the
    checks in flight; ``backlog`` (the limits, or a function returning them) bounds the results not yet
    recorded. ``observe(taken)`` is called for each check started (the daemon exports its lag). A check
    starts only while ``may_check()`` is true (a replica whose lease lapsed while it was frozen waits).
    """

    def __init__(
        self,
        schedule: Schedule,
        deliver: Callable[[list[Result]], None],
        *,
        concurrency: int | Callable[[], int] = 64,
        observe: Callable[[Taken], None] | None = None,
        checker: Callable[[], Checker] = Checker,
        flush_every: float = FLUSH_EVERY,
        backlog: BacklogConfig | Callable[[], BacklogConfig] | None = None,
        may_check: Callable[[], bool] = lambda: True,
    ) -> None:
        self.schedule, self.deliver, self.observe, self.may_check = schedule, deliver, observe, may_check
        self._gated_at = -math.inf  # when may_check last said no
        self._concurrency = concurrency if callable(concurrency) else (lambda: concurrency)
        self._new_checker, self.flush_every = checker, flush_every
        limits = backlog or BacklogConfig()
        self.backlog = Backlog(limits if callable(limits) else (lambda: limits))
        self._held_at = -math.inf  # when the backlog last held back a check that was due
        self.turned = -math.inf  # when the loop last went round (monotonic): a worker's heartbeat says so
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Future[None] | None = None
        self._stopping = False
        self._grace = 0.0
        self._written = threading.Event()
        self._threads: list[threading.Thread] = []
        self._free: list[int] = []
        self._workers = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> CheckLoop:
        self._threads = [
            threading.Thread(target=self._run, name="monitor-checks", daemon=True),
            threading.Thread(target=self._write, name="monitor-writer", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        return self

    def wake(self) -> None:
        """Look at the schedule now (it changed)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._set_wake)
            except RuntimeError:  # the loop closed in between
                pass

    def stop(self, grace: float = 8.0) -> None:
        """Start nothing more; let checks in flight end within ``grace`` seconds; deliver every result."""
        self._grace, self._stopping = grace, True
        self.wake()
        checks, writer = self._threads or (None, None)
        if checks is not None:
            checks.join(grace + 5)
        self._written.set()
        if writer is not None:
            writer.join()

    def in_flight(self) -> int:
        return len(self._tasks)

    # -- the loop thread ------------------------------------------------------

    def _run(self) -> None:
        try:
            asyncio.run(self._dispatch())
        except Exception:  # a bug; the daemon's healthz goes stale and says so
            log.exception("the check loop stopped")

    async def _dispatch(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        async with self._new_checker() as checker:
            while not self._stopping:
                self.turned = time.monotonic()
                self._resize()
                now = self.schedule.clock()
                for taken in self._take(now):
                    task = loop.create_task(self._check(checker, taken, self._free.pop()))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
                    if self.observe is not None:
                        self.observe(taken)
                await self._sleep(loop, now)
            await self._finish_in_flight()

    def _take(self, now: float) -> list[Taken]:
        """The due targets there are free workers and backlog room for; each marked ``held`` when its
        missed slots passed while the backlog held checks back."""
        if not self._free:
            return []
        if not self.may_check():
            self._gated_at = now
            return []
        room = min(len(self._free), self.backlog.room())
        if room < len(self._free):
            due = self.schedule.next_due()
            if due is not None and due <= now:
                self._held_at = now
        taken = self.schedule.take(room, now) if room else []
        self.backlog.started(len(taken))
        return [replace(t, held=True) if t.skipped and t.due <= self._held_at else t for t in taken]

    async def _sleep(self, loop: asyncio.AbstractEventLoop, now: float) -> None:
        due = self.schedule.next_due()
        # held back: the writer wakes the loop when it has recorded a batch
        delay = IDLE if due is None or now in (self._held_at, self._gated_at) else min(IDLE, max(TICK, due - now))
        self._wake = loop.create_future()
        timer = loop.call_later(delay, self._set_wake)
        try:
            await self._wake
        finally:
            timer.cancel()
            self._wake = None

    def _set_wake(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)

    def _resize(self) -> None:
        """Worker numbers (each maps to a connection pool) up to the current concurrency."""
        wanted = max(1, self._concurrency())
        if wanted > self._workers:
            self._free.extend(range(self._workers, wanted))
            self._workers = wanted
        elif wanted < self._workers:
            self._free = [w for w in self._free if w < wanted]
            self._workers = wanted

    async def _check(self, checker: Checker, taken: Taken, worker: int) -> None:
        result = None
        try:
            result = await checker.check(taken.target, worker=worker)
        finally:
            if result is None:
                self.backlog.dropped()
            else:
                self.backlog.finished(result)
            self.schedule.done(taken.target.name, self._served(taken, result))
            if worker < self._workers:
                self._free.append(worker)
            due = self.schedule.next_due()
            if due is not None and due <= self.schedule.clock() and self.backlog.room():  # targets wait: refill
                self._set_wake()

    def _served(self, taken: Taken, result: Result | None) -> float:
        """When the check counts as begun: the time its result is recorded at, which a busy loop may put past a slot
        edge that ``taken.started`` was before; that slot is the one served (bounded by now, for a checker on
        another clock)."""
        if result is None:
            return taken.started
        return min(max(taken.started, result.checked_at), self.schedule.clock())

    async def _finish_in_flight(self) -> None:
        if not self._tasks:
            return
        _, late = await asyncio.wait(set(self._tasks), timeout=self._grace)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        if late:
            log.warning("%d checks still in flight at stop were cancelled", len(late))

    # -- the writer thread ----------------------------------------------------

    def _write(self) -> None:
        while not self._written.is_set():
            self.backlog.wait_batch(self.flush_every)
            self._flush()
        self._flush()

    def _flush(self) -> None:
        """Deliver every waiting result, a bounded batch at a time, waking the loop after each (room freed)."""
        while batch := self.backlog.take():
            try:
                self.deliver(batch)
            except Exception:  # deliver logs and keeps what it can; this is for a bug in it
                log.exception("delivering %d results failed", len(batch))
            finally:
                self.backlog.recorded(len(batch))
                self.wake()
