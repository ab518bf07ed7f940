"""The agent's memory as stored: working memory per replica, its size over time, and export and import."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from monitor.core.memory import MemorySample, MemoryStats
from monitor.store.base import Part, Writing, inserted
from monitor.store.incidents import one_open
from monitor.store.rows import columns, many

# table: its order
EXPORTED = {"incidents": "id", "agent_runs": "id", "agent_steps": "id", "memory": "key", "incident_links": "incident_id, other_id"}
INCIDENT_SEEN = "SELECT id FROM incidents WHERE target = ? AND pattern = ? AND opened_at = ?"
RUN_SEEN = "SELECT id FROM agent_runs WHERE started_at = ? AND task = ?"
IMPORT_BATCH = 500  # rows per transaction of an import; a running daemon writes in between
LINK_UPSERT = """INSERT INTO incident_links (incident_id, other_id, verdict, signal, actor, note, at) VALUES (?, ?, ?, ?, ?, ?, ?)
                 ON CONFLICT (incident_id, other_id) DO UPDATE SET verdict = excluded.verdict, signal = excluded.signal,
                 actor = excluded.actor, note = excluded.note, at = excluded.at WHERE excluded.at > incident_links.at
                 RETURNING incident_id"""  # a later word replaces an earlier one, whichever database it was said in
MEMORY_UPSERT = """INSERT INTO memory (key, value, updated_at) VALUES (?, ?, ?)
                   ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at"""


class MemoryReader(Part):
    """Working memory and what an export holds."""

    def _own(self, key: str) -> str:
        """A working-memory key as this replica stores it: replica 0 (or a lone daemon) as named, replica 2's
        as ``key@2``, so that replicas sharing a database keep their working memories apart."""
        return key if self._replica == 0 else f"{key}@{self._replica}"

    def load_memory(self, key: str) -> Any:
        raw = self._scalar("SELECT value FROM memory WHERE key = ?", (self._own(key),))
        return json.loads(raw) if raw is not None else None

    def memory_samples(self, since: float, buckets: int = 200) -> list[MemorySample]:
        """Memory size since ``since``, at most ``buckets`` points (the last sample of each slice)."""
        first = self._scalar("SELECT min(at) FROM memory_samples WHERE at >= ?", (since,))
        since = since if first is None else first
        width = max((self._clock() - since) / buckets, 1e-9) * (1 + 1e-9)
        return many(
            MemorySample,
            self._rows(
                f"""SELECT {", ".join(columns(MemorySample))} FROM (
                        SELECT *, row_number() OVER (PARTITION BY {self._engine.trunc("(at - ?) / ?")} ORDER BY at DESC) AS n
                        FROM memory_samples WHERE at >= ?) AS slices WHERE n = 1 ORDER BY at""",
                (since, width, since),
            ),
        )

    def dump(self) -> dict[str, list[dict[str, Any]]]:
        """Long-term memory as plain rows: incidents, agent runs and steps, working memory, people's links."""
        return {table: self._rows(f"SELECT * FROM {table} ORDER BY {order}") for table, order in EXPORTED.items()}

    def counts(self) -> dict[str, int]:
        """Rows per long-term table, and open incidents."""
        out = {table: int(self._scalar(f"SELECT count(*) FROM {table}")) for table in EXPORTED}
        out["results"] = self._count_each_result_table()
        out["open_incidents"] = int(self._scalar("SELECT count(*) FROM incidents WHERE status = 'open'"))
        return out


class MemoryPart(Writing, MemoryReader):
    """Working memory and its samples (an import adds incidents, so it is the incident writer's part's)."""

    def save_memory(self, key: str, value: Any) -> None:
        with self._transaction() as db:
            db.execute(MEMORY_UPSERT, (self._own(key), json.dumps(value), self._clock()))

    def add_memory_sample(self, stats: MemoryStats, *, keep_since: float) -> None:
        """One point of memory size over time; points older than ``keep_since`` go in the same transaction."""
        working = stats.working
        with self._transaction() as db:
            db.execute(
                "INSERT INTO memory_samples (at, bytes, tokens, steps, incidents, db_bytes) VALUES (?, ?, ?, ?, ?, ?)",
                (self._clock(), working.bytes, working.tokens_estimate, sum(working.steps.values()), stats.incidents, stats.db_bytes),
            )
            db.execute("DELETE FROM memory_samples WHERE at < ?", (keep_since,))


class MemoryImport(Writing):
    """An export's rows added to this database: the incident writer's part's ``load_dump``, made only by it."""

    def load_dump(
        self, data: dict[str, list[dict[str, Any]]], *, batch: int = IMPORT_BATCH, progress: Callable[[dict[str, int]], None] | None = None
    ) -> dict[str, int]:
        """Add dumped rows (checked by :mod:`monitor.memory.exports`); returns how many were new.

        Incidents and runs get new ids and references follow them. Rows already present (the same
        incident opened at the same time, the same run started at the same time) are not added twice,
        so importing a file again changes nothing. A link between two incidents follows their new ids, and
        replaces a link here only when it was said later. Rows go in transactions of about ``batch`` rows,
        each lookup on an index, so a running daemon's writes get in between; ``progress`` is called
        after each. A run and its steps share a transaction, so an import cut short completes when
        it is run again.
        """
        added = dict.fromkeys(("incidents", "agent_runs", "agent_steps", "memory", "incident_links"), 0)
        incident_ids = self._load_incidents(data.get("incidents", []), added, batch, progress)
        self._load_runs(data, incident_ids, added, batch, progress)
        self._load_links(data.get("incident_links", []), incident_ids, added, batch)
        with self._transaction() as db:
            for row in data.get("memory", []):
                db.execute(MEMORY_UPSERT, (row["key"], row["value"], row["updated_at"]))
                added["memory"] += 1
        return added

    def _load_incidents(
        self, rows: list[dict[str, Any]], added: dict[str, int], batch: int, progress: Callable[[dict[str, int]], None] | None
    ) -> dict[Any, int]:
        """Incidents not present yet, counted in ``added``; returns each dumped id's id here."""
        incident_ids: dict[Any, int] = {}
        for group in _batches(rows, batch, lambda row: 1):
            with self._yielding_transaction() as db:
                for row in group:
                    found = db.execute(INCIDENT_SEEN, (row["target"], row["pattern"], row["opened_at"])).fetchone()
                    incident_ids[row.get("id")] = found[0] if found else self._insert(db, "incidents", one_open(db, row))
                    added["incidents"] += not found
            if progress is not None:
                progress(added)
        return incident_ids

    def _load_runs(
        self,
        data: dict[str, list[dict[str, Any]]],
        incident_ids: dict[Any, int],
        added: dict[str, int],
        batch: int,
        progress: Callable[[dict[str, int]], None] | None,
    ) -> None:
        """Agent runs not present yet, each with its steps in the same transaction."""
        steps: dict[Any, list[dict[str, Any]]] = {}
        for row in data.get("agent_steps", []):
            steps.setdefault(row.get("run_id"), []).append(row)
        for group in _batches(data.get("agent_runs", []), batch, lambda row: 1 + len(steps.get(row.get("id"), []))):
            with self._yielding_transaction() as db:
                for row in group:
                    if db.execute(RUN_SEEN, (row["started_at"], row["task"])).fetchone() is not None:
                        continue
                    run_id = self._insert(db, "agent_runs", {**row, "incident_id": incident_ids.get(row.get("incident_id"))})
                    added["agent_runs"] += 1
                    for step in steps.get(row.get("id"), []):
                        self._insert(db, "agent_steps", {**step, "run_id": run_id})
                        added["agent_steps"] += 1
            if progress is not None:
                progress(added)

    def _load_links(self, rows: list[dict[str, Any]], incident_ids: dict[Any, int], added: dict[str, int], batch: int) -> None:
        """People's links between the dumped incidents, each end at its id here; a link to an incident the file
        does not hold is left out."""
        for group in _batches(rows, batch, lambda row: 1):
            with self._yielding_transaction() as db:
                for row in group:
                    ends = incident_ids.get(row["incident_id"]), incident_ids.get(row["other_id"])
                    if None in ends or ends[0] == ends[1]:
                        continue
                    said = (row["verdict"], row["signal"], row["actor"], row.get("note"), row["at"])
                    added["incident_links"] += db.execute(LINK_UPSERT, (*ends, *said)).fetchone() is not None

    @contextmanager
    def _yielding_transaction(self) -> Iterator[Any]:
        """A transaction, then a pause as long as it took (at most 0.1 s): another process waiting for the
        lock (its busy handler polls every 1 to 100 ms) gets its turn between an import's batches."""
        started = time.monotonic()
        with self._transaction() as db:
            yield db
        time.sleep(min(0.1, time.monotonic() - started))

    def _insert(self, db: Any, table: str, row: dict[str, Any]) -> int:
        if table not in self._columns:
            self._columns[table] = self._engine.columns(table)
        columns = [c for c in self._columns[table] if c != "id" and row.get(c) is not None]  # a null: the default
        cursor = db.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) RETURNING id",
            [int(row[c]) if isinstance(row[c], bool) else row[c] for c in columns],  # an exported flag may be true/false
        )
        return inserted(cursor) or 0


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
