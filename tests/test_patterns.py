"""Detectors on hand-made histories, and the incident lifecycle on a real store."""

from __future__ import annotations

from dataclasses import replace

from outbox import quiet_writer

from monitor.checks.engine import Result
from monitor.config import Detectors, Maintenance
from monitor.incidents import patterns
from monitor.incidents.history import Held
from monitor.incidents.maintenance import Maintenance as Silences
from monitor.incidents.tracker import Tracker
from monitor.store import Store


def rows(oks: str, latency: float = 10.0, step: float = 30.0, now: float = 10_000.0) -> list[Held]:
    """``"xx.."`` -> results newest first: x failed, . passed, one every ``step`` seconds."""
    return [Held(now - i * step, int(c == "."), latency) for i, c in enumerate(oks)]


def test_consecutive_counts_from_the_newest() -> None:
    assert patterns.consecutive("api", rows("xxx."), 3) == patterns.Pattern("consecutive", "api", "3 consecutive failures of api")
    assert patterns.consecutive("api", rows("xx.x"), 3) is None


def test_one_missed_or_failed_heartbeat_is_conclusive() -> None:
    missed = [replace(rows("x.")[0], error="heartbeat_missed"), rows("x.")[1]]
    assert patterns.consecutive("backup", missed, 3) == patterns.Pattern("consecutive", "backup", "backup: silent")
    refused = [replace(rows("x.")[0], error="tcp_refused"), rows("x.")[1]]
    assert patterns.consecutive("db", refused, 3) is None  # a probe can be unlucky once: it waits for three


def test_the_new_error_kinds_read_as_root_causes() -> None:
    read = {
        error: patterns.root_cause_of(error)
        for error in (
            "tcp_refused",
            "tcp_timeout",
            "tcp_unexpected_reply",
            "cert_expired",
            "cert_expiring",
            "cert_untrusted",
            "cert_hostname_mismatch",
            "dns_nxdomain",
            "dns_servfail",
            "dns_timeout",
            "dns_unexpected_answer",
            "heartbeat_missed",
            "heartbeat_failed",
        )
    }
    assert read == {
        "tcp_refused": "connection_refused",
        "tcp_timeout": "timeout",
        "tcp_unexpected_reply": "bad_content",
        "cert_expired": "tls_error",
        "cert_expiring": "tls_error",
        "cert_untrusted": "tls_error",
        "cert_hostname_mismatch": "tls_error",
        "dns_nxdomain": "dns_failure",
        "dns_servfail": "dns_failure",
        "dns_timeout": "dns_failure",
        "dns_unexpected_answer": "dns_failure",
        "heartbeat_missed": "job_missing",
        "heartbeat_failed": "job_failed",
    }


def test_window_counts_failures_in_the_last_m() -> None:
    found = patterns.window("api", rows("x.x..x...." + "xxxx"), 3, 10)
    assert found is not None and found.summary == "3 failures in last 10 checks of api"
    assert patterns.window("api", rows("x.x......." + "xxxx"), 3, 10) is None


def test_flapping_counts_changes_inside_the_window() -> None:
    found = patterns.flapping("api", rows("x.x.x"), 4, 600, now=10_000)
    assert found is not None and found.summary == "flapping: 4 changes in 10 min"
    assert patterns.flapping("api", rows("x.x.x.....", step=300), 4, 600, now=10_000) is None


def test_latency_drift_against_the_baseline() -> None:
    history = rows("." * 5, latency=100) + rows("." * 30, latency=20)
    found = patterns.latency_drift("api", history, 3.0, 5, 50)
    assert found is not None and "median 100 ms vs baseline 20 ms (x5.0)" in found.summary
    assert patterns.latency_drift("api", rows("." * 35, latency=20), 3.0, 5, 50) is None
    assert patterns.latency_drift("api", rows("." * 6, latency=20), 3.0, 5, 50) is None


def test_latency_drift_needs_a_margin_in_milliseconds_too() -> None:
    """A loopback target at 1 ms that answers in 4 ms on a loaded machine is x4, and no incident."""
    history = rows("." * 5, latency=4) + rows("." * 30, latency=1)
    assert patterns.latency_drift("api", history, 3.0, 5, 50, margin_ms=25) is None
    assert patterns.detect("api", history, Detectors(), now=10_000) == []
    slower = rows("." * 5, latency=40) + rows("." * 30, latency=1)
    found = patterns.latency_drift("api", slower, 3.0, 5, 50, margin_ms=25)
    assert found is not None and "median 40 ms vs baseline 1 ms" in found.summary


def test_alert_text_names_the_main_pattern_and_the_rest() -> None:
    found = patterns.detect("api", rows("xxx.x.x..."), Detectors(), now=10_000)
    assert [p.name for p in found] == ["consecutive", "flapping", "window"]
    assert patterns.alert_text(found) == (
        "[ALERT] Pattern detected: 3 consecutive failures of api (flapping: 5 changes in 10 min; 5 failures in last 10 checks of api)"
    )
    assert patterns.alert_text([]) == ""


def record(store: Store, target: str, ok: bool, at: float) -> None:
    store.results.add_results([Result(target, "u", ok, "ok" if ok else "critical", 200, 5.0, None, "", at)])


def test_incident_opens_updates_and_resolves(db_path: str) -> None:
    clock = [1000.0]
    store = Store(db_path, clock=lambda: clock[0])
    tracker = Tracker(
        store,
        Detectors(consecutive=2, window_failures=3, window_size=5, recover_after=2),
        writer=quiet_writer(store),
        clock=lambda: clock[0],
    )
    kinds: list[list[str]] = []
    for ok in [True, False, False, False, True, True]:
        clock[0] += 30
        record(store, "api", ok, clock[0])
        _, events = tracker.observe("api")
        kinds.append([e.kind for e in events])
    assert kinds == [[], [], ["opened"], [], [], ["resolved"]]
    [incident] = store.incidents.recent_incidents()
    assert incident.status == "resolved" and incident.pattern == "consecutive"
    assert incident.summary == "3 consecutive failures of api; 3 failures in last 4 checks of api"
    assert incident.closed_at == clock[0]


def test_maintenance_marks_the_incident_silenced(db_path: str) -> None:
    store = Store(db_path)
    window = Maintenance.model_validate({"targets": ["api"], "start": "2000-01-01T00:00:00Z", "end": "2999-01-01T00:00:00Z"})
    tracker = Tracker(store, Detectors(consecutive=1), writer=quiet_writer(store, maintenance=Silences(lambda: [window])))
    record(store, "api", False, 1.0)
    _, [event] = tracker.observe("api")
    assert event.kind == "opened" and event.incident.silenced == 1


def test_a_flapping_target_recovers_and_each_restarted_flap_names_the_last_incident(db_path: str) -> None:
    clock = [1000.0]
    store = Store(db_path, clock=lambda: clock[0])
    tracker = Tracker(
        store,
        Detectors(consecutive=3, window_failures=3, window_size=10, flap_changes=4, flap_window=300, recover_after=2),
        writer=quiet_writer(store),
        clock=lambda: clock[0],
    )
    kinds: list[str] = []
    for ok in [True, False, True, True, False, True, True, False, True, True, False, True, True] + [True] * 12:
        clock[0] += 30
        record(store, "api", ok, clock[0])
        kinds.extend(e.kind for e in tracker.observe("api")[1])
    first, *restarted = store.incidents.recent_incidents()[::-1]
    assert kinds == ["opened", "resolved"] * (1 + len(restarted)) and restarted
    assert {i.pattern for i in (first, *restarted)} == {"flapping"}
    for before, after in zip([first, *restarted], restarted, strict=False):
        assert f"flap restarted: follows #{before.id}" in (after.notes or "")
