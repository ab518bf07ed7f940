"""Check results: stored in batches, read back for detectors, pages and uptime; heartbeat pings."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from monitor.core.batches import COLUMNS, Row
from monitor.core.results import Latest, Result, Slice, StoredResult, Uptime
from monitor.store.base import NO_ID, Part, Writing
from monitor.store.rows import many, maybe
from monitor.store.schema import RESULT_COLUMNS, UP

HELD = 100_000  # SQLite: rows results_recent holds before a range of targets moves on to results_kept
MOVED = 10_000  # rows a move takes, at least: the next targets' rows, all of each, from where the last one ended


class ResultsReader(Part):
    """Check results as the detectors, pages, metrics and the agent read them."""

    def recent_results(self, target: str, n: int = 20) -> list[StoredResult]:
        """The last ``n`` results of a target, newest first."""
        return self._results("SELECT * FROM results WHERE target = ? ORDER BY checked_at DESC, id DESC LIMIT ?", (target, n))

    def latest_results(self) -> list[StoredResult]:
        """The newest result of every target, by target name."""
        newest = self.latest_of(self.target_names())
        return [newest[name] for name in sorted(newest)]

    def count_results(self, target: str | None = None) -> int:
        return self._count_each_result_table() if target is None else self._count_each_result_table(" WHERE target = ?", (target,))

    def target_names(self) -> list[str]:
        """Every target with a stored result, by name: one index seek per name, not a scan."""
        each, params = self._each_result_table(
            """WITH RECURSIVE names(name) AS (
                   SELECT min(target) FROM {table}
                   UNION ALL SELECT (SELECT min(target) FROM {table} WHERE target > names.name)
                   FROM names WHERE names.name IS NOT NULL)
               SELECT name FROM names WHERE name IS NOT NULL"""
        )
        return sorted({row["name"] for row in self._rows(each, params)})

    def latest_by_location(self, target: str, since: float) -> list[StoredResult]:
        """The newest result of the target from each location that checked it after ``since``, by location."""
        newest: dict[str, StoredResult] = {}
        for result in self._results(
            """SELECT * FROM results WHERE target = ? AND checked_at > ? AND location IS NOT NULL
                                 ORDER BY checked_at DESC, id DESC""",
            (target, since),
        ):
            newest.setdefault(result.location or "", result)
        return [newest[place] for place in sorted(newest)]

    def latest_result(self, target: str) -> StoredResult | None:
        return maybe(StoredResult, self._one("SELECT * FROM results WHERE target = ? ORDER BY checked_at DESC, id DESC LIMIT 1", (target,)))

    def latest_of(self, targets: list[str]) -> dict[str, StoredResult]:
        """The newest result of each of ``targets`` that has one, by name: one index seek per target, in one
        statement."""
        names, param = self._engine.names(targets)
        each, params = self._each_result_table(
            f"""SELECT {{table}}.* FROM {names} JOIN {{table}} ON {{table}}.id = (
                    SELECT id FROM {{table}} WHERE target = names.value ORDER BY checked_at DESC, id DESC LIMIT 1)""",
            (param,),
        )
        return {result.target: result for result in sorted(self._results(each, params), key=newness)}

    def latest_states(self, targets: list[str]) -> dict[str, Latest]:
        """``checked_at``, ``ok``, ``severity`` and ``error`` of each target's newest result, by name: what a state is
        read from, for a whole fleet (half the cost of ``latest_of``, which builds every column)."""
        names, param = self._engine.names(targets)
        each, params = self._each_result_table(
            f"""SELECT {{table}}.target, {{table}}.checked_at, {{table}}.id, {{table}}.ok, {{table}}.severity, {{table}}.error
                FROM {names} JOIN {{table}} ON {{table}}.id = (SELECT id FROM {{table}} WHERE target = names.value
                                                               ORDER BY checked_at DESC, id DESC LIMIT 1)""",
            (param,),
        )
        with self._lock:
            rows = self._engine.execute(each, params).fetchall()
        rows.sort(key=lambda row: row[1:3])  # the newer of each target's two (SQLite) last
        return {target: Latest(at, ok, severity, error) for target, at, _, ok, severity, error in rows}

    def uptime(self, target: str, windows: dict[str, float], now: float) -> dict[str, Uptime]:
        """Per window name (seconds back from ``now``): checks, passes (every condition met), those that found the
        target up (a warning is up: :func:`monitor.core.state.is_up`) and the share up (None: no checks)."""
        return self.uptimes([target], windows, now)[target]

    def uptimes(self, targets: list[str], windows: dict[str, float], now: float) -> dict[str, dict[str, Uptime]]:
        """``uptime`` of several targets at once: two statements per window, however many targets.

        Whole hours come from ``results_hourly``; only the part of an hour where a window starts is read
        from the results, so 30 days cost about as much as one day."""
        names, param = self._engine.names(targets)
        out: dict[str, dict[str, Uptime]] = {target: {} for target in targets}
        for window, seconds in windows.items():
            since = now - seconds
            hour = math.ceil(since / 3600)
            with self._lock:
                whole = self._engine.execute(
                    f"""SELECT target, sum(checks), sum(passed), sum(up) FROM results_hourly
                        WHERE target IN (SELECT value FROM {names}) AND hour >= ? GROUP BY target""",
                    (param, hour),
                ).fetchall()
                each, params = self._each_result_table(  # each table's index (through the view: a scan)
                    f"""SELECT target, count(*), sum(ok), sum({UP.format(row="")}) FROM {{table}}
                        WHERE target IN (SELECT value FROM {names}) AND checked_at >= ? AND checked_at < ?
                        GROUP BY target""",
                    (param, since, hour * 3600),
                )
                edge = self._engine.execute(each, params).fetchall()
            counts = {target: [0, 0, 0] for target in targets}
            for target, *numbers in (*whole, *edge):
                counts[target] = [total + (number or 0) for total, number in zip(counts[target], numbers, strict=True)]
            for target, (checks, passed, up) in counts.items():
                out[target][window] = Uptime(checks, passed, up, up / checks if checks else None)
        return out

    def latency_buckets(self, target: str, since: float, until: float, buckets: int) -> list[Slice]:
        """The check history cut in ``buckets`` equal slices: checks, failures (checks that found the target down),
        mean and max latency of each.

        Slices of an hour or more are read from ``results_hourly`` (by the hour each falls in)."""
        width = max((until - since) / buckets, 1e-9)
        if width >= 3600:
            sql = f"""SELECT {self._engine.trunc("(hour * 3600 - ?) / ?")} AS bucket, sum(checks) AS checks,
                          sum(checks - up) AS failures, sum(latency_sum) / sum(checks) AS mean_ms,
                          max(latency_max) AS max_ms
                   FROM results_hourly WHERE target = ? AND hour >= ? AND hour <= ?
                   GROUP BY bucket ORDER BY bucket"""
            params: tuple[Any, ...] = (math.floor(since / 3600) * 3600, width, target, math.floor(since / 3600), math.floor(until / 3600))
        else:
            sql = f"""SELECT {self._engine.trunc("(checked_at - ?) / ?")} AS bucket, count(*) AS checks,
                      sum(1 - {UP.format(row="")}) AS failures, avg(latency_ms) AS mean_ms, max(latency_ms) AS max_ms
               FROM results WHERE target = ? AND checked_at >= ? AND checked_at <= ?
               GROUP BY bucket ORDER BY bucket"""
            params = (since, width, target, since, until)
        return many(Slice, self._rows(sql, params))

    def results_page(
        self, target: str, *, limit: int = 50, before: tuple[float, int] | None = None, since: float | None = None
    ) -> list[StoredResult]:
        """A target's results, newest first, older than the ``before`` cursor (checked_at, id)."""
        at, row_id = before or (float("inf"), NO_ID)
        # a range on (target, checked_at) that the index walks backwards; an OR here would sort every row
        return self._results(
            """SELECT * FROM results WHERE target = ? AND checked_at <= ? AND checked_at >= ?
               AND NOT (checked_at = ? AND id >= ?) ORDER BY checked_at DESC, id DESC LIMIT ?""",
            (target, at, since if since is not None else float("-inf"), at, row_id, limit),
        )

    def results_between(self, target: str, since: float, until: float, limit: int = 200) -> list[StoredResult]:
        """A target's results in [since, until], oldest first, at most ``limit`` (the oldest ones)."""
        return self._results(
            """SELECT * FROM results WHERE target = ? AND checked_at >= ? AND checked_at <= ?
               ORDER BY checked_at, id LIMIT ?""",
            (target, since, until, limit),
        )

    def heartbeat(self, target: str) -> dict[str, Any] | None:
        """A heartbeat's ``since``, ``last_ping``, ``last_start`` and ``last_fail`` (Unix times or None), and
        ``last_message``: what the job said with its last fail (or None)."""
        return self._one("SELECT * FROM heartbeats WHERE target = ?", (target,))

    def _results(self, sql: str, params: Sequence[Any] = ()) -> list[StoredResult]:
        return many(StoredResult, self._rows(sql, params))


class ResultsPart(Writing, ResultsReader):
    """Check results, written by the recorder (and heartbeat pings by the heartbeat listener).

    SQLite inserts results into a small table and moves them on in bulk, a range of targets at a time, to the one
    kept and indexed by target and time (``schema._v25``); ``results`` is both, as a view. PostgreSQL has one
    table. A statement the view would plan badly (the newest row of each target) reads each table on its own."""

    _staged: int | None = None  # SQLite: rows in results_recent, counted once, then kept by this connection

    _moved_to: str | None = None  # the last target the last move took; None: the next starts at the first

    def add_results(self, results: list[Result]) -> None:
        """Store a batch of results in one transaction."""
        self.add_rows([result_row(result) for result in results])

    def add_rows(self, rows: Sequence[Sequence[Any]]) -> None:
        """Store results given as rows (``result_row``'s values, in its order) with one statement, in one
        transaction."""
        moved: tuple[int, str | None] | None = None
        with self._transaction() as db:
            if self._shared:  # PostgreSQL: COPY
                db.copy("results", COLUMNS, rows)
                return
            db.executemany(
                """INSERT INTO results_recent (target, checked_at, ok, severity, status_code, latency_ms,
                   error, detail, cert_expires_at, phases, location) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                rows,
            )
            if self._staged is None:  # counted once (the rows just inserted with them), then kept
                staged = int(db.execute("SELECT count(*) FROM results_recent").fetchone()[0])
            else:
                staged = self._staged + len(rows)
            if staged >= HELD:
                moved = self._move_on(db, max(MOVED, len(rows)))
        # committed: only now does this connection's count follow (a write rolled back and tried again would count
        # its rows twice, and move every batch on at once from then on)
        self._staged = staged - (moved[0] if moved else 0)
        if moved:
            self._moved_to = moved[1]

    def _move_on(self, db: Any, at_least: int) -> tuple[int, str | None]:
        """Move the rows of the next targets in name order (``at_least`` rows, all of each target's) from
        results_recent to results_kept, by target and time, keeping their ids, in the caller's transaction;
        the number moved and the last target moved (None: the next move starts at the first)."""
        after = self._moved_to or ""
        start = "target > ?" if self._moved_to is not None else "target >= ?"
        end = db.execute(f"SELECT target FROM results_recent WHERE {start} ORDER BY target LIMIT 1 OFFSET ?", (after, at_least)).fetchone()
        where, params = (f"{start} AND target <= ?", (after, end[0])) if end else (start, (after,))
        db.execute(
            f"""INSERT INTO results_kept (id, {RESULT_COLUMNS})
                SELECT id, {RESULT_COLUMNS} FROM results_recent WHERE {where} ORDER BY target""",
            params,
        )
        return int(db.execute(f"DELETE FROM results_recent WHERE {where}", params).rowcount), end[0] if end else None

    def prune(self, older_than: float) -> dict[str, int]:
        """Retention: delete results, the steps of agent runs and delivered notifications older than
        ``older_than`` (epoch seconds). Incidents and the runs' outcomes are kept: they are what is recalled."""
        with self._transaction() as db:
            return {
                "results": self._prune_results(db, older_than),
                "agent_steps": db.execute(
                    "DELETE FROM agent_steps WHERE run_id IN (SELECT id FROM agent_runs WHERE started_at < ?)", (older_than,)
                ).rowcount,
                "outbox": db.execute("DELETE FROM outbox WHERE delivered_at < ? OR dropped_at < ?", (older_than, older_than)).rowcount,
            }

    def _prune_results(self, db: Any, older_than: float) -> int:
        db.execute("DELETE FROM results_hourly WHERE hour < ?", (math.floor(older_than / 3600),))
        self._staged = None  # counted again at the next batch
        return sum(int(db.execute(f"DELETE FROM {table} WHERE checked_at < ?", (older_than,)).rowcount) for table in self._db.result_tables)

    def drop_hourly_counts(self) -> None:
        """For bench/cycle_cost.py: results stored without keeping ``results_hourly``."""
        with self._transaction() as db:
            db.execute("DROP TRIGGER IF EXISTS results_hourly_count" + (" ON results" if self._shared else ""))

    def watch_heartbeats(self, targets: list[str], since: float) -> None:
        """Heartbeat rows for ``targets``; one new to the database is due from ``since``."""
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO heartbeats (target, since) VALUES (?, ?) ON CONFLICT DO NOTHING", [(target, since) for target in targets]
            )

    def record_ping(self, target: str, event: str, at: float, message: str | None = None) -> None:
        """A heartbeat's ping (``ping``, ``start`` or ``fail``) at ``at``; a ping or fail forgets a
        ``last_start`` that an earlier ping or fail already ended (``heartbeat.after``). A fail keeps its
        ``message`` (what the job said, or None) in place of the last one."""
        column = {"ping": "last_ping", "start": "last_start", "fail": "last_fail"}[event]
        ended = (
            ""
            if event == "start"
            else f", last_start = CASE WHEN last_start <= "
            f"{self._engine.greatest}(COALESCE(last_ping, 0), COALESCE(last_fail, 0)) THEN NULL ELSE last_start END"
        )
        said = ", last_message = ?" if event == "fail" else ""
        with self._transaction() as db:
            db.execute("INSERT INTO heartbeats (target, since) VALUES (?, ?) ON CONFLICT DO NOTHING", (target, at))
            db.execute(f"UPDATE heartbeats SET {column} = ?{ended}{said} WHERE target = ?", (at, message, target) if said else (at, target))


def result_row(result: Result) -> Row:
    """A result's values as stored, in the order of :data:`~monitor.core.batches.COLUMNS` (no ``id`` yet)."""
    phases = json.dumps(result.phases) if result.phases else None
    return (
        result.name,
        result.checked_at,
        int(result.ok),
        result.severity,
        result.status_code,
        result.latency_ms,
        result.error,
        result.detail,
        result.cert_expires_at,
        phases,
        result.location,
    )


def newness(result: StoredResult) -> tuple[float, int]:
    """What orders a target's results, oldest first: their time, then their id."""
    return result.checked_at, result.id
