"""Every SQL statement of the project: results, incidents, agent runs, memory, audit, outbox.

A store is one SQLite file in WAL mode (the default), or one PostgreSQL database that several replicas
share (:mod:`monitor.store.engines`). Each write is one transaction, so a crash never leaves half a
record. Migrations run on open (:mod:`monitor.store.schema`), so a database upgrades in place. The store
is safe to share between threads (one connection, one lock); other processes may use the same database
at the same time.

One class, :class:`Store`: one engine, handing out one part per noun (``store.incidents``, ``store.results``,
...), each a class of its own over that engine, the way sqlite-utils' ``Database`` hands out tables; each part's
reads are a class of their own too, which is what a reader gets (:meth:`Store.read_only`, :mod:`monitor.store.readers`).
:mod:`monitor.store.parts` lists them. Incidents change through none of them: through the incident-writing part
(:mod:`monitor.store.writes`), which the composition root makes for the one writer. The modules behind them:

    base.py       the connection, transactions, reads, migrations; Part and Writing, what every part stands on
    results.py    check results, hourly counts, heartbeat pings
    incidents.py  incidents and their full-text search (SQLite's FTS5, PostgreSQL's tsvector)
    outbox.py     notifications, from queued to delivered
    runs.py       agent runs, steps, diagnoses, remediations
    memory.py     working memory, its size over time, export and import
    members.py    the replicas holding a lease (failover), by the database's clock
    importance.py recalls of incidents, and the summary of the incidents forgetting removed
    changes.py    the log of config changes made from the web UI and the admin API
    writes.py     the incident-writing part: every write that changes incidents
    public.py     what status pages read: uptime by day, incidents as the public sees them, public notes
    graph.py      the fleet's graph: what targets depend on, and incidents found through it
    vectors.py    incidents' vectors for recall by meaning, and their search
    engines.py    SQLite and PostgreSQL: connections, and where their SQL differs (postgres.py: PostgreSQL's engine)
    schema.py     the tables, and SQLite's migrations (schema_pg.py: PostgreSQL's)
    words.py      which words of a query full-text search looks for, and how many incidents hold each
"""

from __future__ import annotations

from monitor.store.base import Base, Part, part
from monitor.store.changes import ChangesPart
from monitor.store.engines import BUSY_TIMEOUT, database_errors, is_url
from monitor.store.graph import GraphPart
from monitor.store.importance import ImportancePart
from monitor.store.incidents import IncidentsPart
from monitor.store.members import MembersPart
from monitor.store.memory import MemoryPart
from monitor.store.outbox import Notification, Notifier, OutboxPart
from monitor.store.public import PublicReader
from monitor.store.readers import ReadOnly, StoreView
from monitor.store.results import ResultsPart, result_row
from monitor.store.runs import RunsPart
from monitor.store.schema import INCIDENT_TEXT, SCHEMA_VERSION
from monitor.store.vectors import Embedded, VectorsPart
from monitor.store.words import fts_query, tsquery
from monitor.store.writes import IncidentWrites

__all__ = [
    "BUSY_TIMEOUT",
    "INCIDENT_TEXT",
    "SCHEMA_VERSION",
    "Base",
    "Embedded",
    "Notification",
    "IncidentWrites",
    "Notifier",
    "Part",
    "ReadOnly",
    "Store",
    "StoreView",
    "database_errors",
    "fts_query",
    "is_url",
    "result_row",
    "tsquery",
]


class Store(Base):
    """The database, and its parts. ``Store(":memory:")`` works for tests that need no file.

    ``location`` is a SQLite file, or a ``postgresql://`` URL. ``replica`` is the daemon replica this
    store writes for (``replica_index``): its agent runs and its notifications are its own. Each part is made
    once, on first use, over this one engine. Incidents are changed through none of them: the incident-writing
    part (:class:`~monitor.store.writes.IncidentWrites`) is made by the composition root for the one writer.
    """

    results = part(ResultsPart)
    incidents = part(IncidentsPart)
    outbox = part(OutboxPart)
    runs = part(RunsPart)
    memory = part(MemoryPart)
    members = part(MembersPart)
    importance = part(ImportancePart)
    graph = part(GraphPart)
    vectors = part(VectorsPart)
    public = part(lambda db: PublicReader(db.reads))  # status pages read here; a public note is the incident writer's
    changes = part(ChangesPart)

    def read_only(self) -> ReadOnly:
        """This store as a reader may see it: each part's reads, and no write (:mod:`monitor.store.readers`)."""
        return ReadOnly(self.reads)
