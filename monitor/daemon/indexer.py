"""The daemon's embedding of incident memories: a thread of its own gives each incident written its vector,
away from the checks, so that recall by meaning finds it without an investigation embedding it first::

    incident writer ──Event──▶ Indexer.wake ─┐
    housekeeping (each minute) ──────────────┴─▶ (a second later) index_incidents, BATCH at a time, claimed

The embedder (``memory.embedder``) is loaded on first use, once per process: the agent's recall shares it.
With ``none`` nothing runs. The thread has a connection of its own, so a batch being embedded never holds
the store's lock; each claim and each batch of vectors is one short transaction. It runs at a lower
priority (``NICE``): embedding took CPU from the check loop on a loaded machine, and the checks' measured
latency rose with it (latency drift incidents on healthy targets). A failing embedder or
database is logged once a minute at most and tried again a minute later; the daemon goes on.

Replicas sharing a PostgreSQL database claim what they embed (``claim_incidents_to_embed``): a claim lasts
``LEASE`` seconds, so a replica that stops mid-way leaves its incidents to the others, and no incident is
embedded twice by two replicas at once. Claims rather than each replica embedding its own targets' incidents:
incidents of targets no replica checks (imported, removed from the config, opened by ``monitor investigate``)
are embedded too, and the work is spread over whichever replicas are up.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable

from monitor.config import Config
from monitor.memory.embedding import Embedder
from monitor.memory.recall import shared_embedder
from monitor.memory.search import index_incidents
from monitor.metrics import Metrics
from monitor.store import Store
from monitor.store.engines import describe

log = logging.getLogger("monitor.daemon")

SETTLE = 1.0  # seconds from a wake-up to the pass: a burst of incidents is embedded in full batches
BATCH = 8  # incidents per claim and per call to the model: about half a second with the builtin model
LEASE = 60.0  # seconds a claim holds against other replicas
NICE = 10  # the thread's niceness (Linux): on a busy machine the checks get the CPU first
RETRY = 60.0  # seconds between a failure and the next try, and between two log lines about failures

Loader = Callable[[str, str | None], Embedder | None]


class Indexer:
    """Embeds incidents in the background: :meth:`start`, :meth:`wake` on each change, :meth:`stop`."""

    def __init__(
        self,
        store: Store,
        config: Callable[[], Config],
        *,
        metrics: Metrics | None = None,
        load: Loader = shared_embedder,
        clock: Callable[[], float] = time.monotonic,
        retry: float = RETRY,
    ) -> None:
        self.store, self.config, self.metrics, self.load, self.clock = store, config, metrics, load, clock
        self.retry = retry  # seconds between a failure and the next try, and between two log lines about failures
        self.embedded = 0  # incidents embedded since start
        self.passes = 0  # passes over what waits, done or failed
        self.thread: threading.Thread | None = None
        self.running = False  # the daemon started it: a reload that configures an embedder starts the thread
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._failed_at: float | None = None  # when the last pass failed; None: it did not
        self._said_at: float | None = None  # when the log last said so

    @property
    def enabled(self) -> bool:
        return self.config().memory.embedder != "none"

    def start(self) -> None:
        """Start the thread, when an embedder is configured (a reload may configure one later: :meth:`apply_config`)."""
        self.running = True
        if self.thread is None and self.enabled and not self._stopping.is_set():
            self.thread = threading.Thread(target=self._work, name="monitor-embed", daemon=True)
            self.thread.start()

    def apply_config(self, config: Config) -> None:
        """After a reload: a newly configured embedder starts the thread (once the daemon runs), a changed one
        embeds again what it has not embedded yet."""
        if self.running:
            self.start()
            self.wake()

    def wake(self, *_: object) -> None:
        """Embed what changed soon (an incident event, housekeeping); cheap, never blocks."""
        self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        """No new batch; the one being embedded ends (at most one call to the model), then the thread."""
        self._stopping.set()
        self._wake.set()
        if self.thread is not None:
            self.thread.join(timeout)

    def _work(self) -> None:
        with contextlib.suppress(AttributeError, OSError):  # a thread's own niceness: Linux
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)
        store: Store | None = None  # its own connection and lock: the check path never waits on a batch
        try:
            while not self._stopping.is_set():
                self._wake.wait(self._retry_in())
                if self._stopping.wait(SETTLE):
                    break
                self._wake.clear()
                if self._failed_at is None or self._retry_in() == 0:
                    store = store or self._reopen()
                    if store is not None:
                        self.index(store)
        finally:
            if store is not None:
                store.close()

    def _reopen(self) -> Store | None:
        """The indexer's own connection; None (said, and tried again later) while the database is away."""
        try:
            return self.store.reopen()
        except self.store.errors as exc:
            self._failed(exc)
            return None

    def _retry_in(self) -> float | None:
        """Seconds until a failed pass may be tried again; None when the last pass did not fail."""
        if self._failed_at is None:
            return None
        return max(0.0, self._failed_at + self.retry - self.clock())

    def index(self, store: Store) -> int:
        """Embed what waits, ``BATCH`` at a time, until nothing does (or only what another replica
        claimed); how many. Never raises: a failure is logged (once a minute at most) and tried again."""
        config = self.config()
        done = 0
        try:
            embedder = self.load(config.memory.embedder, config.model.api_base)
            if embedder is None:
                return 0
            pending = store.vectors.embed_pending(embedder.name)
            self._observe(0, pending)
            while pending and not self._stopping.is_set():
                embedded = index_incidents(store, embedder, limit=BATCH, batch=BATCH, claim=LEASE)
                before, pending = pending, store.vectors.embed_pending(embedder.name)
                done += embedded
                self._observe(embedded, pending)
                if not embedded and pending >= before:  # what is left, another replica holds
                    break
            self._failed_at = None
        except Exception as exc:
            self._failed(exc)
        self.embedded += done
        self.passes += 1
        return done

    def _observe(self, embedded: int, pending: int) -> None:
        if self.metrics is not None:
            self.metrics.observe_embedding(embedded, pending)

    def _failed(self, exc: BaseException) -> None:
        now = self._failed_at = self.clock()
        if self._said_at is not None and now - self._said_at < self.retry:
            return
        self._said_at = now
        log.warning(
            "incident memories not embedded, tried again in %.0f s: %s: %s",
            self.retry,
            type(exc).__name__,
            describe(exc),
            exc_info=not isinstance(exc, (RuntimeError, *self.store.errors)),
        )
