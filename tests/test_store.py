"""The store on real SQLite files: migrations, transactions, search, concurrency."""

from __future__ import annotations

import sqlite3
import threading

import pytest
from past import known
from postgres import query_plan

from monitor.checks.engine import Result
from monitor.core.runs import NewStep
from monitor.store import SCHEMA_VERSION, Store, words
from monitor.store.writes import IncidentWrites


def result(target: str, at: float, ok: bool = True) -> Result:
    return Result(
        target,
        f"http://{target}/",
        ok,
        "ok" if ok else "critical",
        200 if ok else 500,
        12.5,
        None if ok else "unexpected_status",
        "status",
        at,
    )


def test_results_round_trip_newest_first(db_path: str) -> None:
    store = Store(db_path)
    store.results.add_results([result("api", t, ok=t % 2 == 0) for t in range(10)])
    store.results.add_results([result("web", 100)])
    last = store.results.recent_results("api", 3)
    assert [r.checked_at for r in last] == [9, 8, 7]
    assert [r.ok for r in last] == [0, 1, 0]
    assert store.results.count_results() == 11


@pytest.mark.sqlite_only("SQLite's journal mode")
def test_wal_mode_is_used(db_path: str) -> None:
    store = Store(db_path)
    assert store.engine.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.sqlite_only("a pragma of SQLite's")
def test_a_store_opened_on_an_up_to_date_database_fires_triggers_for_what_a_replace_deletes(db_path: str) -> None:
    """``recursive_triggers`` is on in every connection (sqlite_utils set it when it opened each; it is now
    imported only to migrate), so a REPLACE's implicit delete fires DELETE triggers (full-text search's)."""
    Store(db_path).close()  # created and migrated
    store = Store(db_path)  # up to date: nothing to migrate
    try:
        with store.transaction() as db:
            assert db.execute("PRAGMA recursive_triggers").fetchone()[0] == 1
    finally:
        store.close()


def test_the_latest_results_of_a_target_are_read_on_an_index(db_path: str) -> None:
    plan = query_plan(Store(db_path), "SELECT * FROM results WHERE target = 'a' ORDER BY checked_at DESC LIMIT 5")
    assert "results_target_time" in plan


def test_retention_deletes_old_results_and_steps_but_keeps_incidents_and_outcomes(db_path: str) -> None:
    clock = [1.0]
    store = Store(db_path, clock=lambda: clock[0])
    store.results.add_results([result("api", t) for t in range(10)])
    incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
    old_run = store.runs.start_run("old", target="api", incident_id=incident)
    store.runs.add_step(old_run, NewStep(1, "action", observations="x"))
    store.runs.finish_run(old_run, "success", "it was the pool")
    clock[0] = 8.0
    new_run = store.runs.start_run("new", target="api")
    store.runs.add_step(new_run, NewStep(1, "action", observations="y"))
    assert store.results.prune(older_than=6) == {"results": 6, "agent_steps": 1, "outbox": 0}
    assert [r.checked_at for r in store.results.recent_results("api", 100)] == [9, 8, 7, 6]
    assert store.runs.steps(old_run) == [] and len(store.runs.steps(new_run)) == 1
    assert known(store.runs.run(old_run)).final_answer == "it was the pool" and store.incidents.incident(incident) is not None


def test_a_failed_transaction_leaves_nothing(db_path: str) -> None:
    store = Store(db_path)
    with pytest.raises(RuntimeError), store.transaction() as db:
        db.execute("INSERT INTO results (target, checked_at, ok) VALUES ('api', 1, 1)")
        raise RuntimeError("crash in the middle")
    assert store.results.count_results() == 0


def test_committed_rows_survive_reopening(db_path: str) -> None:
    store = Store(db_path)
    store.results.add_results([result("api", 1)])
    incident = IncidentWrites(store).open_incident("api", "consecutive", "3 failures")
    del store  # no close: as after a crash
    again = Store(db_path)
    assert again.results.count_results() == 1
    assert known(again.incidents.incident(incident)).summary == "3 failures"


@pytest.mark.sqlite_only("a SQLite file of schema version 1")
def test_migrates_a_version_1_database_in_place(db_path: str) -> None:
    conn = sqlite3.connect(db_path)
    conn.executescript(
        """CREATE TABLE results (id INTEGER PRIMARY KEY, target TEXT NOT NULL, checked_at REAL NOT NULL,
               ok INTEGER NOT NULL, status_code INTEGER, latency_ms REAL, error TEXT, detail TEXT);
           CREATE TABLE incidents (id INTEGER PRIMARY KEY, target TEXT NOT NULL, pattern TEXT NOT NULL,
               status TEXT NOT NULL DEFAULT 'open', opened_at REAL NOT NULL, closed_at REAL,
               summary TEXT, diagnosis TEXT, resolution TEXT);
           INSERT INTO results (target, checked_at, ok, status_code) VALUES ('api', 5, 0, 502);
           INSERT INTO incidents (target, pattern, status, opened_at, summary, resolution)
               VALUES ('api', 'consecutive', 'resolved', 5, 'api down', 'restarted the upstream pool');
           PRAGMA user_version = 1;"""
    )
    conn.close()
    store = Store(db_path)
    assert store.version == SCHEMA_VERSION
    [row] = store.results.recent_results("api")
    assert (row.severity, row.status_code) == ("critical", 502)
    found = store.incidents.search_incidents("upstream pool")
    assert [i.resolution for i in found] == ["restarted the upstream pool"]
    assert known(store.incidents.incident(1)).updated_at == 5


def test_search_puts_resolved_incidents_first(db_path: str) -> None:
    store = Store(db_path)
    plain = IncidentWrites(store).open_incident("api", "consecutive", "api timeout timeout timeout")
    fixed = IncidentWrites(store).open_incident("db", "flapping", "api timeout")
    IncidentWrites(store).close_incident(fixed, resolution="raised the pool size")
    found = store.incidents.search_incidents("api timeout", k=5)
    assert [i.id for i in found] == [fixed, plain]
    assert store.incidents.search_incidents("!!! ---") == []


def common_words_known(store: Store) -> None:
    """PostgreSQL knows how many incidents hold a word from its statistics (autovacuum keeps them)."""
    if store.shared:
        store.engine.execute("ANALYZE incident_words")


def test_search_leaves_out_the_words_most_incidents_hold(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over 100,000 incidents, matching (and ranking) every incident that holds "http" took 0.3 s on SQLite and
    10 s on PostgreSQL: such a word is left out, and when every word is that common, all are required."""
    monkeypatch.setattr(words, "COMMON_MIN", 0)
    store = Store(db_path)
    plain = [IncidentWrites(store).open_incident(f"api-{n}", "consecutive", f"http 502 from api {n}") for n in range(9)]
    pool = IncidentWrites(store).open_incident("db", "consecutive", "http 502: pgbouncer pool full")
    common_words_known(store)
    assert [i.id for i in store.incidents.search_incidents("http 502 pgbouncer", k=20)] == [pool]
    assert [i.id for i in store.incidents.search_incidents("api http", k=20)] == plain[::-1]  # all common: holding both
    assert words.searched_words(["http", "pool", "502"], {"http": 9, "502": 10, "pool": 1}, 10) == (["pool"], False)


def test_search_ranks_the_newest_matches_only(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cost of a search is bounded whatever its words: the newest ``WINDOW`` matches are ranked."""
    monkeypatch.setattr(words, "WINDOW", 2)
    store = Store(db_path)
    oldest = IncidentWrites(store).open_incident("api", "consecutive", "pool exhausted")
    IncidentWrites(store).close_incident(oldest, resolution="raised the pool size")
    newer = [IncidentWrites(store).open_incident(f"db-{n}", "consecutive", "pool exhausted") for n in range(2)]
    assert {i.id for i in store.incidents.search_incidents("pool", k=5)} == set(newer)
    monkeypatch.setattr(words, "WINDOW", 500)
    assert [i.id for i in store.incidents.search_incidents("pool", k=5)][0] == oldest  # a known fix first


def test_search_sees_later_updates(db_path: str) -> None:
    store = Store(db_path)
    incident = IncidentWrites(store).open_incident("api", "consecutive", "api down")
    IncidentWrites(store).update_incident(incident, diagnosis="certificate rotation broke the TLS handshake")
    assert [i.id for i in store.incidents.search_incidents("rotation")] == [incident]


def test_similar_incidents_same_target_and_pattern_first(db_path: str) -> None:
    store = Store(db_path)
    other = IncidentWrites(store).open_incident("web", "latency_drift", "api slow")
    same_target = IncidentWrites(store).open_incident("api", "flapping", "flaps")
    IncidentWrites(store).close_incident(same_target)
    same_both = IncidentWrites(store).open_incident("api", "consecutive", "down")
    IncidentWrites(store).close_incident(same_both)
    current = IncidentWrites(store).open_incident("api", "consecutive", "down again")
    found = store.incidents.similar_incidents("api", "consecutive", k=3, exclude=current)
    assert [i.id for i in found] == [same_both, same_target, other]


def test_a_concurrent_reader_never_sees_half_a_batch(db_path: str) -> None:
    writer, reader = Store(db_path), Store(db_path)
    batches, size = 60, 25
    seen: list[int] = []
    done = threading.Event()

    def write() -> None:
        for b in range(batches):
            writer.results.add_results([result("api", b * size + i) for i in range(size)])
        done.set()

    thread = threading.Thread(target=write)
    thread.start()
    while not done.is_set():
        seen.append(reader.results.count_results("api"))
    thread.join()
    seen.append(reader.results.count_results("api"))
    assert all(count % size == 0 for count in seen)
    assert seen == sorted(seen) and seen[-1] == batches * size


def test_threads_can_share_one_store(db_path: str) -> None:
    store = Store(db_path)
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            for i in range(50):
                store.results.add_results([result(name, i)])
                store.results.recent_results(name, 5)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and store.results.count_results() == 200


def test_update_refuses_unknown_fields(db_path: str) -> None:
    store = Store(db_path)
    incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
    with pytest.raises(ValueError, match="status"):
        IncidentWrites(store).update_incident(incident, status="resolved")


def test_a_nul_in_what_a_target_sent_is_stored(db_path: str) -> None:
    """PostgreSQL's text cannot hold a NUL (SQLite's can): there it becomes U+FFFD instead of failing the batch."""
    store = Store(db_path)
    store.results.add_results([Result("api", "tcp://api:7", False, "critical", None, 1.0, "unexpected_reply", "got 'a\x00b'", 1.0)])
    incident = IncidentWrites(store).open_incident("api", "consecutive", "api replied 'a\x00b'")
    assert store.results.recent_results("api")[0].detail in ("got 'a\x00b'", "got 'a\ufffdb'")
    found = store.incidents.incident(incident)
    assert found is not None and found.summary in ("api replied 'a\x00b'", "api replied 'a\ufffdb'")
