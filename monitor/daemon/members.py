"""Which targets this daemon checks: the static split of ``replicas``, or, with ``lease``, its share of the
live members, kept by a lease in the shared database.

With ``lease: 15s`` every replica renews its row in ``members`` every lease/3 (by the database's clock,
:mod:`monitor.store.members`) and reads back who is live. Each target belongs to its best-scoring live
member (rendezvous hashing, :mod:`monitor.checks.ownership`). A replica that stops renewing (killed, cut
off) is dropped by the others the moment its lease ends, as they read it: they look again at the
earliest expiry they know of, so its share is checked again within the lease plus one interval. A
replica that stops cleanly ends its lease at once. One that starts (or returns) announces itself, waits
one renewal period so that every other replica has seen it and let its share go, then checks: a target
is checked by two replicas for no longer than a renewal's round trip around a hand-over. A replica frozen
past its lease (SIGSTOP, a paused VM) returns the same way: on waking it checks nothing (:meth:`Ownership.may_check`)
until it has renewed and waited that period, though its check loop wakes before its renewal does.

At each look, a replica also takes over the undelivered notifications of every replica that holds no live
lease (:meth:`monitor.store.outbox.Outbox.take_over_notifications`): killed with a webhook down, its alerts
would otherwise wait in its outbox until it returned. One live replica wins them, keeping their keys, attempts
and next attempts; a replica that returns delivers only what it queues from then on (every outbox query names
its replica, and what it held in memory died with it). One risk stays: a notification being sent at the kill
(or by a replica frozen past its lease, mid-send) may be sent again by the new owner: at-least-once then.

When the database cannot be reached, the last view stands (results wait in memory anyway); before any
view, the static split of ``replicas`` does.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from monitor.checks.ownership import Member, share
from monitor.checks.schedule import shard
from monitor.config import Config, Target
from monitor.metrics import Metrics
from monitor.store import Store
from monitor.store.engines import describe

log = logging.getLogger("monitor.daemon")

SOON = 0.05  # seconds after a lease's end before it is looked at again: it has ended by then


class Ownership:
    """This replica's targets (:meth:`own`); with ``lease``, :meth:`start` holds its lease and calls
    ``on_change`` from its own thread each time the live members change."""

    def __init__(
        self,
        config: Callable[[], Config],
        store: Store | None = None,
        *,
        on_change: Callable[[], None] = lambda: None,
        metrics: Metrics | None = None,
    ) -> None:
        self.config, self.on_change, self.metrics = config, on_change, metrics
        self.store = store.reopen() if store is not None and config().lease is not None else None
        self.members: tuple[Member, ...] = ()
        self._next = 0.0  # seconds from the last look until the next
        self._since = math.inf  # when (monotonic) the last look ended; the next is under way since _began while _looking
        self._looking, self._began = False, 0.0
        self._renewed = -math.inf  # when the last renewal that succeeded began: the lease holds a lease from it
        self._checking_from = 0.0  # a returning replica checks from then (one renewal after its return)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cache: tuple[object, object, tuple[list[Target], set[str]]] = (None, None, ([], set()))

    def own(self, config: Config) -> list[Target]:
        """The targets of ``config`` this replica checks now (computed again only when they or the members change)."""
        return self._share(config)[0]

    def names(self, config: Config) -> set[str]:
        return self._share(config)[1]

    def _share(self, config: Config) -> tuple[list[Target], set[str]]:
        members = self.members if config.lease is not None else ()
        key = (config.replicas, config.replica_index, members)
        cached_for, cached_key, found = self._cache
        if cached_for is not config.targets or cached_key != key:
            index = config.replica_index or 0
            # before the first look at the members (or without a lease): the static split of ``replicas``
            active = [t for t in config.targets if not t.paused]  # a paused target is checked by no replica
            targets = share(active, members, index) if members else shard(active, config.replicas, index)
            found = (targets, {t.name for t in targets})
            self._cache = (config.targets, key, found)
        return found

    def may_check(self) -> bool:
        """Whether this replica may check now: always without a lease; with one, not while it waits after a
        return, nor when its next look is overdue by a whole lease and no look begun on time is under way (the
        process was frozen, and its share has moved: the look that wakes with it decides). A database that cannot
        be reached is no reason: looks go on failing, or hang, on time, and the last view stands."""
        if self.store is None:
            return True
        now = time.monotonic()
        lease = self.config().lease or 3.0
        on_time = self._since + lease  # a look begun later than this: the process was frozen past its lease
        return now >= self._checking_from and (now <= on_time or (self._looking and self._began <= on_time))

    def start(self) -> None:
        """Announce this replica, wait one renewal so the others let its share go, then keep the lease."""
        if self.store is None:
            return
        self._look()
        self._stop.wait(self._period())
        self._look()
        self._thread = threading.Thread(target=self._run, name="monitor-members", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the lease now, so that the others take this replica's share at their next look."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        if self.store is not None and self._thread is not None:
            try:
                self.store.members.leave_member()
            except self.store.errors as exc:
                log.warning("the lease was not ended (the others take over when it runs out): %s", describe(exc))
        if self.store is not None:
            self.store.close()
            self.store = None

    def _period(self) -> float:
        return (self.config().lease or 3.0) / 3

    def _run(self) -> None:
        while True:
            self._since = time.monotonic()
            if self._stop.wait(self._next):
                return
            try:
                if self._look():
                    self.on_change()
            except Exception:  # a bug: the last view stands, and the next look tries again
                log.exception("following the live members failed")
                self._next = self._period()

    def _look(self) -> bool:
        """Renew the lease and read the live members; True when they changed."""
        config = self.config()
        assert self.store is not None
        began = self._began = time.monotonic()
        self._looking = True
        try:
            leases = self.store.members.renew_member(config.lease or 3.0, config.location or "")
        except self.store.errors as exc:
            log.warning("the lease was not renewed (the last view of the members stands): %s", describe(exc))
            self._next = self._period()
            return False
        finally:
            self._looking = False
        returning = began - self._renewed > (config.lease or 3.0)  # its lease had ended: the others took its share
        self._renewed = began
        if returning:  # as at start: checks only once every other replica has seen it and let its share go
            self._checking_from = began + self._period()
        self._take_over()
        members = tuple(Member(lease.id, lease.location) for lease in leases)
        others = [lease.remaining for lease in leases if lease.id != config.replica_index]
        self._next = max(SOON, min([self._period(), *(remaining + SOON for remaining in others)]))
        changed, self.members = members != self.members, members
        if changed:
            log.info("live members: %s", ", ".join(f"{m.id}{f' ({m.location})' if m.location else ''}" for m in members))
        return changed

    def _take_over(self) -> None:
        """Deliver the notifications of replicas whose lease ended (their outbox would wait for them otherwise)."""
        assert self.store is not None
        try:
            taken = self.store.outbox.take_over_notifications()
        except self.store.errors as exc:
            log.warning(
                "the notifications of replicas whose lease ended were not taken over (the next look tries again): %s", describe(exc)
            )
            return
        for replica, count in taken.items():
            log.warning("took over %d undelivered notifications of replica %d (its lease ended): delivered from here", count, replica)
            if self.metrics is not None:
                self.metrics.observe_taken_over(replica, count)
