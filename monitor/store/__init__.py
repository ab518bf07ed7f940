"""Every SQL statement of the project: results, incidents, agent runs, memory, audit, outbox.

A store is one SQLite file in WAL mode (the default), or one PostgreSQL database that several replicas
share (:mod:`monitor.store.engines`). Each write is one transaction, so a crash never leaves half a
record. Migrations run on open (:mod:`monitor.store.schema`), so a database upgrades in place. The store
is safe to share between threads (one connection, one lock); other processes may use the same database
at the same time.

One class, :class:`Store`: one engine, handing out one part per noun (``store.incidents``, ``store.results``,
...; :mod:`monitor.store.parts` types each, with a read-only view for readers). The modules behind them:

    base.py       the connection, transactions, reads, migrations
    results.py    check results, hourly counts, heartbeat pings
    incidents.py  incidents and their full-text search (SQLite's FTS5, PostgreSQL's tsvector)
    outbox.py     notifications, from queued to delivered
    runs.py       agent runs, steps, diagnoses, remediations
    memory.py     working memory, its size over time, export and import
    members.py    the replicas holding a lease (failover), by the database's clock
    importance.py recalls of incidents, and the summary of the incidents forgetting removed
    changes.py    the log of config changes made from the web UI and the admin API
    public.py     what status pages read: uptime by day, incidents as the public sees them, public notes
    graph.py      the fleet's graph: what targets depend on, and incidents found through it
    vectors.py    incidents' vectors for recall by meaning, and their search
    engines.py    SQLite and PostgreSQL: connections, and where their SQL differs (postgres.py: PostgreSQL's engine)
    schema.py     the tables, and SQLite's migrations (schema_pg.py: PostgreSQL's)
    words.py      which words of a query full-text search looks for, and how many incidents hold each
"""

from __future__ import annotations

from functools import cached_property

from monitor.store.base import Base
from monitor.store.changes import Changes
from monitor.store.engines import BUSY_TIMEOUT, database_errors, is_url
from monitor.store.graph import Graph
from monitor.store.importance import Importance
from monitor.store.incidents import Incidents
from monitor.store.members import Members
from monitor.store.memory import Memory
from monitor.store.outbox import Notification, Notifier
from monitor.store.parts import (
    ChangesPart,
    GraphPart,
    ImportancePart,
    IncidentsPart,
    MembersPart,
    MemoryPart,
    OutboxPart,
    PublicPart,
    ResultsPart,
    RunsPart,
    StoreView,
    VectorsPart,
    part,
)
from monitor.store.public import Public
from monitor.store.readers import ReadOnly
from monitor.store.results import Results, result_row
from monitor.store.runs import Runs
from monitor.store.schema import INCIDENT_TEXT, SCHEMA_VERSION
from monitor.store.vectors import Embedded, IncidentVectors
from monitor.store.words import fts_query, tsquery

__all__ = [
    "BUSY_TIMEOUT",
    "INCIDENT_TEXT",
    "SCHEMA_VERSION",
    "Base",
    "Embedded",
    "Notification",
    "Notifier",
    "ReadOnly",
    "Store",
    "StoreView",
    "database_errors",
    "fts_query",
    "is_url",
    "result_row",
    "tsquery",
]


class Store(Results, Incidents, Runs, Memory, Members, Importance, Graph, IncidentVectors, Public, Changes, Base):
    """The database. ``Store(":memory:")`` works for tests that need no file.

    ``location`` is a SQLite file, or a ``postgresql://`` URL. ``replica`` is the daemon replica this
    store writes for (``replica_index``): its agent runs and its notifications are its own.
    """

    # Each part is this store seen through its protocol: mypy checks the store has every method the part
    # names (the annotation), and the part answers nothing else at run time.

    @cached_property
    def results(self) -> ResultsPart:
        results: ResultsPart = self
        return part(results, ResultsPart)

    @cached_property
    def incidents(self) -> IncidentsPart:
        incidents: IncidentsPart = self
        return part(incidents, IncidentsPart)

    @cached_property
    def outbox(self) -> OutboxPart:
        outbox: OutboxPart = self
        return part(outbox, OutboxPart)

    @cached_property
    def runs(self) -> RunsPart:
        runs: RunsPart = self
        return part(runs, RunsPart)

    @cached_property
    def memory(self) -> MemoryPart:
        memory: MemoryPart = self
        return part(memory, MemoryPart)

    @cached_property
    def members(self) -> MembersPart:
        members: MembersPart = self
        return part(members, MembersPart)

    @cached_property
    def importance(self) -> ImportancePart:
        importance: ImportancePart = self
        return part(importance, ImportancePart)

    @cached_property
    def graph(self) -> GraphPart:
        graph: GraphPart = self
        return part(graph, GraphPart)

    @cached_property
    def vectors(self) -> VectorsPart:
        vectors: VectorsPart = self
        return part(vectors, VectorsPart)

    @cached_property
    def public(self) -> PublicPart:
        public: PublicPart = self
        return part(public, PublicPart)

    @cached_property
    def changes(self) -> ChangesPart:
        changes: ChangesPart = self
        return part(changes, ChangesPart)

    def read_only(self) -> ReadOnly:
        """This store as a reader may see it: each part's reads, and no write (:mod:`monitor.store.readers`)."""
        return ReadOnly(self)
