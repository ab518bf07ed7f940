"""The store's tables, and how a database of any older version is brought up to date.

SQLite databases have grown migration by migration since the first version (``PRAGMA user_version``);
never edit an old migration, append one. PostgreSQL came at version 10: an empty database gets the
whole version-10 schema at once (:func:`_pg_v10`), then the migrations after it, which exist in both
dialects. Its version is kept in ``schema_version``, and migrating holds an advisory lock, so that
replicas starting together migrate once.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import sqlite_utils

INCIDENT_TEXT = ["target", "pattern", "summary", "diagnosis", "suspected_cause", "resolution", "notes"]


def _v1(db: sqlite_utils.Database) -> None:
    db.execute(
        """CREATE TABLE IF NOT EXISTS results (
            id INTEGER PRIMARY KEY, target TEXT NOT NULL, checked_at REAL NOT NULL,
            ok INTEGER NOT NULL, status_code INTEGER, latency_ms REAL, error TEXT, detail TEXT)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS incidents (
            id INTEGER PRIMARY KEY, target TEXT NOT NULL, pattern TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open', opened_at REAL NOT NULL, closed_at REAL,
            summary TEXT, diagnosis TEXT, resolution TEXT)"""
    )


def _v2(db: sqlite_utils.Database) -> None:
    results, incidents = db["results"], db["incidents"]
    for table, column, kind in [
        (results, "severity", str), (results, "cert_expires_at", float),
        (incidents, "severity", str), (incidents, "updated_at", float),
        (incidents, "suspected_cause", str), (incidents, "notes", str),
        (incidents, "agent_state", str), (incidents, "silenced", int),
    ]:
        if column not in table.columns_dict:
            table.add_column(column, kind)  # type: ignore[union-attr]
    db.execute("UPDATE results SET severity = CASE ok WHEN 1 THEN 'ok' ELSE 'critical' END WHERE severity IS NULL")
    db.execute("UPDATE incidents SET severity = 'critical' WHERE severity IS NULL")
    db.execute("UPDATE incidents SET updated_at = opened_at WHERE updated_at IS NULL")
    db.execute("CREATE INDEX IF NOT EXISTS results_target_time ON results (target, checked_at DESC)")
    db.execute("CREATE INDEX IF NOT EXISTS results_time ON results (checked_at)")
    db.execute("CREATE INDEX IF NOT EXISTS incidents_target_status ON incidents (target, status)")
    db["incidents"].enable_fts(INCIDENT_TEXT, fts_version="FTS5", create_triggers=True, replace=True)  # type: ignore[union-attr]


def _v3(db: sqlite_utils.Database) -> None:
    db.execute(
        """CREATE TABLE IF NOT EXISTS agent_runs (
            id INTEGER PRIMARY KEY, incident_id INTEGER, target TEXT, task TEXT NOT NULL,
            model TEXT, state TEXT NOT NULL DEFAULT 'running', final_answer TEXT,
            started_at REAL NOT NULL, ended_at REAL, input_tokens INTEGER DEFAULT 0,
            output_tokens INTEGER DEFAULT 0, error TEXT)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS agent_steps (
            id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES agent_runs(id),
            step_number INTEGER NOT NULL, kind TEXT NOT NULL, started_at REAL, duration REAL,
            model_output TEXT, tool_calls TEXT, observations TEXT, error TEXT,
            input_tokens INTEGER DEFAULT 0, output_tokens INTEGER DEFAULT 0, is_final INTEGER DEFAULT 0,
            tool_ok INTEGER, tool_seconds REAL)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS agent_steps_run ON agent_steps (run_id, step_number)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS memory (
            key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at REAL NOT NULL)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS remediations (
            id INTEGER PRIMARY KEY, target TEXT NOT NULL, action TEXT NOT NULL, run_id INTEGER,
            dry_run INTEGER NOT NULL, ok INTEGER NOT NULL, detail TEXT, at REAL NOT NULL)"""
    )
    db.execute(
        """CREATE TABLE IF NOT EXISTS outbox (
            id INTEGER PRIMARY KEY, receiver TEXT NOT NULL, payload TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL NOT NULL,
            created_at REAL NOT NULL, delivered_at REAL, last_error TEXT)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS outbox_due ON outbox (delivered_at, next_attempt_at)")


def _v4(db: sqlite_utils.Database) -> None:
    """Structured diagnoses: a root cause from a closed set, the related past incident, a confidence."""
    for table in ("incidents", "agent_runs"):
        columns = db[table].columns_dict
        for column, kind in [("root_cause", str), ("related_incident", int), ("confidence", str),
                             ("diagnosis", str)]:
            if column not in columns:
                db[table].add_column(column, kind)  # type: ignore[union-attr]


def _v5(db: sqlite_utils.Database) -> None:
    """Indexes for an import's de-duplication: without them each row scanned the whole table."""
    db.execute("CREATE INDEX IF NOT EXISTS incidents_dedup ON incidents (target, pattern, opened_at)")
    db.execute("CREATE INDEX IF NOT EXISTS agent_runs_started ON agent_runs (started_at)")


def _v6(db: sqlite_utils.Database) -> None:
    """At most one open incident per target, as a constraint; outbox rows keyed so the newest state wins.

    Duplicates an older version let two writers open are closed first (all but the newest), with a note.
    """
    db.execute(
        """UPDATE incidents SET status = 'resolved', closed_at = coalesce(updated_at, opened_at),
           notes = trim(coalesce(notes, '') || char(10) || 'closed on upgrade: a newer incident of this target was open')
           WHERE status = 'open' AND id NOT IN (SELECT max(id) FROM incidents WHERE status = 'open' GROUP BY target)""")
    db.execute("CREATE UNIQUE INDEX IF NOT EXISTS incidents_one_open ON incidents (target) WHERE status = 'open'")
    columns = db["outbox"].columns_dict
    for column, kind in [("key", str), ("dropped_at", float)]:
        if column not in columns:
            db["outbox"].add_column(column, kind)  # type: ignore[union-attr]
    db.execute("CREATE INDEX IF NOT EXISTS outbox_pending_key ON outbox (receiver, key) WHERE delivered_at IS NULL")



def _v7(db: sqlite_utils.Database) -> None:
    """This database's own random id: with it, an incident's key is unique across installs."""
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('install_id', lower(hex(randomblob(6))))")


def _v8(db: sqlite_utils.Database) -> None:
    """Heartbeat targets' pings, so that a restart forgets none: by target name (a token is never stored)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS heartbeats (
            target TEXT PRIMARY KEY, since REAL NOT NULL, last_ping REAL, last_start REAL, last_fail REAL)""")


def _v9(db: sqlite_utils.Database) -> None:
    """The web UI: check phases on each result, memory size over time, and the indexes its pages read by."""
    if "phases" not in db["results"].columns_dict:
        db["results"].add_column("phases", str)  # type: ignore[union-attr]
    db.execute(
        """CREATE TABLE IF NOT EXISTS memory_samples (
            at REAL NOT NULL, bytes INTEGER, tokens INTEGER, steps INTEGER, incidents INTEGER, db_bytes INTEGER)""")
    db.execute("CREATE INDEX IF NOT EXISTS memory_samples_at ON memory_samples (at)")
    for name, sql in WEB_INDEXES.items():
        db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {sql}")
    # Checks, passes and latency per target and hour, kept by a trigger on every insert however it is
    # made: uptime and charts over 30 days add up 720 rows instead of reading 50,000 results.
    db.execute(
        """CREATE TABLE IF NOT EXISTS results_hourly (
            target TEXT NOT NULL, hour INTEGER NOT NULL, checks INTEGER NOT NULL, passed INTEGER NOT NULL,
            latency_sum REAL NOT NULL, latency_max REAL NOT NULL, PRIMARY KEY (target, hour)) WITHOUT ROWID""")
    db.execute(
        """INSERT OR REPLACE INTO results_hourly (target, hour, checks, passed, latency_sum, latency_max)
           SELECT target, CAST(checked_at / 3600 AS INTEGER), count(*), sum(ok), total(latency_ms),
                  coalesce(max(latency_ms), 0) FROM results GROUP BY 1, 2""")
    db.execute(
        """CREATE TRIGGER IF NOT EXISTS results_hourly_count AFTER INSERT ON results BEGIN
               INSERT INTO results_hourly (target, hour, checks, passed, latency_sum, latency_max)
               VALUES (new.target, CAST(new.checked_at / 3600 AS INTEGER), 1, new.ok, coalesce(new.latency_ms, 0),
                       coalesce(new.latency_ms, 0))
               ON CONFLICT (target, hour) DO UPDATE SET checks = checks + 1, passed = passed + excluded.passed,
                   latency_sum = latency_sum + excluded.latency_sum,
                   latency_max = max(latency_max, excluded.latency_max);
           END""")


# What the web pages look rows up by (bench/pages.py times them with and without).
WEB_INDEXES = {
    "incidents_target_id": "incidents (target, id)",
    "agent_runs_incident": "agent_runs (incident_id)",
    "outbox_key": "outbox (key)",
}


def _v10(db: sqlite_utils.Database) -> None:
    """Every action asked of the web UI (acknowledge, resolve, silence), done or refused, and from where."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS web_actions (
            id INTEGER PRIMARY KEY, at REAL NOT NULL, incident_id INTEGER, action TEXT NOT NULL, note TEXT,
            ok INTEGER NOT NULL, detail TEXT, client TEXT)""")






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


# What monitor.embedding.incident_text embeds: a change to one of these queues the incident to be embedded again.
EMBEDDED_TEXT = ["target", "pattern", "root_cause", "summary", "diagnosis", "suspected_cause", "resolution", "notes"]


EMBED_CLAIM = ["claimed_by integer", "claimed_until double precision"]


def _v14(db: sqlite_utils.Database) -> None:
    """Recall by meaning (:mod:`monitor.store.vectors`): each incident's vector and the model that made it,
    and a queue of the incidents to embed, kept by triggers (new incidents, and changes to their text)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS incident_vectors (
            incident_id INTEGER PRIMARY KEY REFERENCES incidents(id) ON DELETE CASCADE, model TEXT NOT NULL,
            dim INTEGER NOT NULL, vector BLOB NOT NULL, text_hash TEXT NOT NULL, embedded_at REAL NOT NULL,
            seq INTEGER NOT NULL)""")
    db.execute("CREATE INDEX IF NOT EXISTS incident_vectors_seq ON incident_vectors (seq)")
    db.execute("CREATE INDEX IF NOT EXISTS incident_vectors_model ON incident_vectors (model)")
    db.execute(
        """CREATE TABLE IF NOT EXISTS embed_queue (
            incident_id INTEGER PRIMARY KEY REFERENCES incidents(id) ON DELETE CASCADE, version INTEGER NOT NULL)""")
    db.execute("INSERT OR IGNORE INTO embed_queue (incident_id, version) SELECT id, 1 FROM incidents")
    for name, event in (("incidents_embed_new", "INSERT"), ("incidents_embed_changed", f"UPDATE OF {', '.join(EMBEDDED_TEXT)}")):
        db.execute(
            f"""CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON incidents BEGIN
                    INSERT INTO embed_queue (incident_id, version) VALUES (new.id, 1)
                    ON CONFLICT (incident_id) DO UPDATE SET version = embed_queue.version + 1;
                END""")


def _v15(db: sqlite_utils.Database) -> None:
    """A claim on a queued incident (:meth:`~monitor.store.vectors.IncidentVectors.claim_incidents_to_embed`):
    the replica embedding it, and until when, so that replicas sharing a database never embed it twice."""
    for column in EMBED_CLAIM:
        db.execute(f"ALTER TABLE embed_queue ADD COLUMN {column}")


SQLITE_MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [
    _v1, _v2, _v3, _v4, _v5, _v6, _v7, _v8, _v9, _v10, _v11, _v12, _v13, _v14, _v15]
SCHEMA_VERSION = len(SQLITE_MIGRATIONS)

# -- PostgreSQL -----------------------------------------------------------------------------

# Incident text as full-text search reads it: punctuation is a space, as it is to SQLite's FTS5
# tokenizer, so that "shop.local/health" holds the words shop, local and health.
PG_INCIDENT_TEXT = "to_tsvector('simple', regexp_replace({}, '[[:punct:][:space:]]+', ' ', 'g'))".format(
    " || ' ' || ".join(f"coalesce({column}, '')" for column in INCIDENT_TEXT))
PG_SCHEMA_LOCK = 7_238_115_002  # pg_advisory_xact_lock key: one migration at a time per database


def _pg_v10(tx: Any) -> None:
    """The schema of SQLite's version 10, at once. REAL is ``double precision`` (PostgreSQL's ``real`` has
    only 6 digits); flags and counts are ``integer``, so that sums of them are integers, not decimals."""
    statements = [
        """CREATE TABLE results (
            id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, target text NOT NULL,
            checked_at double precision NOT NULL, ok integer NOT NULL, status_code integer,
            latency_ms double precision, error text, detail text, severity text,
            cert_expires_at double precision, phases text)""",
        "CREATE INDEX results_target_time ON results (target, checked_at DESC)",
        "CREATE INDEX results_time ON results (checked_at)",
        """CREATE TABLE incidents (
            id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, target text NOT NULL, pattern text NOT NULL,
            status text NOT NULL DEFAULT 'open', opened_at double precision NOT NULL, closed_at double precision,
            summary text, diagnosis text, resolution text, severity text, updated_at double precision,
            suspected_cause text, notes text, agent_state text, silenced integer, root_cause text,
            related_incident bigint, confidence text)""",
        "CREATE INDEX incidents_target_status ON incidents (target, status)",
        "CREATE INDEX incidents_dedup ON incidents (target, pattern, opened_at)",
        "CREATE UNIQUE INDEX incidents_one_open ON incidents (target) WHERE status = 'open'",
        f"CREATE INDEX incidents_search ON incidents USING gin (({PG_INCIDENT_TEXT}))",
        """CREATE TABLE agent_runs (
            id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, incident_id bigint, target text,
            task text NOT NULL, model text, state text NOT NULL DEFAULT 'running', final_answer text,
            started_at double precision NOT NULL, ended_at double precision, input_tokens integer DEFAULT 0,
            output_tokens integer DEFAULT 0, error text, root_cause text, related_incident bigint,
            confidence text, diagnosis text)""",
        "CREATE INDEX agent_runs_started ON agent_runs (started_at)",
        """CREATE TABLE agent_steps (
            id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, run_id bigint NOT NULL REFERENCES agent_runs(id),
            step_number integer NOT NULL, kind text NOT NULL, started_at double precision,
            duration double precision, model_output text, tool_calls text, observations text, error text,
            input_tokens integer DEFAULT 0, output_tokens integer DEFAULT 0, is_final integer DEFAULT 0,
            tool_ok integer, tool_seconds double precision)""",
        "CREATE INDEX agent_steps_run ON agent_steps (run_id, step_number)",
        "CREATE TABLE memory (key text PRIMARY KEY, value text NOT NULL, updated_at double precision NOT NULL)",
        """CREATE TABLE remediations (
            id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, target text NOT NULL, action text NOT NULL,
            run_id bigint, dry_run integer NOT NULL, ok integer NOT NULL, detail text, at double precision NOT NULL)""",
        """CREATE TABLE outbox (
            id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, receiver text NOT NULL, payload text NOT NULL,
            attempts integer NOT NULL DEFAULT 0, next_attempt_at double precision NOT NULL,
            created_at double precision NOT NULL, delivered_at double precision, last_error text, key text,
            dropped_at double precision)""",
        "CREATE INDEX outbox_due ON outbox (delivered_at, next_attempt_at)",
        "CREATE INDEX outbox_pending_key ON outbox (receiver, key) WHERE delivered_at IS NULL",
        "CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL)",
        """CREATE TABLE heartbeats (target text PRIMARY KEY, since double precision NOT NULL,
            last_ping double precision, last_start double precision, last_fail double precision)""",
        """CREATE TABLE memory_samples (at double precision NOT NULL, bytes bigint, tokens bigint, steps integer,
            incidents integer, db_bytes bigint)""",
        "CREATE INDEX memory_samples_at ON memory_samples (at)",
        *(f"CREATE INDEX {name} ON {sql}" for name, sql in WEB_INDEXES.items()),
        """CREATE TABLE results_hourly (
            target text NOT NULL, hour bigint NOT NULL, checks integer NOT NULL, passed integer NOT NULL,
            latency_sum double precision NOT NULL, latency_max double precision NOT NULL, PRIMARY KEY (target, hour))""",
        """CREATE FUNCTION results_hourly_count() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN
               INSERT INTO results_hourly (target, hour, checks, passed, latency_sum, latency_max)
               VALUES (NEW.target, trunc(NEW.checked_at / 3600)::bigint, 1, NEW.ok, coalesce(NEW.latency_ms, 0),
                       coalesce(NEW.latency_ms, 0))
               ON CONFLICT (target, hour) DO UPDATE SET checks = results_hourly.checks + 1,
                   passed = results_hourly.passed + excluded.passed,
                   latency_sum = results_hourly.latency_sum + excluded.latency_sum,
                   latency_max = greatest(results_hourly.latency_max, excluded.latency_max);
               RETURN NULL;
           END $$""",
        """CREATE TRIGGER results_hourly_count AFTER INSERT ON results
           FOR EACH ROW EXECUTE FUNCTION results_hourly_count()""",
        """CREATE TABLE web_actions (
            id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, at double precision NOT NULL, incident_id bigint,
            action text NOT NULL, note text, ok integer NOT NULL, detail text, client text)""",
    ]
    for sql in statements:
        tx.execute(sql)
    tx.execute("INSERT INTO meta (key, value) VALUES ('install_id', %s)", (secrets.token_hex(6),))


def _pg_v11(tx: Any) -> None:
    for table in ("agent_runs", "outbox"):
        tx.execute(f"ALTER TABLE {table} ADD COLUMN replica integer NOT NULL DEFAULT 0")
    tx.execute("CREATE INDEX agent_runs_running ON agent_runs (state, replica)")


def _pg_v12(tx: Any) -> None:
    tx.execute(RECALLS_TABLE.format(id="bigint", real="double precision"))
    tx.execute(PRUNED_TABLE.format(real="double precision"))


def _pg_v13(tx: Any) -> None:
    for sql in GRAPH_TABLES:
        tx.execute(sql)


def _pg_v14(tx: Any) -> None:
    for sql in [
        """CREATE TABLE incident_vectors (
            incident_id bigint PRIMARY KEY REFERENCES incidents(id) ON DELETE CASCADE, model text NOT NULL,
            dim integer NOT NULL, vector bytea NOT NULL, text_hash text NOT NULL, embedded_at double precision NOT NULL,
            seq bigint NOT NULL)""",
        "CREATE INDEX incident_vectors_seq ON incident_vectors (seq)",
        "CREATE INDEX incident_vectors_model ON incident_vectors (model)",
        """CREATE TABLE embed_queue (
            incident_id bigint PRIMARY KEY REFERENCES incidents(id) ON DELETE CASCADE, version bigint NOT NULL)""",
        "INSERT INTO embed_queue (incident_id, version) SELECT id, 1 FROM incidents",
        """CREATE FUNCTION incidents_embed_queue() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN
               INSERT INTO embed_queue (incident_id, version) VALUES (NEW.id, 1)
               ON CONFLICT (incident_id) DO UPDATE SET version = embed_queue.version + 1;
               RETURN NULL;
           END $$""",
        """CREATE TRIGGER incidents_embed_new AFTER INSERT ON incidents
           FOR EACH ROW EXECUTE FUNCTION incidents_embed_queue()""",
        f"""CREATE TRIGGER incidents_embed_changed AFTER UPDATE OF {', '.join(EMBEDDED_TEXT)} ON incidents
           FOR EACH ROW EXECUTE FUNCTION incidents_embed_queue()""",
    ]:
        tx.execute(sql)


def _pg_v15(tx: Any) -> None:
    tx.execute(f"ALTER TABLE embed_queue {', '.join(f'ADD COLUMN {column}' for column in EMBED_CLAIM)}")


# (version it brings the database to, migration); an empty database starts at the first.
PG_MIGRATIONS: list[tuple[int, Callable[[Any], None]]] = [(10, _pg_v10), (11, _pg_v11), (12, _pg_v12), (13, _pg_v13),
                                                      (14, _pg_v14), (15, _pg_v15)]


def migrate_postgres(conn: Any) -> None:
    """Bring a PostgreSQL database up to date in one transaction, one replica at a time. One already up to
    date is not touched, so that a user with no right to create tables may use it."""
    if conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()[0] and conn.execute(
            "SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0] >= PG_MIGRATIONS[-1][0]:
        return
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (PG_SCHEMA_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL, at timestamptz DEFAULT now())")
        current = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0]
        for version, migration in PG_MIGRATIONS:
            if version > current:
                migration(conn)
                conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (version,))
    assert PG_MIGRATIONS[-1][0] == SCHEMA_VERSION, "each new migration exists in both dialects"
