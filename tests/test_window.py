"""A target's window in memory (issue 22): its memory is taken when it is made and does not grow as it fills,
and the detectors find in it what they find in the same rows read from the store."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path
from typing import Any

from monitor.checks.engine import Result
from monitor.config import Detectors
from monitor.core.results import Checked
from monitor.incidents import evidence, patterns
from monitor.incidents.history import WORDS, Held, Window
from monitor.incidents.tracker import HISTORY
from monitor.store import Store

KEPT = ("checked_at", "ok", "latency_ms", "severity", "error", "status_code")  # what an older row keeps
NEVER_TRIMS = Detectors(flap_window=86_400)  # every row stays in sight: the window fills to its limit


def row(n: int) -> Result:
    failed = n % 7 == 0
    return Result(
        "api",
        "http://api/",
        not failed,
        "critical" if failed else "ok",
        500 if failed else 200,
        float(n % 13),
        "unexpected_status" if failed else None,
        f"status {n}",
        float(n),
    )


def kept(row: Checked) -> tuple[Any, ...]:
    """What a window keeps of an older row: the fields of ``KEPT``."""
    return tuple(getattr(row, name) for name in KEPT)


def traced(make: Any) -> tuple[Any, int]:
    """What ``make()`` returns, and the bytes it holds on to once done."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        made = make()
        return made, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_a_full_window_holds_the_memory_a_fresh_one_took() -> None:
    for word in ("ok", "critical", "unexpected_status"):
        WORDS.code(word)  # the few words every window shares, coded once per process
    targets = 20  # the allocator's free lists keep a few KB traced, whatever is built: a share of each window
    windows, fresh = traced(lambda: [Window([], HISTORY) for _ in range(targets)])

    def fill() -> None:
        for n in range(3 * HISTORY):
            for window in windows:
                window.add(row(n), NEVER_TRIMS, float(n))

    _, grew = traced(fill)
    assert {len(window.history()) for window in windows} == {HISTORY}
    assert fresh / targets / HISTORY <= 30  # bytes a row, taken up front
    assert grew / targets <= 1_500  # the newest row, kept whole; 200 reduced rows were ~31 KB


def history_of(rng: random.Random, steps: int) -> list[tuple[Result, bool]]:
    """Outages, soft failures, slow spells, checks without a status, late results, and rows without a latency
    (True: a row an older version stored, its latency NULL; a check of this one always measures it)."""
    results, at = [], 1000.0
    for n in range(steps):
        at += rng.choice([1.0, 1.0, 1.0, 5.0, 40.0, 0.0])
        down = rng.random() < (0.8 if (n // 60) % 3 == 1 else 0.2)
        soft = down and rng.random() < 0.4
        late = rng.random() < 0.1
        status, latency = rng.choice([200, 500, 503, None]), rng.choice([5.0, 6.0, 80.0, 300.0, None])
        result = Result(
            "api",
            "http://api/",
            not down,
            "warning" if soft else "critical" if down else "ok",
            status,
            0.0 if latency is None else latency,
            rng.choice(["timeout", "unexpected_status", "tcp_refused"]) if down else None,
            f"check {n}",
            at - rng.uniform(1.0, 30.0) if late else at,
        )
        results.append((result, latency is None))
    return results


def stored_without_latency(store: Store) -> None:
    """The row just added as an older version left it: no latency."""
    table = "results_recent" if store.engine.name == "sqlite" else "results"  # SQLite's ``results`` is a view
    with store.transaction() as db:
        db.execute(f"UPDATE {table} SET latency_ms = NULL WHERE id = (SELECT max(id) FROM {table})")  # noqa: S608


def test_detection_on_the_window_equals_detection_on_the_rows_read_from_the_store(tmp_path: Path) -> None:
    rng = random.Random(22)
    for run, (detectors, limit) in enumerate(
        [
            (Detectors(flap_window=60, latency_recent=3, latency_baseline=10, window_size=6, recover_after=3), HISTORY),
            (Detectors(flap_window=86_400, consecutive=5, flap_changes=6, latency_margin=0.001), 60),
        ]
    ):  # full
        store = Store(tmp_path / f"{run}.db")
        window, kinds, now = Window([], limit), set(), 0.0
        for n, (result, blank) in enumerate(history_of(rng, 400)):
            store.results.add_results([result])
            row: Checked = result
            if blank:  # the window is handed the row as stored
                stored_without_latency(store)
                row = Held(result.checked_at, int(result.ok), None, result.severity, result.error, result.status_code, result.detail)
            now = max(now, result.checked_at + 0.5)  # the clock: a late result does not turn it back
            held = window.add(row, detectors, now)
            stored = store.results.recent_results("api", limit)
            if n % 130 == 129:  # a restart: the window is read from the store again
                window = Window(stored, limit)
            found = patterns.detect("api", held, detectors, now)
            assert found == patterns.detect("api", stored, detectors, now), n
            kinds |= {p.name for p in found}
            assert patterns.recovered(held, 3) == patterns.recovered(stored, 3)
            assert evidence.evidence(held, result) == evidence.evidence(stored, result)
            assert held[0].detail == stored[0].detail  # the newest row whole
            assert [kept(r) for r in held] == [kept(r) for r in stored[: len(held)]]
        assert kinds == {"consecutive", "window", "flapping", "latency_drift"}
        store.close()


def test_a_late_result_takes_its_place_in_a_full_window_and_one_older_than_all_is_not_kept() -> None:
    window = Window([], 5)
    for n in (10, 20, 30, 40, 50):
        window.add(row(n), NEVER_TRIMS, 50.0)
    held = window.add(row(35), NEVER_TRIMS, 50.0)
    assert [r.checked_at for r in held] == [50.0, 40.0, 35.0, 30.0, 20.0] and held[0].detail == "status 50"
    held = window.add(row(5), NEVER_TRIMS, 50.0)
    assert [r.checked_at for r in held] == [50.0, 40.0, 35.0, 30.0, 20.0]
    assert [r.ok for r in held] == [1, 1, 0, 1, 1] and held[2].error == "unexpected_status"


def test_a_window_sized_for_its_targets_interval_finds_what_a_window_of_history_finds() -> None:
    """A window holds only the rows its detectors can see at its target's interval (``rows_needed``): at 30 s
    that is 110 rows, not 200, and the detectors find the same in both, outages, flapping and drift alike."""
    from monitor.incidents.history import rows_needed

    assert rows_needed(Detectors(), 30.0, HISTORY) == 110 and rows_needed(Detectors(), 1.0, HISTORY) == HISTORY
    assert rows_needed(Detectors(), 5.0, HISTORY) == 122  # the flapping window: 600 s of 5 s checks, and two
    rng = random.Random(34)
    for interval, detectors in ((5.0, Detectors()), (30.0, Detectors()), (60.0, Detectors(flap_window=3600, latency_baseline=80))):
        rows = rows_needed(detectors, interval, HISTORY)
        assert rows < HISTORY
        small, full, kinds, at = Window([], rows), Window([], HISTORY), set(), 1000.0
        for n in range(3 * HISTORY):
            at += interval + rng.uniform(0.0, 0.5)  # a check starts late, never early
            phase = (n // 40) % 4  # healthy, flapping, slow, down: 40 checks each
            down = rng.random() < 0.5 if phase == 1 else phase == 3
            ms = rng.choice([5.0, 6.0, 7.0]) * (40 if phase == 2 else 1)
            result = Result("api", "http://api/", not down, "critical" if down else "ok", 500 if down else 200, ms, None, "x", at)
            held, whole = small.add(result, detectors, at), full.add(result, detectors, at)
            found = patterns.detect("api", held, detectors, at)
            assert found == patterns.detect("api", whole, detectors, at), (interval, n)
            assert patterns.recovered(held, detectors.recover_after) == patterns.recovered(whole, detectors.recover_after)
            kinds |= {p.name for p in found}
        assert kinds >= {"consecutive", "window", "flapping", "latency_drift"}, (interval, kinds)


def _judged(interval: str = "30s", detectors: dict[str, Any] | None = None) -> Any:
    from monitor.config import Config

    target: dict[str, Any] = {
        "name": "api",
        "url": "http://127.0.0.1:9/api",
        "interval": interval,
        **({"detectors": detectors} if detectors else {}),
    }
    return Config.model_validate({"targets": [target]}).targets


def _failing(at: float, ok: bool) -> Result:
    return Result(
        "api", "http://127.0.0.1:9/api", ok, "ok" if ok else "critical", 200 if ok else 503, 5.0, None if ok else "http_5xx", "", at
    )


def test_a_reload_that_widens_the_detectors_window_reads_the_window_again() -> None:
    """A window made under the defaults (110 rows at 30 s) is dropped when a reload asks for 150 rows: read again,
    it finds '120 failures in the last 150 checks' as a window made after the reload does (it never grew)."""
    from monitor.incidents.verdicts import Judge, Settings

    wide = {"window_size": 150, "window_failures": 120, "consecutive": 1000}
    pattern = ([False] * 4 + [True]) * 30  # 120 failures in 150 checks, never 5 in a row
    now = [1000.0]
    judge = Judge(read=lambda name: [], clock=lambda: now[0])
    judge.follow(_judged(), Settings())
    judge([_failing(1000.0, True)])  # its window is made under the defaults
    judge.follow(_judged(detectors=wide), Settings())  # the reload
    last = None
    for i, ok in enumerate(pattern):
        now[0] = 2000.0 + i
        last = judge([_failing(now[0], ok)])
    assert last is not None and last.verdicts
    assert any("failures in last 150" in p.summary for p in last.verdicts[0].found)


def test_a_long_outage_is_counted_whole_past_the_rows_a_window_holds() -> None:
    """150 consecutive failures of a target checked every 30 s (its window holds 110 rows): the summary says 150,
    and the evidence says when the run began, not when the oldest row held was checked."""
    from monitor.incidents.verdicts import Judge, Settings

    now = [0.0]
    judge = Judge(read=lambda name: [], clock=lambda: now[0])
    judge.follow(_judged(), Settings())
    for i in range(150):
        now[0] = 30.0 * (i + 1)
        last = judge([_failing(now[0], False)])
    window = judge._windows["api"]
    held = window.history()
    assert len(held) == 110 and held.failing == (150, 30.0)
    assert "150 consecutive failures of api" in [p.summary for p in patterns.detect("api", held, Detectors(), now[0])]
    assert evidence.failing_since(held) == 30.0 and last.verdicts[0].failed
    now[0] += 30.0
    assert judge([_failing(now[0], True)]) is not None and window.history().failing is None and window.run == 0


def test_a_quorum_targets_window_holds_its_flapping_window_from_every_location() -> None:
    """The tracker adds each location's result of a quorum target to one window: 3 locations, 3 rows an
    interval, so its window is sized for a third of the interval and still sees 10 minutes of flapping."""
    from outbox import quiet_writer

    from monitor.config import Config
    from monitor.incidents.history import rows_needed
    from monitor.incidents.tracker import Tracker

    config = Config.model_validate(
        {
            "replicas": 3,
            "replica_index": 0,
            "lease": "3s",
            "targets": [{"name": "q", "url": "http://127.0.0.1:9/q", "interval": "10s", "quorum": {"locations": 3, "agree": 2}}],
        }
    )
    store = Store(":memory:")
    tracker = Tracker(store, Detectors(), writer=quiet_writer(store))
    tracker.apply_config(config)
    rows = tracker.rows["q"]
    assert rows == rows_needed(Detectors(), 10.0 / 3, HISTORY) > rows_needed(Detectors(), 10.0, HISTORY)
    cfg, window, history = Detectors(), Window([], rows), None
    for k in range(60):  # flapping for 4 minutes, then failing
        ok = k < 24 and (k // 2) % 2 == 0
        for location in range(3):
            history = window.add(_row(10.0 * k + location / 10, ok), cfg, 10.0 * k + 0.3)
    assert history is not None and patterns.flapping("q", history, cfg.flap_changes, cfg.flap_window, 590.3) is not None
    store.close()


def _row(at: float, ok: bool) -> Held:
    return Held(at, int(ok), 5.0, "ok" if ok else "critical")


def test_a_late_result_counts_in_the_run_of_failures_past_the_rows_held() -> None:
    """A result stored after a newer one (a check that started earlier and ended later) changed the rows held but
    not the run counted past them: a late failure inside a long outage was left out of its length, and a late pass
    inside it did not end it."""
    cfg = Detectors(flap_window=60)
    window = Window([], 20)
    for k in range(50):  # 50 failures, 30 s apart: more than the 20 rows held
        window.add(_row(30.0 * k, False), cfg, 30.0 * k)
    assert (window.run, window.run_since) == (50, 0.0)
    window.add(_row(30.0 * 48 + 5, False), cfg, 30.0 * 49 + 1)  # late, among the rows held
    assert window.history().failing == (51, 0.0)
    window.add(_row(-10.0, False), cfg, 30.0 * 49 + 2)  # late, older than every row held: the outage began earlier
    assert window.history().failing == (52, -10.0)
    window.add(_row(30.0 * 45 + 5, True), cfg, 30.0 * 49 + 3)  # a pass inside the run: the run is what came after it
    assert (window.run, window.run_since) == (5, 30.0 * 46) and window.history().failing is None
    window.add(_row(30.0 * 50, True), cfg, 30.0 * 50)
    window.add(_row(30.0 * 49 + 20, False), cfg, 30.0 * 50 + 1)  # late, after the run ended: a run of one, before the pass
    assert window.run == 0
