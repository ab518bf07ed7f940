"""The store's tables, and how a database of any older version is brought up to date.

SQLite databases have grown migration by migration since the first version (``PRAGMA user_version``);
never edit an old migration, append one. PostgreSQL came at version 10 (:mod:`monitor.store.schema_pg`):
each migration after it exists in both dialects, with the same number. The DDL both dialects share
(``GRAPH_TABLES``, ``RECALLS_TABLE``, ...) lives here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from monitor.store import schema_early as early
from monitor.store.schema_early import INCIDENT_TEXT, WEB_INDEXES

if TYPE_CHECKING:  # imported where a migration runs (monitor.store.engines), not by every process that opens a store
    import sqlite_utils

__all__ = ["INCIDENT_TEXT", "SCHEMA_VERSION", "SQLITE_MIGRATIONS", "WEB_INDEXES"]


def _v10(db: sqlite_utils.Database) -> None:
    """Every action asked of the web UI (acknowledge, resolve, silence), done or refused, and from where."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS web_actions (
            id INTEGER PRIMARY KEY, at REAL NOT NULL, incident_id INTEGER, action TEXT NOT NULL, note TEXT,
            ok INTEGER NOT NULL, detail TEXT, client TEXT)"""
    )


def _v11(db: sqlite_utils.Database) -> None:
    """Scale-out: which replica started an agent run and queued a notification, so that each replica
    delivers its own notifications once and marks only its own runs interrupted after a crash."""
    for table in ("agent_runs", "outbox"):
        if "replica" not in db[table].columns_dict:
            db.execute(f"ALTER TABLE {table} ADD COLUMN replica INTEGER NOT NULL DEFAULT 0")
    db.execute("CREATE INDEX IF NOT EXISTS agent_runs_running ON agent_runs (state, replica)")


# Forgetting (monitor.memory.forgetting): how often each incident was recalled, and what pruning removed.
RECALLS_TABLE = """CREATE TABLE IF NOT EXISTS incident_recalls (
    incident_id {id} PRIMARY KEY, score {real} NOT NULL, scored_at {real} NOT NULL, recalls integer NOT NULL,
    recalled_at {real} NOT NULL)"""
PRUNED_TABLE = """CREATE TABLE IF NOT EXISTS pruned_incidents (
    target text NOT NULL, pattern text NOT NULL, root_cause text NOT NULL, incidents integer NOT NULL,
    first_opened {real} NOT NULL, last_opened {real} NOT NULL, pruned_at {real} NOT NULL,
    PRIMARY KEY (target, pattern, root_cause))"""


def _v12(db: sqlite_utils.Database) -> None:
    """Importance of incident memories: recalls, with a score that decays, and a summary of pruned incidents."""
    db.execute(RECALLS_TABLE.format(id="INTEGER", real="REAL"))
    db.execute(PRUNED_TABLE.format(real="REAL"))


def _v13(db: sqlite_utils.Database) -> None:
    """The fleet's graph: what each target depends on (configured, named in what it answered, or learned
    from incidents that opened together), and the components each incident's evidence named."""
    for sql in GRAPH_TABLES:
        db.execute(sql.replace("bigint", "INTEGER").replace("double precision", "REAL"))


GRAPH_TABLES = [
    """CREATE TABLE IF NOT EXISTS graph_edges (
        target text NOT NULL, component text NOT NULL, source text NOT NULL, weight integer NOT NULL,
        last_seen double precision NOT NULL, PRIMARY KEY (target, component, source))""",
    "CREATE INDEX IF NOT EXISTS graph_edges_component ON graph_edges (component)",
    """CREATE TABLE IF NOT EXISTS graph_mentions (
        incident_id bigint NOT NULL REFERENCES incidents(id) ON DELETE CASCADE, component text NOT NULL,
        PRIMARY KEY (incident_id, component))""",
    "CREATE INDEX IF NOT EXISTS graph_mentions_component ON graph_mentions (component)",
    "CREATE INDEX IF NOT EXISTS incidents_opened ON incidents (opened_at)",
]


# What an incident's text holds: a change to one of these queues the incident to be embedded again (one whose
# embedded text, monitor.memory.embedding.passage_text, did not change keeps its vector without a model call).
EMBEDDED_TEXT = ["target", "pattern", "root_cause", "summary", "diagnosis", "suspected_cause", "resolution", "notes"]


def _v14(db: sqlite_utils.Database) -> None:
    """Recall by meaning (:mod:`monitor.store.vectors`): each incident's vector and the model that made it,
    and a queue of the incidents to embed, kept by triggers (new incidents, and changes to their text)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS incident_vectors (
            incident_id INTEGER PRIMARY KEY REFERENCES incidents(id) ON DELETE CASCADE, model TEXT NOT NULL,
            dim INTEGER NOT NULL, vector BLOB NOT NULL, text_hash TEXT NOT NULL, embedded_at REAL NOT NULL,
            seq INTEGER NOT NULL)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS incident_vectors_seq ON incident_vectors (seq)")
    db.execute("CREATE INDEX IF NOT EXISTS incident_vectors_model ON incident_vectors (model)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS embed_queue (
            incident_id INTEGER PRIMARY KEY REFERENCES incidents(id) ON DELETE CASCADE, version INTEGER NOT NULL)"""
    )
    db.execute("INSERT OR IGNORE INTO embed_queue (incident_id, version) SELECT id, 1 FROM incidents")
    for name, event in (("incidents_embed_new", "INSERT"), ("incidents_embed_changed", f"UPDATE OF {', '.join(EMBEDDED_TEXT)}")):
        db.execute(
            f"""CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON incidents BEGIN
                    INSERT INTO embed_queue (incident_id, version) VALUES (new.id, 1)
                    ON CONFLICT (incident_id) DO UPDATE SET version = embed_queue.version + 1;
                END"""
        )


EMBED_CLAIM = ["claimed_by integer", "claimed_until double precision"]


def _v15(db: sqlite_utils.Database) -> None:
    """A claim on a queued incident (:meth:`~monitor.store.vectors.IncidentVectors.claim_incidents_to_embed`):
    the replica embedding it, and until when, so that replicas sharing a database never embed it twice."""
    for column in EMBED_CLAIM:
        db.execute(f"ALTER TABLE embed_queue ADD COLUMN {column}")


def _v16(db: sqlite_utils.Database) -> None:
    """Recall at 100,000 incidents: how many incidents hold each word of the full-text index (FTS5's own
    counts, read in place), so that search leaves out the words most hold (:mod:`monitor.store.words`), and
    each target's incidents in the order recall reads them, known fixes first."""
    db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_VOCABULARY} USING fts5vocab(incidents_fts, row)")
    db.execute(f"CREATE INDEX IF NOT EXISTS {TARGET_FIXED}")


def _v17(db: sqlite_utils.Database) -> None:
    """What alerts say and when they stop: an incident's evidence (its first failed check: redacted URL,
    status, error, excerpt) and when someone acknowledged it (reminders and escalation stop then)."""
    columns = db["incidents"].columns_dict
    for column, kind in [("evidence", str), ("acknowledged_at", float)]:
        if column not in columns:
            db["incidents"].add_column(column, kind)  # type: ignore[union-attr]


# monitor.store.graph's incidents_of: a target's incidents, known fixes first, then the newest
TARGET_FIXED = "incidents_target_fixed ON incidents (target, (resolution IS NOT NULL AND resolution != ''), id)"


FTS_VOCABULARY = "incidents_fts_vocab"  # term, doc (incidents holding it), cnt (times held)

# Status pages (monitor.web.status): notes on an incident written for the public, apart from its own notes.
PUBLIC_NOTES = [
    """CREATE TABLE IF NOT EXISTS public_notes (
        id {pk}, incident_id {id} NOT NULL, at {real} NOT NULL, text text NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS public_notes_incident ON public_notes (incident_id, at)",
]


def _v18(db: sqlite_utils.Database) -> None:
    """Public notes, which status pages show under an incident (its own notes stay in the admin UI)."""
    for sql in PUBLIC_NOTES:
        db.execute(sql.format(pk="INTEGER PRIMARY KEY", id="INTEGER", real="REAL"))


# Migration 19: the members (replicas holding a lease, monitor.store.members), and where each result was checked from.
MEMBERS_TABLE = """CREATE TABLE IF NOT EXISTS members (
    id integer PRIMARY KEY, location text NOT NULL DEFAULT '', joined_at double precision NOT NULL,
    expires_at double precision NOT NULL)"""
RESULT_LOCATION = "ALTER TABLE results ADD COLUMN location text"


def _v19(db: sqlite_utils.Database) -> None:
    """Failover and quorum: the replicas' leases, and each result's location."""
    db.execute(MEMBERS_TABLE.replace("double precision", "REAL"))
    db.execute(RESULT_LOCATION)


# Alerts (monitor.alerts.outages): the incidents one first message listed, an outage, by its first incident;
# its reminders and recoveries list them together.
OUTAGE_MEMBERS = [
    "CREATE TABLE IF NOT EXISTS outage_members (incident_id {id} PRIMARY KEY, leader {id} NOT NULL)",
    "CREATE INDEX IF NOT EXISTS outage_members_leader ON outage_members (leader)",
]


def _v20(db: sqlite_utils.Database) -> None:
    """Which outage each incident sent with others belongs to."""
    for sql in OUTAGE_MEMBERS:
        db.execute(sql.format(id="INTEGER"))


# Recall by meaning embeds what an incident said of its failure (embedding.passage_text), no longer its whole
# text: every incident is queued to be embedded again; until it is, its old vector serves.
REEMBED_ALL = """INSERT INTO embed_queue (incident_id, version) SELECT id, 1 FROM incidents WHERE true
    ON CONFLICT (incident_id) DO UPDATE SET version = embed_queue.version + 1"""


def _v21(db: sqlite_utils.Database) -> None:
    """Every incident's vector is made again, of its failure alone."""
    db.execute(REEMBED_ALL)


# A heartbeat's /fail may carry the job's output (a POST body): its tail is kept, to say how the job failed.
HEARTBEAT_MESSAGE = "ALTER TABLE heartbeats ADD COLUMN last_message text"


def _v22(db: sqlite_utils.Database) -> None:
    """What a job said when it last reported its failure."""
    if "last_message" not in db["heartbeats"].columns_dict:
        db.execute(HEARTBEAT_MESSAGE)


# What a diagnosis claims of past incidents (monitor.memory.claims): the one asserted, the ones suggested, why.
CLAIM_COLUMN = "ALTER TABLE {table} ADD COLUMN claim text"


def _v23(db: sqlite_utils.Database) -> None:
    """A diagnosis' claim: a past fix asserted only when the evidence decides, else incidents suggested."""
    for table in ("incidents", "agent_runs"):
        if "claim" not in db[table].columns_dict:
            db.execute(CLAIM_COLUMN.format(table=table))


# Migration 24: uptime counts a warning as up (monitor.core.state.is_up): each hour's checks that found the target
# up, beside those that passed every condition. Results and hourly counts are pruned together, so an hour's
# results say how many of its checks were warnings.
UP = "CASE WHEN {row}severity = 'critical' THEN 0 ELSE 1 END"  # monitor.core.state.is_up, in SQL
HOURLY_UP = "ALTER TABLE results_hourly ADD COLUMN up integer NOT NULL DEFAULT 0"
HOURLY_UP_COUNTED = """UPDATE results_hourly SET up = passed + (SELECT count(*) FROM results
    WHERE results.target = results_hourly.target AND results.checked_at >= results_hourly.hour * 3600
    AND results.checked_at < (results_hourly.hour + 1) * 3600 AND results.severity = 'warning')"""


def _v24(db: sqlite_utils.Database) -> None:
    """Each hour's checks that found the target up, kept by the trigger that counts the rest."""
    if "up" not in db["results_hourly"].columns_dict:
        db.execute(HOURLY_UP)
        db.execute(HOURLY_UP_COUNTED)
    db.execute("DROP TRIGGER IF EXISTS results_hourly_count")
    db.execute(_hourly_count("results_recent" if db["results_recent"].exists() else "results"))  # run again: after v25


def _hourly_count(table: str) -> str:
    """The trigger that counts each result into its hour as it is inserted into ``table``."""
    return f"""CREATE TRIGGER results_hourly_count AFTER INSERT ON {table} BEGIN
               INSERT INTO results_hourly (target, hour, checks, passed, up, latency_sum, latency_max)
               VALUES (new.target, CAST(new.checked_at / 3600 AS INTEGER), 1, new.ok, {UP.format(row="new.")},
                       coalesce(new.latency_ms, 0), coalesce(new.latency_ms, 0))
               ON CONFLICT (target, hour) DO UPDATE SET checks = checks + 1, passed = passed + excluded.passed,
                   up = up + excluded.up, latency_sum = latency_sum + excluded.latency_sum,
                   latency_max = max(latency_max, excluded.latency_max);
           END"""


RESULT_COLUMNS = "target, checked_at, ok, status_code, latency_ms, error, detail, severity, cert_expires_at, phases, location"


def _v25(db: sqlite_utils.Database) -> None:
    """Results are inserted into a small table, ``results_recent``, and moved from it in bulk, a range of targets
    at a time, into the one kept (``results_kept``, indexed by target and time): a target's rows reach that index
    together, so an insert no longer writes a page of it for every target checked (the cost that grew with the
    table). ``results`` is both, as a view: what reads and what other tools see. Ids go on from the kept ones."""
    if db["results_recent"].exists():  # run again (a user_version set back): done already
        return
    db.execute("ALTER TABLE results RENAME TO results_kept")
    db.execute("DROP TRIGGER IF EXISTS results_hourly_count")
    db.execute(
        """CREATE TABLE results_recent (
            id INTEGER PRIMARY KEY AUTOINCREMENT, target TEXT NOT NULL, checked_at REAL NOT NULL,
            ok INTEGER NOT NULL, status_code INTEGER, latency_ms REAL, error TEXT, detail TEXT, severity TEXT,
            cert_expires_at REAL, phases TEXT, location TEXT)"""
    )
    db.execute("CREATE INDEX results_recent_target ON results_recent (target, checked_at DESC)")
    db.execute("INSERT INTO sqlite_sequence (name, seq) SELECT 'results_recent', coalesce(max(id), 0) FROM results_kept")
    db.execute(_hourly_count("results_recent"))
    db.execute(
        f"""CREATE VIEW results AS SELECT id, {RESULT_COLUMNS} FROM results_kept
            UNION ALL SELECT id, {RESULT_COLUMNS} FROM results_recent"""
    )
    new = ", ".join(f"new.{column.strip()}" for column in RESULT_COLUMNS.split(","))
    db.execute(  # a row inserted into the view (a script, an older tool) is a result like the recorder's
        f"""CREATE TRIGGER results_insert INSTEAD OF INSERT ON results BEGIN
               INSERT INTO results_recent ({RESULT_COLUMNS}) VALUES ({new});
           END"""
    )
    db.execute(
        """CREATE TRIGGER results_delete INSTEAD OF DELETE ON results BEGIN
               DELETE FROM results_kept WHERE id = old.id; DELETE FROM results_recent WHERE id = old.id;
           END"""
    )


# People's word (monitor.core.incidents.Link): incident_id was, or was not, the same failure as other_id, for
# incident_id's failing signal. One word per pair (a later one replaces it); both incidents' deletion drops it.
LINKS_TABLE = [
    """CREATE TABLE IF NOT EXISTS incident_links (
        incident_id {id} NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
        other_id {id} NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
        verdict text NOT NULL CHECK (verdict IN ('same', 'not')), signal text NOT NULL, actor text NOT NULL,
        note text, at {real} NOT NULL, PRIMARY KEY (incident_id, other_id), CHECK (incident_id != other_id))""",
    "CREATE INDEX IF NOT EXISTS incident_links_other ON incident_links (other_id)",
    "CREATE INDEX IF NOT EXISTS incident_links_signal ON incident_links (signal)",
]


def _v26(db: sqlite_utils.Database) -> None:
    """People's word on past incidents: "the same failure as #12", "#4 was wrong for this"."""
    for sql in LINKS_TABLE:
        db.execute(sql.format(id="INTEGER", real="REAL"))


# Changes to the config from the web UI and the admin API (monitor.store.changes): who, when, what, made or refused.
CHANGES_TABLE = [
    """CREATE TABLE IF NOT EXISTS config_changes (
        id {pk}, at {real} NOT NULL, actor text NOT NULL, action text NOT NULL, ok integer NOT NULL,
        detail text NOT NULL, version_before text, version_after text, client text)""",
    "CREATE INDEX IF NOT EXISTS config_changes_at ON config_changes (at)",
]


def _v27(db: sqlite_utils.Database) -> None:
    """The log of config changes made from the web UI and the admin API (:mod:`monitor.store.changes`)."""
    for sql in CHANGES_TABLE:
        db.execute(sql.format(pk="INTEGER PRIMARY KEY", real="REAL"))


SQLITE_MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    early.v1,
    early.v2,
    early.v3,
    early.v4,
    early.v5,
    early.v6,
    early.v7,
    early.v8,
    early.v9,
    _v10,
    _v11,
    _v12,
    _v13,
    _v14,
    _v15,
    _v16,
    _v17,
    _v18,
    _v19,
    _v20,
    _v21,
    _v22,
    _v23,
    _v24,
    _v25,
    _v26,
    _v27,
]
SCHEMA_VERSION = len(SQLITE_MIGRATIONS)
