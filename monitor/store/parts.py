"""The store's parts: what each part of the program may read and write, one class each.

A :class:`~monitor.store.Store` is one database (one engine, one lock) that hands out one part per noun,
the way sqlite-utils' ``Database`` hands out tables::

    store.results     ResultsPart     check results, hourly counts, heartbeat pings
    store.incidents   IncidentsPart   incidents, their search, the web UI's audit of them
    store.outbox      OutboxPart      notifications, from queued to delivered
    store.runs        RunsPart        agent runs, steps, remediations
    store.memory      MemoryPart      working memory, its samples, and what an export holds
    store.members     MembersPart     the replicas holding a lease
    store.importance  ImportancePart  recalls of incidents, and what forgetting reads
    store.graph       GraphPart       the fleet's graph and the incidents found through it
    store.vectors     VectorsPart     incidents' vectors for recall by meaning
    store.public      PublicReader    what status pages read
    store.changes     ChangesPart     the log of config changes from the web UI and the admin API

Each part is its reads' class (``IncidentsReader``, ...) and its writes on top (:class:`~monitor.store.base.Writing`):
a reader is handed the reads' class alone, over the store's read-only handle (:mod:`monitor.store.readers`), so mypy
refuses a write and the object has none, nor a transaction, nor the store. What changes
incidents is in no part here: :class:`~monitor.store.writes.IncidentWrites`, made only for the one writer. Who
may call each write is held by ``tests/test_one_writer.py``; the surface of each part is listed in
docs/architecture/store.md, which ``tests/test_store_parts.py`` keeps in step with this module.
"""

from __future__ import annotations

from monitor.store.base import Part
from monitor.store.changes import ChangesPart, ChangesReader
from monitor.store.graph import GraphPart, GraphReader
from monitor.store.importance import ImportancePart, ImportanceReader
from monitor.store.incidents import IncidentsPart, IncidentsReader
from monitor.store.members import MembersPart
from monitor.store.memory import MemoryPart, MemoryReader
from monitor.store.outbox import OutboxPart, OutboxReader
from monitor.store.public import PublicReader
from monitor.store.results import ResultsPart, ResultsReader
from monitor.store.runs import RunsPart, RunsReader
from monitor.store.vectors import VectorsPart, VectorsReader
from monitor.store.writes import IncidentWrites

__all__ = ["PARTS", "IncidentWrites", "members"]

# Each part by the name the store hands it out under: (its reads, the part).
PARTS: dict[str, tuple[type[Part] | None, type[Part]]] = {
    "results": (ResultsReader, ResultsPart),
    "incidents": (IncidentsReader, IncidentsPart),
    "outbox": (OutboxReader, OutboxPart),
    "runs": (RunsReader, RunsPart),
    "memory": (MemoryReader, MemoryPart),
    "members": (None, MembersPart),
    "importance": (ImportanceReader, ImportancePart),
    "graph": (GraphReader, GraphPart),
    "vectors": (VectorsReader, VectorsPart),
    "public": (PublicReader, PublicReader),
    "changes": (ChangesReader, ChangesPart),
}


def members(part: type[Part]) -> frozenset[str]:
    """The public methods and properties of a part, its reads' included (what it stands on, :class:`Part`, is private)."""
    return frozenset(
        name for cls in part.__mro__ if issubclass(cls, Part) and cls is not Part for name in vars(cls) if not name.startswith("_")
    )
