"""Every SQL statement of the project: results, incidents, agent runs, memory, audit, outbox.

A store is one SQLite file in WAL mode (the default), or one PostgreSQL database that several replicas
share (:mod:`monitor.store.engines`). Each write is one transaction, so a crash never leaves half a
record. Migrations run on open (:mod:`monitor.store.schema`), so a database upgrades in place. The store
is safe to share between threads (one connection, one lock); other processes may use the same database
at the same time.

One class, :class:`Store`, made of one part per noun:

    base.py       the connection, transactions, reads, migrations
    results.py    check results, hourly counts, heartbeat pings
    incidents.py  incidents and their full-text search (SQLite's FTS5, PostgreSQL's tsvector)
    outbox.py     notifications, from queued to delivered
    runs.py       agent runs, steps, diagnoses, remediations
    memory.py     working memory, its size over time, export and import
    members.py    the replicas holding a lease (failover), by the database's clock
    importance.py recalls of incidents, and the summary of the incidents forgetting removed
    public.py     what status pages read: uptime by day, incidents as the public sees them, public notes
    graph.py      the fleet's graph: what targets depend on, and incidents found through it
    vectors.py    incidents' vectors for recall by meaning, and their search
    engines.py    SQLite and PostgreSQL: connections, and where their SQL differs (postgres.py: PostgreSQL's engine)
    schema.py     the tables, and SQLite's migrations (schema_pg.py: PostgreSQL's)
    words.py      which words of a query full-text search looks for, and how many incidents hold each
"""

from __future__ import annotations

from monitor.store.base import Base
from monitor.store.engines import BUSY_TIMEOUT, database_errors, is_url
from monitor.store.graph import Graph
from monitor.store.importance import Importance
from monitor.store.incidents import Incidents
from monitor.store.members import Members
from monitor.store.memory import Memory
from monitor.store.outbox import Notification, Notifier
from monitor.store.public import Public
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
    "Store",
    "database_errors",
    "fts_query",
    "is_url",
    "result_row",
    "tsquery",
]


class Store(Results, Incidents, Runs, Memory, Members, Importance, Graph, IncidentVectors, Public, Base):
    """The database. ``Store(":memory:")`` works for tests that need no file.

    ``location`` is a SQLite file, or a ``postgresql://`` URL. ``replica`` is the daemon replica this
    store writes for (``replica_index``): its agent runs and its notifications are its own.
    """
