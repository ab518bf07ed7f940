"""Every SQL statement of the project: results, incidents, agent runs, memory, audit, outbox.

A store is one SQLite file in WAL mode (the default), or one PostgreSQL database that several replicas
share (:mod:`monitor.store.engines`). Each write is one transaction, so a crash never leaves half a
record. Migrations run on open (:mod:`monitor.store.schema`), so a database upgrades in place. The store
is safe to share between threads (one connection, one lock); other processes may use the same database
at the same time.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from monitor.checks import Result
from monitor.store import engines, schema
from monitor.store.engines import BUSY_TIMEOUT, database_errors, is_url
from monitor.store.schema import INCIDENT_TEXT, SCHEMA_VERSION, WEB_INDEXES
from monitor.urls import redact_text

__all__ = ["BUSY_TIMEOUT", "INCIDENT_TEXT", "SCHEMA_VERSION", "Notifier", "Store", "database_errors", "is_url",
           "result_row"]

# What to queue for an incident as stored (None: gone): (receiver, payload) pairs.
Notifier = Callable[[dict[str, Any] | None], list[tuple[str, dict[str, Any]]]]
EXPORTED = {"incidents": "id", "agent_runs": "id", "agent_steps": "id", "memory": "key"}  # table: its order
INCIDENT_SEEN = "SELECT id FROM incidents WHERE target = ? AND pattern = ? AND opened_at = ?"
RUN_SEEN = "SELECT id FROM agent_runs WHERE started_at = ? AND task = ?"
IMPORT_BATCH = 500  # rows per transaction of an import; a running daemon writes in between
NO_ID = 2**63 - 1  # above every id: a cursor that starts at the newest
MEMORY_UPSERT = """INSERT INTO memory (key, value, updated_at) VALUES (?, ?, ?)
                   ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"""


def fts_query(text: str) -> str:
    """Turn free text into a safe FTS5 query: any of its words, each quoted (FTS5 reads a quoted
    ``job_missing`` as the phrase "job missing")."""
    words = re.findall(r"\w{2,}", text.lower())  # \w: données and 超时 are words too
    return " OR ".join(f'"{w}"' for w in dict.fromkeys(words))


def tsquery(text: str) -> str:
    """The same as a PostgreSQL ``tsquery``: any of its words, each quoted; ``_`` separates words, as
    punctuation does in the index (``schema.PG_INCIDENT_TEXT``)."""
    words = re.findall(r"[^\W_]{2,}", text.lower())
    return " | ".join(f"'{w}'" for w in dict.fromkeys(words))


class Store:
    """The database. ``Store(":memory:")`` works for tests that need no file.

    ``location`` is a SQLite file, or a ``postgresql://`` URL. ``replica`` is the daemon replica this
    store writes for (``replica_index``): its agent runs and its notifications are its own.
    """

    def __init__(self, location: str | Path, *, clock: Callable[[], float] = time.time,
                 timeout: float | None = None, replica: int = 0) -> None:
        self.engine = engines.connect(str(location), timeout=timeout)
        self.path = self.engine.shown  # what messages name: a URL's password is hidden
        self.clock = clock
        self.replica = replica
        self.errors = self.engine.unavailable  # a write that meets one is kept and tried again
        self._timeout = timeout
        self._lock = self.engine.lock
        self._written: dict[str, int] = {}  # results stored through this object, by target
        self._columns: dict[str, tuple[str, ...]] = {}  # each table's, read once (migrations run first)
        self.migrate()

    def reopen(self, *, timeout: float | None = None) -> Store:
        """Another connection to the same database (its own lock), for another thread."""
        return Store(self.engine.location, clock=self.clock, timeout=timeout, replica=self.replica)

    def claim_replica(self) -> bool:
        """Hold this store's replica number in the shared database while it is open; False when another
        daemon holds it (two daemons as one replica would check the same targets twice)."""
        return self.engine.claim(self.replica)

    @property
    def shared(self) -> bool:
        """Whether other daemons may write this database too (PostgreSQL)."""
        return is_url(self.engine.location)

    # -- plumbing -----------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One atomic write: all of it is committed, or none."""
        with self.engine.transaction() as tx:
            yield tx

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self.engine.execute(sql, params)
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=False)) for row in cursor.fetchall()]

    def _one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._lock:
            row = self.engine.execute(sql, params).fetchone()
        return row[0] if row else None

    @property
    def version(self) -> int:
        return self.engine.version()

    def migrate(self) -> None:
        """Bring the schema up to date: SQLite one migration per transaction, PostgreSQL in one."""
        if isinstance(self.engine, engines.Postgres):
            with self._lock:
                schema.migrate_postgres(self.engine.conn)
            return
        assert isinstance(self.engine, engines.Sqlite)
        while self.version < SCHEMA_VERSION:
            step = self.version
            with self.transaction():
                schema.SQLITE_MIGRATIONS[step](self.engine.db)
                self.engine.execute(f"PRAGMA user_version = {step + 1}")

    def close(self) -> None:
        self.engine.close()

    def size_bytes(self) -> int:
        return self.engine.size_bytes()

    # -- check results ------------------------------------------------------

    def add_results(self, results: list[Result]) -> None:
        """Store a batch of results in one transaction."""
        with self.transaction() as db:
            db.executemany(
                """INSERT INTO results (target, checked_at, ok, severity, status_code, latency_ms,
                   error, detail, cert_expires_at, phases) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                [tuple(result_row(result).values()) for result in results],
            )
            for result in results:
                self._written[result.name] = self._written.get(result.name, 0) + 1

    def results_written(self, target: str) -> int:
        """How many results of ``target`` this object stored: a reader that keeps them in memory can tell
        whether another writer stored some in between (then it reads them again)."""
        return self._written.get(target, 0)

    def recent_results(self, target: str, n: int = 20) -> list[dict[str, Any]]:
        """The last ``n`` results of a target, newest first."""
        return self._rows(
            "SELECT * FROM results WHERE target = ? ORDER BY checked_at DESC, id DESC LIMIT ?",
            (target, n),
        )

    def latest_results(self) -> list[dict[str, Any]]:
        """The newest result of every target, by target name."""
        return self._rows(
            """SELECT * FROM results WHERE id IN (
                   SELECT (SELECT id FROM results AS r WHERE r.target = names.target
                           ORDER BY checked_at DESC, id DESC LIMIT 1) FROM (SELECT DISTINCT target FROM results) AS names)
               ORDER BY target"""
        )

    def count_results(self, target: str | None = None) -> int:
        if target is None:
            return int(self._scalar("SELECT count(*) FROM results"))
        return int(self._scalar("SELECT count(*) FROM results WHERE target = ?", (target,)))

    def prune(self, older_than: float) -> dict[str, int]:
        """Retention: delete results, the steps of agent runs and delivered notifications older than
        ``older_than`` (epoch seconds). Incidents and the runs' outcomes are kept: they are what is recalled."""
        with self.transaction() as db:
            return {
                "results": self._prune_results(db, older_than),
                "agent_steps": db.execute(
                    "DELETE FROM agent_steps WHERE run_id IN (SELECT id FROM agent_runs WHERE started_at < ?)",
                    (older_than,)).rowcount,
                "outbox": db.execute("DELETE FROM outbox WHERE delivered_at < ? OR dropped_at < ?",
                                     (older_than, older_than)).rowcount,
            }

    @staticmethod
    def _prune_results(db: Any, older_than: float) -> int:
        db.execute("DELETE FROM results_hourly WHERE hour < ?", (math.floor(older_than / 3600),))
        return int(db.execute("DELETE FROM results WHERE checked_at < ?", (older_than,)).rowcount)

    # -- incidents ----------------------------------------------------------

    def open_incident(self, target: str, pattern: str, summary: str, severity: str = "critical",
                      silenced: bool = False, root_cause: str | None = None) -> int:
        """A new open incident; ``root_cause`` is the detectors' literal reading until a diagnosis replaces it."""
        now = self.clock()
        with self.transaction() as db:
            cursor = db.execute(
                """INSERT INTO incidents (target, pattern, severity, status, opened_at, updated_at,
                   summary, silenced, root_cause) VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?) RETURNING id""",
                (target, pattern, severity, now, now, summary, int(silenced), root_cause),
            )
            return inserted(cursor) or 0

    def open_incident_unless_open(self, target: str, pattern: str, summary: str, severity: str = "critical",
                                  silenced: bool = False, root_cause: str | None = None,
                                  notify: Notifier | None = None) -> int | None:
        """Like :meth:`open_incident`, but None (and nothing written) when the target has an open incident.

        ``notify`` makes the first notifications of the new incident, queued in the same transaction:
        a crash never leaves an incident that nobody was told about.
        """
        now = self.clock()
        with self.transaction() as db:
            cursor = db.execute(
                """INSERT INTO incidents (target, pattern, severity, status, opened_at, updated_at,
                   summary, silenced, root_cause) VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?)
                   ON CONFLICT (target) WHERE status = 'open' DO NOTHING RETURNING id""",
                (target, pattern, severity, now, now, summary, int(silenced), root_cause),
            )
            incident_id = inserted(cursor)
            if incident_id is None:
                return None
            if notify is not None:
                self._enqueue_incident(db, incident_id, notify)
            return incident_id

    def update_incident(self, incident_id: int, *, only_open: bool = False, expect: dict[str, Any] | None = None,
                        **fields: Any) -> bool:
        """Set fields; True when a row changed. ``only_open`` and ``expect`` (field values the row must
        still have) make it a compare-and-set, so of two writers making the same change only one does."""
        allowed = {"pattern", "severity", "summary", "diagnosis", "suspected_cause", "resolution",
                   "notes", "agent_state", "silenced", "root_cause", "related_incident", "confidence"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update incident fields {sorted(unknown)}")
        fields["updated_at"] = self.clock()
        assignments = ", ".join(f"{name} = ?" for name in fields)
        expect = expect or {}
        if set(expect) - allowed:
            raise ValueError(f"cannot compare incident fields {sorted(set(expect) - allowed)}")
        where = " AND ".join(["id = ?", *(["status = 'open'"] if only_open else []), *(f"{n} IS NOT DISTINCT FROM ?" for n in expect)])
        with self.transaction() as db:
            cursor = db.execute(f"UPDATE incidents SET {assignments} WHERE {where}",
                                (*fields.values(), incident_id, *expect.values()))
            return cursor.rowcount == 1

    def append_incident_note(self, incident_id: int, note: str) -> None:
        with self.transaction() as db:
            db.execute(
                """UPDATE incidents SET notes = trim(coalesce(notes, '') || ? || ?),
                   updated_at = ? WHERE id = ?""",
                ("\n", redact_text(note), self.clock(), incident_id),
            )

    def close_incident(self, incident_id: int, resolution: str | None = None) -> bool:
        """Resolve the incident; True when it was open, so that this call is the transition."""
        now = self.clock()
        note = redact_text(resolution) if resolution else resolution
        with self.transaction() as db:
            closed = inserted(db.execute(
                """UPDATE incidents SET status = 'resolved', closed_at = ?, updated_at = ?,
                   resolution = coalesce(?, resolution) WHERE id = ? AND status = 'open' RETURNING id""",
                (now, now, note, incident_id)))
            if closed is None:  # resolved already: only a new resolution note changes it
                db.execute("UPDATE incidents SET updated_at = ?, resolution = coalesce(?, resolution) WHERE id = ?",
                           (now, note, incident_id))
            return closed is not None

    @property
    def install_id(self) -> str:
        """A random id made when this database was created: no other database has it."""
        return str(self._scalar("SELECT value FROM meta WHERE key = 'install_id'"))

    def incident_key(self, incident_id: int) -> str:
        """The incident's identity outside this database (alerts, webhooks): ``<install id>-<id>``."""
        return f"{self.install_id}-{incident_id}"

    def incident(self, incident_id: int) -> dict[str, Any] | None:
        return self._one("SELECT * FROM incidents WHERE id = ?", (incident_id,))

    def last_resolved_incident(self, target: str) -> dict[str, Any] | None:
        return self._one("SELECT * FROM incidents WHERE target = ? AND status = 'resolved' ORDER BY closed_at DESC LIMIT 1",
                         (target,))

    def count_open_incidents(self) -> int:
        return int(self._scalar("SELECT count(*) FROM incidents WHERE status = 'open'"))

    def open_incidents(self, target: str | None = None) -> list[dict[str, Any]]:
        if target is None:
            return self._rows("SELECT * FROM incidents WHERE status = 'open' ORDER BY id")
        return self._rows("SELECT * FROM incidents WHERE status = 'open' AND target = ? ORDER BY id", (target,))

    def incidents(self, status: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        if status is None:
            return self._rows("SELECT * FROM incidents ORDER BY id DESC LIMIT ?", (limit,))
        return self._rows("SELECT * FROM incidents WHERE status = ? ORDER BY id DESC LIMIT ?", (status, limit))

    def count_incidents(self) -> int:
        return int(self._scalar("SELECT count(*) FROM incidents"))

    def search_incidents(self, query: str, k: int = 5, exclude: int | None = None) -> list[dict[str, Any]]:
        """Full-text search over incident text; incidents with a resolution first, then by rank (lower is
        better: FTS5's bm25, or PostgreSQL's ts_rank negated)."""
        if self.shared:
            match = tsquery(query)
            return self._rows(
                f"""SELECT incidents.*, -ts_rank({schema.PG_INCIDENT_TEXT}, q) AS rank
                    FROM incidents, to_tsquery('simple', ?) AS q
                    WHERE {schema.PG_INCIDENT_TEXT} @@ q AND incidents.id != ?
                    ORDER BY (resolution IS NOT NULL AND resolution != '') DESC, rank, id DESC LIMIT ?""",
                (match, exclude or -1, k)) if match else []
        match = fts_query(query)
        if not match:
            return []
        return self._rows(
            """SELECT incidents.*, incidents_fts.rank AS rank FROM incidents_fts
               JOIN incidents ON incidents.id = incidents_fts.rowid
               WHERE incidents_fts MATCH ? AND incidents.id != ?
               ORDER BY (incidents.resolution IS NOT NULL AND incidents.resolution != '') DESC,
                        incidents_fts.rank LIMIT ?""",
            (match, exclude or -1, k),
        )

    def similar_incidents(self, target: str, pattern: str, k: int = 3,
                          exclude: int | None = None) -> list[dict[str, Any]]:
        """Past incidents to recall: same target and pattern first, then same target, then text."""
        same = self._rows(
            """SELECT * FROM incidents WHERE target = ? AND id != ?
               ORDER BY (pattern = ?) DESC,
                        (resolution IS NOT NULL AND resolution != '') DESC, id DESC LIMIT ?""",
            (target, exclude or -1, pattern, k),
        )
        found = {row["id"] for row in same}
        if len(same) < k:
            for row in self.search_incidents(f"{target} {pattern}", k, exclude):
                if row["id"] not in found and len(same) < k:
                    same.append(row)
                    found.add(row["id"])
        return same

    # -- agent runs and steps ---------------------------------------------------

    def start_run(self, task: str, *, target: str | None = None, incident_id: int | None = None,
                  model: str | None = None) -> int:
        with self.transaction() as db:
            cursor = db.execute(
                """INSERT INTO agent_runs (incident_id, target, task, model, state, started_at, replica)
                   VALUES (?, ?, ?, ?, 'running', ?, ?) RETURNING id""",
                (incident_id, target, task, model, self.clock(), self.replica),
            )
            return inserted(cursor) or 0

    def add_step(self, run_id: int, step: dict[str, Any]) -> None:
        """Save one finished step, and add its tokens to the run, in one transaction."""
        columns = ["step_number", "kind", "started_at", "duration", "model_output", "tool_calls",
                   "observations", "error", "input_tokens", "output_tokens", "is_final", "tool_ok",
                   "tool_seconds"]
        values = [step.get(c) for c in columns]
        with self.transaction() as db:
            db.execute(
                f"INSERT INTO agent_steps (run_id, {', '.join(columns)}) VALUES (?, {', '.join('?' * len(columns))})",
                (run_id, *values),
            )
            db.execute(
                """UPDATE agent_runs SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?
                   WHERE id = ?""",
                (step.get("input_tokens") or 0, step.get("output_tokens") or 0, run_id),
            )

    def finish_run(self, run_id: int, state: str, final_answer: str | None = None,
                   error: str | None = None) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE agent_runs SET state = ?, final_answer = ?, error = ?, ended_at = ? WHERE id = ?",
                (state, final_answer, error, self.clock(), run_id),
            )

    def record_diagnosis(self, run_id: int | None, incident_id: int | None, *, diagnosis: str, root_cause: str,
                         related_incident: int | None, confidence: str, suspected_cause: str) -> None:
        """A structured diagnosis, on the run and (when there is one) its incident, in one transaction."""
        now = self.clock()
        with self.transaction() as db:
            if run_id is not None:
                db.execute(
                    """UPDATE agent_runs SET diagnosis = ?, root_cause = ?, related_incident = ?, confidence = ?
                       WHERE id = ?""", (diagnosis, root_cause, related_incident, confidence, run_id))
            if incident_id is not None:
                db.execute(
                    """UPDATE incidents SET diagnosis = ?, root_cause = ?, related_incident = ?, confidence = ?,
                       suspected_cause = ?, updated_at = ? WHERE id = ?""",
                    (diagnosis, root_cause, related_incident, confidence, suspected_cause, now, incident_id))

    def run(self, run_id: int) -> dict[str, Any] | None:
        return self._one("SELECT * FROM agent_runs WHERE id = ?", (run_id,))

    def last_run_id(self) -> int | None:
        value = self._scalar("SELECT max(id) FROM agent_runs")
        return int(value) if value is not None else None

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM agent_runs ORDER BY id DESC LIMIT ?", (limit,))

    def runs_since(self, since: float) -> int:
        """Agent runs this replica started since ``since``: ``agent.max_runs_per_hour`` is each daemon's."""
        return int(self._scalar("SELECT count(*) FROM agent_runs WHERE started_at >= ? AND replica = ?",
                                (since, self.replica)))

    def steps(self, run_id: int) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM agent_steps WHERE run_id = ? ORDER BY step_number, id", (run_id,))

    def step_stats(self) -> list[dict[str, Any]]:
        """Per step kind: count, bytes of text, tool successes and tool seconds."""
        return self._rows(
            """SELECT kind, count(*) AS steps,
                      sum(length(coalesce(model_output, '')) + length(coalesce(tool_calls, ''))
                          + length(coalesce(observations, '')) + length(coalesce(error, ''))) AS bytes,
                      count(tool_ok) AS tool_calls, sum(coalesce(tool_ok, 0)) AS tool_ok,
                      sum(coalesce(tool_seconds, 0)) AS tool_seconds
               FROM agent_steps GROUP BY kind ORDER BY kind"""
        )

    def mark_interrupted_runs(self) -> int:
        """Runs this replica left 'running' by a crash end as 'interrupted' (their saved steps stay), and their
        incidents say so. Other replicas' runs are theirs: they may be running now."""
        now = self.clock()
        with self.transaction() as db:
            db.execute(
                """UPDATE incidents SET agent_state = 'interrupted', updated_at = ?,
                   notes = trim(coalesce(notes, '') || ? || 'agent run #' || r.id ||
                       ' was cut short (the process stopped or crashed); the detection stands')
                   FROM (SELECT id, incident_id FROM agent_runs WHERE state = 'running' AND replica = ?) AS r
                   WHERE incidents.id = r.incident_id""", (now, "\n", self.replica))
            return int(db.execute(
                "UPDATE agent_runs SET state = 'interrupted', ended_at = ? WHERE state = 'running' AND replica = ?",
                (now, self.replica)).rowcount)

    # -- export and import ---------------------------------------------------------

    def dump(self) -> dict[str, list[dict[str, Any]]]:
        """Long-term memory as plain rows: incidents, agent runs and steps, working memory."""
        return {table: self._rows(f"SELECT * FROM {table} ORDER BY {order}") for table, order in EXPORTED.items()}

    def load(self, data: dict[str, list[dict[str, Any]]], *, batch: int = IMPORT_BATCH,
             progress: Callable[[dict[str, int]], None] | None = None) -> dict[str, int]:
        """Add dumped rows (checked by :mod:`monitor.exports`); returns how many were new.

        Incidents and runs get new ids and references follow them. Rows already present (the same
        incident opened at the same time, the same run started at the same time) are not added twice,
        so importing a file again changes nothing. Rows go in transactions of about ``batch`` rows,
        each lookup on an index, so a running daemon's writes get in between; ``progress`` is called
        after each. A run and its steps share a transaction, so an import cut short completes when
        it is run again.
        """
        incident_ids: dict[Any, int] = {}
        added = dict.fromkeys(("incidents", "agent_runs", "agent_steps", "memory"), 0)
        steps: dict[Any, list[dict[str, Any]]] = {}
        for row in data.get("agent_steps", []):
            steps.setdefault(row.get("run_id"), []).append(row)
        for rows in _batches(data.get("incidents", []), batch, lambda row: 1):
            with self._yielding_transaction() as db:
                for row in rows:
                    found = db.execute(INCIDENT_SEEN, (row["target"], row["pattern"], row["opened_at"])).fetchone()
                    incident_ids[row.get("id")] = found[0] if found else self._insert(
                        db, "incidents", _one_open(db, row))
                    added["incidents"] += not found
            if progress is not None:
                progress(added)
        for rows in _batches(data.get("agent_runs", []), batch, lambda row: 1 + len(steps.get(row.get("id"), []))):
            with self._yielding_transaction() as db:
                for row in rows:
                    if db.execute(RUN_SEEN, (row["started_at"], row["task"])).fetchone() is not None:
                        continue
                    run_id = self._insert(db, "agent_runs", {**row, "incident_id": incident_ids.get(row.get("incident_id"))})
                    added["agent_runs"] += 1
                    for step in steps.get(row.get("id"), []):
                        self._insert(db, "agent_steps", {**step, "run_id": run_id})
                        added["agent_steps"] += 1
            if progress is not None:
                progress(added)
        with self.transaction() as db:
            for row in data.get("memory", []):
                db.execute(MEMORY_UPSERT, (row["key"], row["value"], row["updated_at"]))
                added["memory"] += 1
        return added

    @contextmanager
    def _yielding_transaction(self) -> Iterator[Any]:
        """A transaction, then a pause as long as it took (at most 0.1 s): another process waiting for the
        lock (its busy handler polls every 1 to 100 ms) gets its turn between an import's batches."""
        started = time.monotonic()
        with self.transaction() as db:
            yield db
        time.sleep(min(0.1, time.monotonic() - started))

    def _insert(self, db: Any, table: str, row: dict[str, Any]) -> int:
        if table not in self._columns:
            self._columns[table] = self.engine.columns(table)
        columns = [c for c in self._columns[table] if c != "id" and c in row]
        cursor = db.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) RETURNING id",
            [int(row[c]) if isinstance(row[c], bool) else row[c] for c in columns],  # an exported flag may be true/false
        )
        return inserted(cursor) or 0

    def counts(self) -> dict[str, int]:
        """Rows per long-term table, and open incidents."""
        out = {table: int(self._scalar(f"SELECT count(*) FROM {table}")) for table in (*EXPORTED, "results")}
        out["open_incidents"] = int(self._scalar("SELECT count(*) FROM incidents WHERE status = 'open'"))
        return out

    # -- reads for the web pages and the JSON API (paginated, each on an index) ------------

    def target_names(self) -> list[str]:
        """Every target with a stored result, by name: one index seek per name, not a scan."""
        return [row["name"] for row in self._rows(
            """WITH RECURSIVE names(name) AS (
                   SELECT min(target) FROM results
                   UNION ALL SELECT (SELECT min(target) FROM results WHERE target > names.name)
                   FROM names WHERE names.name IS NOT NULL)
               SELECT name FROM names WHERE name IS NOT NULL""")]

    def latest_result(self, target: str) -> dict[str, Any] | None:
        return self._one("SELECT * FROM results WHERE target = ? ORDER BY checked_at DESC, id DESC LIMIT 1", (target,))

    def latest_of(self, targets: list[str]) -> dict[str, dict[str, Any]]:
        """The newest result of each of ``targets`` that has one, by name: one index seek per target, in one
        statement."""
        names, param = self.engine.names(targets)
        rows = self._rows(
            f"""SELECT results.* FROM {names} JOIN results ON results.id = (
                    SELECT id FROM results WHERE target = names.value ORDER BY checked_at DESC, id DESC LIMIT 1)""",
            (param,))
        return {row["target"]: row for row in rows}

    def latest_states(self, targets: list[str]) -> dict[str, dict[str, Any]]:
        """``checked_at``, ``ok`` and ``severity`` of each target's newest result, by name: what a state is
        read from, for a whole fleet (half the cost of ``latest_of``, which builds every column)."""
        names, param = self.engine.names(targets)
        with self._lock:
            rows = self.engine.execute(
                f"""SELECT results.target, results.checked_at, results.ok, results.severity FROM {names}
                    JOIN results ON results.id = (SELECT id FROM results WHERE target = names.value
                                                  ORDER BY checked_at DESC, id DESC LIMIT 1)""",
                (param,)).fetchall()
        return {target: {"checked_at": at, "ok": ok, "severity": severity} for target, at, ok, severity in rows}

    def uptime(self, target: str, windows: dict[str, float], now: float) -> dict[str, dict[str, Any]]:
        """Per window name (seconds back from ``now``): checks, passes and the share that passed (None: no checks)."""
        return self.uptimes([target], windows, now)[target]

    def uptimes(self, targets: list[str], windows: dict[str, float], now: float) -> dict[str, dict[str, dict[str, Any]]]:
        """``uptime`` of several targets at once: two statements per window, however many targets.

        Whole hours come from ``results_hourly``; only the part of an hour where a window starts is read
        from the results, so 30 days cost about as much as one day."""
        names, param = self.engine.names(targets)
        out: dict[str, dict[str, dict[str, Any]]] = {target: {} for target in targets}
        for window, seconds in windows.items():
            since = now - seconds
            hour = math.ceil(since / 3600)
            with self._lock:
                whole = self.engine.execute(
                    f"""SELECT target, sum(checks), sum(passed) FROM results_hourly
                        WHERE target IN (SELECT value FROM {names}) AND hour >= ? GROUP BY target""",
                    (param, hour)).fetchall()
                edge = self.engine.execute(
                    f"""SELECT target, count(*), sum(ok) FROM results WHERE target IN (SELECT value FROM {names})
                        AND checked_at >= ? AND checked_at < ? GROUP BY target""", (param, since, hour * 3600)).fetchall()
            counts = {target: [0, 0] for target in targets}
            for target, checks, passed in (*whole, *edge):
                counts[target][0] += checks or 0
                counts[target][1] += passed or 0
            for target, (checks, passed) in counts.items():
                out[target][window] = {"checks": checks, "passed": passed, "ratio": passed / checks if checks else None}
        return out

    def latency_buckets(self, target: str, since: float, until: float, buckets: int) -> list[dict[str, Any]]:
        """The check history cut in ``buckets`` equal slices: checks, failures, mean and max latency of each.

        Slices of an hour or more are read from ``results_hourly`` (by the hour each falls in)."""
        width = max((until - since) / buckets, 1e-9)
        if width >= 3600:
            return self._rows(
                f"""SELECT {self.engine.trunc("(hour * 3600 - ?) / ?")} AS bucket, sum(checks) AS checks,
                          sum(checks - passed) AS failures, sum(latency_sum) / sum(checks) AS mean_ms,
                          max(latency_max) AS max_ms
                   FROM results_hourly WHERE target = ? AND hour >= ? AND hour <= ?
                   GROUP BY bucket ORDER BY bucket""",
                (math.floor(since / 3600) * 3600, width, target, math.floor(since / 3600), math.floor(until / 3600)))
        return self._rows(
            f"""SELECT {self.engine.trunc("(checked_at - ?) / ?")} AS bucket, count(*) AS checks,
                      sum(1 - ok) AS failures, avg(latency_ms) AS mean_ms, max(latency_ms) AS max_ms
               FROM results WHERE target = ? AND checked_at >= ? AND checked_at <= ?
               GROUP BY bucket ORDER BY bucket""", (since, width, target, since, until))

    def results_page(self, target: str, *, limit: int = 50, before: tuple[float, int] | None = None,
                     since: float | None = None) -> list[dict[str, Any]]:
        """A target's results, newest first, older than the ``before`` cursor (checked_at, id)."""
        at, row_id = before or (float("inf"), NO_ID)
        # a range on (target, checked_at) that the index walks backwards; an OR here would sort every row
        return self._rows(
            """SELECT * FROM results WHERE target = ? AND checked_at <= ? AND checked_at >= ?
               AND NOT (checked_at = ? AND id >= ?) ORDER BY checked_at DESC, id DESC LIMIT ?""",
            (target, at, since if since is not None else float("-inf"), at, row_id, limit))

    def results_between(self, target: str, since: float, until: float, limit: int = 200) -> list[dict[str, Any]]:
        """A target's results in [since, until], oldest first, at most ``limit`` (the oldest ones)."""
        return self._rows(
            """SELECT * FROM results WHERE target = ? AND checked_at >= ? AND checked_at <= ?
               ORDER BY checked_at, id LIMIT ?""", (target, since, until, limit))

    def incidents_page(self, *, target: str | None = None, status: str | None = None, limit: int = 50,
                       before: int | None = None, since: float | None = None) -> list[dict[str, Any]]:
        """Incidents newest first, with ids below ``before``; only ``target``'s or ``status``'s when given."""
        where = ["id < ?"]
        params: list[Any] = [before or NO_ID]
        for column, value in (("target", target), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            where.append("(closed_at IS NULL OR closed_at >= ?)")
            params.append(since)
        return self._rows(f"SELECT * FROM incidents WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?",
                          (*params, limit))

    def incidents_by_id(self, ids: list[int]) -> list[dict[str, Any]]:
        if not ids:
            return []
        return self._rows(f"SELECT * FROM incidents WHERE id IN ({', '.join('?' * len(ids))}) ORDER BY id", ids)

    def runs_page(self, *, limit: int = 50, before: int | None = None, incident_id: int | None = None
                  ) -> list[dict[str, Any]]:
        """Agent runs newest first, with ids below ``before``; only ``incident_id``'s when given."""
        if incident_id is not None:
            return self._rows("SELECT * FROM agent_runs WHERE incident_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
                              (incident_id, before or NO_ID, limit))
        return self._rows("SELECT * FROM agent_runs WHERE id < ? ORDER BY id DESC LIMIT ?",
                          (before or NO_ID, limit))

    def recall_steps(self, run_ids: list[int]) -> list[dict[str, Any]]:
        """The recalled past incidents that were put in front of these runs (one 'recall' step each)."""
        if not run_ids:
            return []
        return self._rows(f"""SELECT * FROM agent_steps WHERE kind = 'recall'
                              AND run_id IN ({', '.join('?' * len(run_ids))}) ORDER BY run_id""", run_ids)

    def notifications_for(self, incident_id: int) -> list[dict[str, Any]]:
        """What was queued for the incident, to whom, and what became of it (delivered, pending, dropped)."""
        return self._rows(
            """SELECT id, receiver, payload, attempts, created_at, delivered_at, dropped_at, last_error
               FROM outbox WHERE key = ? ORDER BY id""", (f"incident:{incident_id}",))

    def incident_counts(self) -> list[dict[str, Any]]:
        """Incidents per target and pattern: how many, how many open, how many with a resolution note."""
        return self._rows(
            """SELECT target, pattern, count(*) AS incidents, count(*) FILTER (WHERE status = 'open') AS open,
                      count(*) FILTER (WHERE resolution IS NOT NULL AND resolution != '') AS resolved_with_note
               FROM incidents GROUP BY target, pattern ORDER BY incidents DESC, target, pattern""")

    def resolution_notes(self, limit: int = 50) -> list[dict[str, Any]]:
        """The newest incidents with a resolution note: what recall puts in front of the agent first."""
        return self._rows(
            """SELECT id, target, pattern, root_cause, resolution, closed_at FROM incidents
               WHERE resolution IS NOT NULL AND resolution != '' ORDER BY id DESC LIMIT ?""", (limit,))

    def add_memory_sample(self, sample: dict[str, Any], *, keep_since: float) -> None:
        """One point of memory size over time; points older than ``keep_since`` go in the same transaction."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO memory_samples (at, bytes, tokens, steps, incidents, db_bytes) VALUES (?, ?, ?, ?, ?, ?)",
                (self.clock(), sample.get("bytes"), sample.get("tokens_estimate"),
                 sum((sample.get("steps") or {}).values()), sample.get("incidents"), sample.get("db_bytes")))
            db.execute("DELETE FROM memory_samples WHERE at < ?", (keep_since,))

    def memory_samples(self, since: float, buckets: int = 200) -> list[dict[str, Any]]:
        """Memory size since ``since``, at most ``buckets`` points (the last sample of each slice)."""
        first = self._scalar("SELECT min(at) FROM memory_samples WHERE at >= ?", (since,))
        since = since if first is None else first
        width = max((self.clock() - since) / buckets, 1e-9) * (1 + 1e-9)
        return self._rows(
            f"""SELECT at, bytes, tokens, steps, incidents, db_bytes FROM (
                    SELECT *, row_number() OVER (PARTITION BY {self.engine.trunc("(at - ?) / ?")} ORDER BY at DESC) AS n
                    FROM memory_samples WHERE at >= ?) AS slices WHERE n = 1 ORDER BY at""", (since, width, since))

    def audit_web_action(self, incident_id: int | None, action: str, *, ok: bool, detail: str,
                         note: str | None = None, client: str | None = None) -> int:
        with self.transaction() as db:
            cursor = db.execute(
                """INSERT INTO web_actions (at, incident_id, action, note, ok, detail, client)
                   VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id""",
                (self.clock(), incident_id, action[:32], redact_text(note)[:2000] if note else None, int(ok),
                 detail[:500], client))
            return inserted(cursor) or 0

    def web_actions(self, incident_id: int) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM web_actions WHERE incident_id = ? ORDER BY id", (incident_id,))

    def drop_web_indexes(self) -> None:
        """For bench/pages.py: the pages without the indexes migration 9 added."""
        with self.transaction() as db:
            for name in WEB_INDEXES:
                db.execute(f"DROP INDEX IF EXISTS {name}")

    def create_web_indexes(self) -> None:
        with self.transaction() as db:
            for name, sql in WEB_INDEXES.items():
                db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {sql}")
            db.execute("ANALYZE")

    def drop_hourly_counts(self) -> None:
        """For bench/cycle_cost.py: results stored without keeping ``results_hourly``."""
        with self.transaction() as db:
            db.execute("DROP TRIGGER IF EXISTS results_hourly_count" + (" ON results" if self.shared else ""))

    # -- working memory, audit, outbox ----------------------------------------------

    def watch_heartbeats(self, targets: list[str], since: float) -> None:
        """Heartbeat rows for ``targets``; one new to the database is due from ``since``."""
        with self.transaction() as db:
            db.executemany("INSERT INTO heartbeats (target, since) VALUES (?, ?) ON CONFLICT DO NOTHING",
                           [(target, since) for target in targets])

    def record_ping(self, target: str, event: str, at: float) -> None:
        """A heartbeat's ping (``ping``, ``start`` or ``fail``) at ``at``; a ping or fail forgets a
        ``last_start`` that an earlier ping or fail already ended (``heartbeat.after``)."""
        column = {"ping": "last_ping", "start": "last_start", "fail": "last_fail"}[event]
        ended = ("" if event == "start" else f", last_start = CASE WHEN last_start <= "
                 f"{self.engine.greatest}(COALESCE(last_ping, 0), COALESCE(last_fail, 0)) THEN NULL ELSE last_start END")
        with self.transaction() as db:
            db.execute("INSERT INTO heartbeats (target, since) VALUES (?, ?) ON CONFLICT DO NOTHING", (target, at))
            db.execute(f"UPDATE heartbeats SET {column} = ?{ended} WHERE target = ?", (at, target))

    def heartbeat(self, target: str) -> dict[str, Any] | None:
        """A heartbeat's ``since``, ``last_ping``, ``last_start`` and ``last_fail`` (Unix times or None)."""
        return self._one("SELECT * FROM heartbeats WHERE target = ?", (target,))

    def save_memory(self, key: str, value: Any) -> None:
        with self.transaction() as db:
            db.execute(MEMORY_UPSERT, (self._own(key), json.dumps(value), self.clock()))

    def _own(self, key: str) -> str:
        """A working-memory key as this replica stores it: replica 0 (or a lone daemon) as named, replica 2's
        as ``key@2``, so that replicas sharing a database keep their working memories apart."""
        return key if self.replica == 0 else f"{key}@{self.replica}"

    def load_memory(self, key: str) -> Any:
        raw = self._scalar("SELECT value FROM memory WHERE key = ?", (self._own(key),))
        return json.loads(raw) if raw is not None else None

    def audit_remediation(self, target: str, action: str, *, dry_run: bool, ok: bool, detail: str,
                          run_id: int | None = None) -> int:
        with self.transaction() as db:
            cursor = db.execute(
                """INSERT INTO remediations (target, action, run_id, dry_run, ok, detail, at)
                   VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id""",
                (target, action, run_id, int(dry_run), int(ok), detail, self.clock()),
            )
            return inserted(cursor) or 0

    def claim_remediation(self, target: str, action: str, *, detail: str, run_id: int | None,
                          incident_id: int | None, per_incident: int, per_hour: int) -> int | None:
        """The write-ahead audit row of a real remediation call, or None when a limit is reached.

        Limits count real calls (``dry_run = 0``) of the incident (of the run, without one) and of the last
        hour; counting and claiming is one transaction, so calls made in parallel cannot all pass.
        """
        now = self.clock()
        with self.transaction() as db:
            self.engine.lock_table(db, "remediations")  # SQLite's BEGIN IMMEDIATE already holds every table
            hour = db.execute("SELECT count(*) FROM remediations WHERE dry_run = 0 AND at > ?",
                              (now - 3600,)).fetchone()[0]
            mine = db.execute(
                """SELECT count(*) FROM remediations WHERE dry_run = 0 AND (run_id = ? OR run_id IN
                   (SELECT id FROM agent_runs WHERE incident_id = ?))""", (run_id, incident_id)).fetchone()[0]
            if hour >= per_hour or mine >= per_incident:
                return None
            cursor = db.execute(
                """INSERT INTO remediations (target, action, run_id, dry_run, ok, detail, at)
                   VALUES (?, ?, ?, 0, 0, ?, ?) RETURNING id""", (target, action, run_id, detail, now))
            return inserted(cursor) or 0

    def complete_remediation(self, remediation_id: int, *, ok: bool, detail: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE remediations SET ok = ?, detail = ? WHERE id = ?", (int(ok), detail, remediation_id))

    def remediations(self) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM remediations ORDER BY id")

    def enqueue(self, receiver: str, payload: dict[str, Any], key: str | None = None) -> int:
        """Queue a notification; one with a ``key`` replaces what is still pending for that receiver and key."""
        with self.transaction() as db:
            return self._enqueue(db, receiver, payload, key)

    def enqueue_for_incident(self, incident_id: int, build: Notifier) -> int:
        """Queue what ``build`` makes of the incident as it is now, read in the same transaction.

        Each (receiver, payload) replaces the receiver's pending one for this incident, so only the
        newest state waits, and no state read before a later change can be queued after it.
        """
        with self.transaction() as db:
            return self._enqueue_incident(db, incident_id, build)

    def _enqueue_incident(self, db: Any, incident_id: int, build: Notifier) -> int:
        items = build(self._one("SELECT * FROM incidents WHERE id = ?", (incident_id,)))
        for receiver, payload in items:
            self._enqueue(db, receiver, payload, f"incident:{incident_id}")
        return len(items)

    def _enqueue(self, db: Any, receiver: str, payload: dict[str, Any], key: str | None) -> int:
        now = self.clock()
        if key is not None:
            db.execute(
                """UPDATE outbox SET dropped_at = ?, last_error = 'superseded by a newer state'
                   WHERE receiver = ? AND key = ? AND delivered_at IS NULL AND dropped_at IS NULL""",
                (now, receiver, key))
        cursor = db.execute(
            """INSERT INTO outbox (receiver, payload, key, next_attempt_at, created_at, replica)
               VALUES (?, ?, ?, ?, ?, ?) RETURNING id""",
            (receiver, json.dumps(payload), key, now, now, self.replica),
        )
        return inserted(cursor) or 0

    def due_notifications(self, now: float, limit: int = 50, receiver: str | None = None) -> list[dict[str, Any]]:
        """This replica's notifications due at ``now``, oldest first; only ``receiver``'s when given."""
        mine = "replica = ? AND delivered_at IS NULL AND dropped_at IS NULL AND next_attempt_at <= ?"
        if receiver is None:
            return self._rows(f"SELECT * FROM outbox WHERE {mine} ORDER BY id LIMIT ?", (self.replica, now, limit))
        return self._rows(f"SELECT * FROM outbox WHERE {mine} AND receiver = ? ORDER BY id LIMIT ?",
                          (self.replica, now, receiver, limit))

    def due_receivers(self, now: float) -> list[str]:
        """The receivers with a notification of this replica due at ``now``."""
        return [row["receiver"] for row in self._rows(
            """SELECT DISTINCT receiver FROM outbox WHERE replica = ? AND delivered_at IS NULL AND dropped_at IS NULL
               AND next_attempt_at <= ? ORDER BY receiver""", (self.replica, now))]

    def pending_notifications(self) -> int:
        return int(self._scalar(
            "SELECT count(*) FROM outbox WHERE replica = ? AND delivered_at IS NULL AND dropped_at IS NULL", (self.replica,)))

    def mark_delivered(self, item_id: int) -> None:
        with self.transaction() as db:
            db.execute("UPDATE outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id = ?",
                       (self.clock(), item_id))

    def drop_notification(self, item_id: int, reason: str) -> None:
        """Give up on a notification: it stays in the outbox, marked, until retention prunes it."""
        with self.transaction() as db:
            db.execute("UPDATE outbox SET dropped_at = ?, last_error = ? WHERE id = ?",
                       (self.clock(), reason[:500], item_id))

    def mark_failed(self, item_id: int, error: str, retry_at: float) -> None:
        with self.transaction() as db:
            db.execute(
                """UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?
                   WHERE id = ?""",
                (error[:500], retry_at, item_id),
            )


def result_row(result: Result) -> dict[str, Any]:
    """A result as ``recent_results`` returns it once stored (without its ``id``)."""
    return {"target": result.name, "checked_at": result.checked_at, "ok": int(result.ok),
            "severity": result.severity, "status_code": result.status_code, "latency_ms": result.latency_ms,
            "error": result.error, "detail": result.detail, "cert_expires_at": result.cert_expires_at,
            "phases": json.dumps(result.phases) if result.phases else None}


def inserted(cursor: Any) -> int | None:
    """The id a statement ending in ``RETURNING id`` returned; None when it wrote no row. Reads every row,
    so that SQLite's statement is done before its transaction commits."""
    rows = cursor.fetchall()
    return int(rows[0][0]) if rows else None


def _one_open(db: Any, row: dict[str, Any]) -> dict[str, Any]:
    """An imported open incident of a target that has one open already comes in resolved, and says so."""
    if row.get("status", "open") != "open" or db.execute(
            "SELECT 1 FROM incidents WHERE target = ? AND status = 'open'", (row["target"],)).fetchone() is None:
        return row
    note = "imported as resolved: this target already had an open incident"
    return {**row, "status": "resolved", "closed_at": row.get("updated_at") or row["opened_at"],
            "notes": "\n".join(n for n in (row.get("notes"), note) if n)}


def _batches(rows: list[dict[str, Any]], size: int, weight: Callable[[dict[str, Any]], int]) -> Iterator[list[dict[str, Any]]]:
    """``rows`` in consecutive groups of about ``size``, counting each row as ``weight(row)``."""
    group: list[dict[str, Any]] = []
    total = 0
    for row in rows:
        group.append(row)
        total += weight(row)
        if total >= size:
            yield group
            group, total = [], 0
    if group:
        yield group
