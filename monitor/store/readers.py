"""The read-only parts a reader is handed: the web UI, status pages, MCP and the review read through these.

Each part's reads are a class of their own (``IncidentsReader``, ...), which the part itself extends with its
writes (``IncidentsPart``); a reader gets the reads' class over the store's read-only handle
(:class:`~monitor.store.base.Reads`), and nothing else: a write is not there (``AttributeError``, and mypy refuses the
call), nor a transaction, nor the store, the way a SQLite connection opened with ``mode=ro`` has no way to write.
:class:`ReadOnly` hands them out under the store's own names::

    reader = store.read_only()
    reader.incidents.open_incidents()     # IncidentsReader
    reader.incidents.close_incident(1)    # AttributeError: no such attribute (mypy: "IncidentsReader" has no attribute)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from monitor.store.base import Reads
from monitor.store.changes import ChangesReader
from monitor.store.graph import GraphReader
from monitor.store.importance import ImportanceReader
from monitor.store.incidents import IncidentsReader
from monitor.store.memory import MemoryReader
from monitor.store.outbox import OutboxReader
from monitor.store.public import PublicReader
from monitor.store.results import ResultsReader
from monitor.store.runs import RunsReader
from monitor.store.vectors import VectorsReader

__all__ = ["ReadOnly", "StoreView"]


class ReadOnly:
    """A store's parts as readers over its read-only handle: every read, no write; and the store's clock and size."""

    def __init__(self, db: Reads) -> None:
        self.results = ResultsReader(db)
        self.incidents = IncidentsReader(db)
        self.outbox = OutboxReader(db)
        self.runs = RunsReader(db)
        self.memory = MemoryReader(db)
        self.importance = ImportanceReader(db)
        self.graph = GraphReader(db)
        self.vectors = VectorsReader(db)
        self.public = PublicReader(db)
        self.changes = ChangesReader(db)
        self.size_bytes = db.size_bytes
        self._db = db

    @property
    def clock(self) -> Callable[[], float]:
        return self._db.clock


class StoreView(Protocol):
    """What a reader is typed by (pages, status pages, the review, recall): each part as its reads, the clock and
    the size. :class:`ReadOnly` is one; a :class:`~monitor.store.Store` is one too, whose parts' writes a reader
    typed so cannot name."""

    @property
    def results(self) -> ResultsReader: ...
    @property
    def incidents(self) -> IncidentsReader: ...
    @property
    def outbox(self) -> OutboxReader: ...
    @property
    def runs(self) -> RunsReader: ...
    @property
    def memory(self) -> MemoryReader: ...
    @property
    def importance(self) -> ImportanceReader: ...
    @property
    def graph(self) -> GraphReader: ...
    @property
    def vectors(self) -> VectorsReader: ...
    @property
    def public(self) -> PublicReader: ...
    @property
    def changes(self) -> ChangesReader: ...
    @property
    def clock(self) -> Callable[[], float]: ...
    def size_bytes(self) -> int: ...
