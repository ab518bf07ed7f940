"""SQLite's first nine migrations, from before PostgreSQL came (at version 10); :mod:`monitor.store.schema` lists them
with the rest. Never edit one: a database of any version is brought up to date by running the ones it lacks."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where a migration runs (monitor.store.engines)
    import sqlite_utils

INCIDENT_TEXT = ["target", "pattern", "summary", "diagnosis", "suspected_cause", "resolution", "notes"]


def v1(db: sqlite_utils.Database) -> None:
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


def v2(db: sqlite_utils.Database) -> None:
    results, incidents = db["results"], db["incidents"]
    for table, column, kind in [
        (results, "severity", str),
        (results, "cert_expires_at", float),
        (incidents, "severity", str),
        (incidents, "updated_at", float),
        (incidents, "suspected_cause", str),
        (incidents, "notes", str),
        (incidents, "agent_state", str),
        (incidents, "silenced", int),
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


def v3(db: sqlite_utils.Database) -> None:
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


def v4(db: sqlite_utils.Database) -> None:
    """Structured diagnoses: a root cause from a closed set, the related past incident, a confidence."""
    for table in ("incidents", "agent_runs"):
        columns = db[table].columns_dict
        for column, kind in [("root_cause", str), ("related_incident", int), ("confidence", str), ("diagnosis", str)]:
            if column not in columns:
                db[table].add_column(column, kind)  # type: ignore[union-attr]


def v5(db: sqlite_utils.Database) -> None:
    """Indexes for an import's de-duplication: without them each row scanned the whole table."""
    db.execute("CREATE INDEX IF NOT EXISTS incidents_dedup ON incidents (target, pattern, opened_at)")
    db.execute("CREATE INDEX IF NOT EXISTS agent_runs_started ON agent_runs (started_at)")


def v6(db: sqlite_utils.Database) -> None:
    """At most one open incident per target, as a constraint; outbox rows keyed so the newest state wins.

    Duplicates an older version let two writers open are closed first (all but the newest), with a note.
    """
    db.execute(
        """UPDATE incidents SET status = 'resolved', closed_at = coalesce(updated_at, opened_at),
           notes = trim(coalesce(notes, '') || char(10) || 'closed on upgrade: a newer incident of this target was open')
           WHERE status = 'open' AND id NOT IN (SELECT max(id) FROM incidents WHERE status = 'open' GROUP BY target)"""
    )
    db.execute("CREATE UNIQUE INDEX IF NOT EXISTS incidents_one_open ON incidents (target) WHERE status = 'open'")
    columns = db["outbox"].columns_dict
    for column, kind in [("key", str), ("dropped_at", float)]:
        if column not in columns:
            db["outbox"].add_column(column, kind)  # type: ignore[union-attr]
    db.execute("CREATE INDEX IF NOT EXISTS outbox_pending_key ON outbox (receiver, key) WHERE delivered_at IS NULL")


def v7(db: sqlite_utils.Database) -> None:
    """This database's own random id: with it, an incident's key is unique across installs."""
    db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('install_id', lower(hex(randomblob(6))))")


def v8(db: sqlite_utils.Database) -> None:
    """Heartbeat targets' pings, so that a restart forgets none: by target name (a token is never stored)."""
    db.execute(
        """CREATE TABLE IF NOT EXISTS heartbeats (
            target TEXT PRIMARY KEY, since REAL NOT NULL, last_ping REAL, last_start REAL, last_fail REAL)"""
    )


def v9(db: sqlite_utils.Database) -> None:
    """The web UI: check phases on each result, memory size over time, and the indexes its pages read by."""
    if "phases" not in db["results"].columns_dict:
        db["results"].add_column("phases", str)  # type: ignore[union-attr]
    db.execute(
        """CREATE TABLE IF NOT EXISTS memory_samples (
            at REAL NOT NULL, bytes INTEGER, tokens INTEGER, steps INTEGER, incidents INTEGER, db_bytes INTEGER)"""
    )
    db.execute("CREATE INDEX IF NOT EXISTS memory_samples_at ON memory_samples (at)")
    for name, sql in WEB_INDEXES.items():
        db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {sql}")
    # Checks, passes and latency per target and hour, kept by a trigger on every insert however it is
    # made: uptime and charts over 30 days add up 720 rows instead of reading 50,000 results.
    db.execute(
        """CREATE TABLE IF NOT EXISTS results_hourly (
            target TEXT NOT NULL, hour INTEGER NOT NULL, checks INTEGER NOT NULL, passed INTEGER NOT NULL,
            latency_sum REAL NOT NULL, latency_max REAL NOT NULL, PRIMARY KEY (target, hour)) WITHOUT ROWID"""
    )
    db.execute(
        """INSERT OR REPLACE INTO results_hourly (target, hour, checks, passed, latency_sum, latency_max)
           SELECT target, CAST(checked_at / 3600 AS INTEGER), count(*), sum(ok), total(latency_ms),
                  coalesce(max(latency_ms), 0) FROM results GROUP BY 1, 2"""
    )
    db.execute(
        """CREATE TRIGGER IF NOT EXISTS results_hourly_count AFTER INSERT ON results BEGIN
               INSERT INTO results_hourly (target, hour, checks, passed, latency_sum, latency_max)
               VALUES (new.target, CAST(new.checked_at / 3600 AS INTEGER), 1, new.ok, coalesce(new.latency_ms, 0),
                       coalesce(new.latency_ms, 0))
               ON CONFLICT (target, hour) DO UPDATE SET checks = checks + 1, passed = passed + excluded.passed,
                   latency_sum = latency_sum + excluded.latency_sum,
                   latency_max = max(latency_max, excluded.latency_max);
           END"""
    )


# What the web pages look rows up by (bench/pages.py times them with and without).
WEB_INDEXES = {
    "incidents_target_id": "incidents (target, id)",
    "agent_runs_incident": "agent_runs (incident_id)",
    "outbox_key": "outbox (key)",
}
