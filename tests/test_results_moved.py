"""SQLite's results: inserted into a small table, moved on in bulk a range of targets at a time to the one kept and
indexed by target and time, and read as one (the view ``results``). Real SQLite files; the reads on PostgreSQL too."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from past import known

from monitor.core.results import Result
from monitor.store import Store, base, results
from monitor.store.engines import Sqlite

TARGETS = [f"t{n:03d}.example" for n in range(60)]


def result(target: str, at: float, ok: bool = True, latency: float = 12.5) -> Result:
    return Result(target, "", ok, "ok" if ok else "critical", 200 if ok else 503, latency, None if ok else "http_5xx", "", at)


def frames_written(store: Store, batches: list[list[Result]]) -> float:
    """WAL frames (pages) the batches wrote, a result: the WAL emptied first, no checkpoint between."""
    assert isinstance(store.engine, Sqlite)
    conn = store.engine.conn
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for batch in batches:
        store.results.add_results(batch)
    _, frames, _ = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return float(frames) / sum(len(batch) for batch in batches)


@pytest.mark.sqlite_only("SQLite's WAL, its pages")
def test_a_result_writes_as_many_pages_however_many_results_the_table_holds(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rate fell as the table grew (19.5 µs a row at 0.5 M rows, 31.6 at 1.4 M): each target's newest row had
    a page of its own in the index by target and time, so every batch wrote a page for nearly every row."""
    monkeypatch.setattr(results, "HELD", 20_000, raising=False)
    monkeypatch.setattr(results, "MOVED", 2_000, raising=False)
    store = Store(db_path)
    assert isinstance(store.engine, Sqlite)
    store.engine.conn.execute("PRAGMA wal_autocheckpoint = 0")
    names = [f"target-{n:05d}.example" for n in range(2_000)]
    at = [0.0]

    def batches(count: int) -> list[list[Result]]:
        out = []
        for _ in range(count):
            at[0] += 1
            out.append([result(name, at[0]) for name in names])
        return out

    for batch in batches(10):
        store.results.add_results(batch)
    small = frames_written(store, batches(20))  # the table from 20,000 rows to 60,000
    for batch in batches(70):
        store.results.add_results(batch)
    large = frames_written(store, batches(20))  # from 200,000 to 240,000
    assert large < small * 1.5, (small, large)
    assert store.results.count_results() == 120 * len(names)


def test_results_read_the_same_wherever_they_lie(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Some of a target's rows moved on, some not: every read sees them as one table, newest first, with late
    results (an earlier time, stored later) in their place."""
    monkeypatch.setattr(results, "HELD", 500, raising=False)
    monkeypatch.setattr(results, "MOVED", 50, raising=False)
    store = Store(db_path)
    stored: list[tuple[str, float, bool]] = []
    for step in range(40):
        batch = [(name, step * 10.0 + n % 7, (step + n) % 5 != 0) for n, name in enumerate(TARGETS)]
        if step % 9 == 8:
            batch.append((TARGETS[3], step * 10.0 - 15, False))  # late: checked before rows already stored
        store.results.add_results([result(name, at, ok) for name, at, ok in batch])
        stored += batch
        if step in (11, 39):
            expect_the_same(store, stored)
        if step == 6:  # none moved yet (the API gives ids: a client may keep them)
            first_ids = [row.id for row in store.results.results_between(TARGETS[5], 0, 60)]
    if not store.shared:
        kept, recent = (store._scalar(f"SELECT count(*) FROM {table}") for table in ("results_kept", "results_recent"))
        assert kept > 0 and 0 < recent < 500 + 2 * len(TARGETS) and kept + recent == len(stored)
    ids = [row["id"] for row in store._rows("SELECT id FROM results")]
    assert len(ids) == len(set(ids)) == len(stored)
    assert [row.id for row in store.results.results_between(TARGETS[5], 0, 60)] == first_ids  # a move keeps ids


def expect_the_same(store: Store, stored: list[tuple[str, float, bool]]) -> None:
    order = {name: sorted((at, n, ok) for n, (row, at, ok) in enumerate(stored) if row == name) for name in TARGETS}
    newest = {name: rows[-1] for name, rows in order.items()}
    assert store.results.count_results() == len(stored)
    assert store.results.target_names() == TARGETS
    for name in (TARGETS[0], TARGETS[3], TARGETS[-1]):
        assert [r.checked_at for r in store.results.recent_results(name, 5)] == [at for at, _, _ in order[name][::-1][:5]]
        page = store.results.results_page(name, limit=7)
        after = store.results.results_page(name, limit=7, before=(page[-1].checked_at, page[-1].id))
        assert [r.checked_at for r in page + after] == [at for at, _, _ in order[name][::-1][:14]]
        between = store.results.results_between(name, 50, 200)
        assert [r.checked_at for r in between] == [at for at, _, _ in order[name] if 50 <= at <= 200]
        assert store.results.count_results(name) == len(order[name])
        assert known(store.results.latest_result(name)).checked_at == newest[name][0]
        week = store.results.uptime(name, {"all": 1e6}, 1e5)["all"]
        assert (week.checks, week.up) == (len(order[name]), sum(ok for _, _, ok in order[name]))
    latest = store.results.latest_of(TARGETS)
    states = store.results.latest_states(TARGETS)
    every = {row.target: row for row in store.results.latest_results()}
    for name in TARGETS:
        at, _, ok = newest[name]
        assert latest[name].checked_at == states[name].checked_at == every[name].checked_at == at
        assert latest[name].ok == states[name].ok == int(ok)


@pytest.mark.sqlite_only("a SQLite file of schema version 24, its results in one table")
def test_a_database_from_before_keeps_its_results_and_its_ids_go_on(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(base, "SCHEMA_VERSION", 24)
        old = Store(db_path)
        assert old.version == 24
        with old.transaction() as db:  # as the code of version 24 stored them: in the table ``results``
            db.executemany(
                "INSERT INTO results (target, checked_at, ok, severity) VALUES ('api', ?, ?, ?)",
                [(at, int(at != 3), "ok" if at != 3 else "critical") for at in range(1, 6)],
            )
        old.close()
    store = Store(db_path)
    assert [r.checked_at for r in store.results.recent_results("api")] == [5, 4, 3, 2, 1]
    store.results.add_results([result("api", 6)])
    assert [r.id for r in store.results.recent_results("api", 2)] == [6, 5]
    conn = sqlite3.connect(db_path)  # another tool: inserts into and deletes from ``results`` as before
    with conn:
        conn.execute("INSERT INTO results (target, checked_at, ok, severity) VALUES ('api', 7, 1, 'ok')")
        conn.execute("DELETE FROM results WHERE target = 'api' AND checked_at <= 2")
    conn.close()
    assert [(r.id, r.checked_at) for r in store.results.recent_results("api")] == [(7, 7), (6, 6), (5, 5), (4, 4), (3, 3)]
    assert store.results.uptime("api", {"all": 1e6}, 100)["all"].checks == 7  # the hourly counts keep what was deleted
    assert store.results.prune(4.5)["results"] == 2
    assert [r.checked_at for r in store.results.recent_results("api")] == [7, 6, 5]


@pytest.mark.sqlite_only("SQLite's two results tables")
def test_a_move_committed_while_a_reader_reads_hides_no_row(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The newest row of each target was read a table at a time: a move committed between the two statements hid
    the rows it moved (the page showed a target's older row, or none)."""
    monkeypatch.setattr(results, "HELD", 40, raising=False)
    monkeypatch.setattr(results, "MOVED", 5, raising=False)
    writer = Store(db_path)
    writer.results.add_results([result("a.example", 1.0, ok=True), result("b.example", 1.0, ok=True)])
    writer.results.add_results([result("a.example", 2.0, ok=False)] + [result(f"z{n:02d}.example", 2.0) for n in range(36)])  # 39 held
    reader = writer.reopen()
    execute, moved = reader.engine.execute, list[int]()

    def execute_then_move(sql: str, params: Any = ()) -> Any:
        cursor = execute(sql, params)
        if not moved:  # a batch that moves a.example's rows on, committed after the reader's first statement
            writer.results.add_results([result("y.example", 3.0)])
            moved.append(1)
        return cursor

    monkeypatch.setattr(reader.engine, "execute", execute_then_move)
    states = reader.results.latest_states(["a.example", "b.example"])
    assert moved and writer._scalar("SELECT count(*) FROM results_kept WHERE target = 'a.example'") == 2
    assert {name: (state.checked_at, state.ok) for name, state in states.items()} == {"a.example": (2.0, 0), "b.example": (1.0, 1)}


@pytest.mark.sqlite_only("SQLite's two results tables")
def test_a_write_rolled_back_and_tried_again_is_counted_once(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows held in results_recent were counted before the commit: a move that failed (a full disk) and was
    tried again counted its batch each time, and past the bound every later batch moved on at once."""
    monkeypatch.setattr(results, "HELD", 100, raising=False)
    monkeypatch.setattr(results, "MOVED", 10, raising=False)
    store = Store(db_path)
    store.results.add_results([result(TARGETS[n % 60], float(n)) for n in range(95)])
    with store.transaction() as db:
        db.execute("CREATE TRIGGER full BEFORE INSERT ON results_kept BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END")
    batch = [result(TARGETS[n % 60], 100.0 + n) for n in range(20)]
    for _ in range(5):  # the recorder keeps the batch and tries again
        with pytest.raises(sqlite3.DatabaseError):
            store.results.add_results(batch)
    with store.transaction() as db:
        db.execute("DROP TRIGGER full")
    store.results.add_results(batch)
    recent = store._scalar("SELECT count(*) FROM results_recent")
    assert store.results._staged == recent and store.results.count_results() == 115
