"""Recurring maintenance windows: an RRULE in a time zone with a duration, read through the config loader;
alerts held while one is in force (checks go on), and each start and end logged."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path

import pytest
from outbox import quiet_writer

from monitor import config
from monitor.config import ConfigError, Detectors
from monitor.core.results import Result
from monitor.incidents.maintenance import Maintenance
from monitor.incidents.tracker import Tracker
from monitor.store import Store

TARGET = "targets:\n- {name: api, url: 'http://127.0.0.1:9/'}\n"


def at(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def load(tmp_path: Path, text: str) -> config.Config:
    path = tmp_path / "monitor.yaml"
    path.write_text(TARGET + text)
    return config.load(path)


def test_a_daily_window_in_berlin_keeps_its_local_time_across_the_spring_dst_change(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        "maintenance:\n- targets: [api]\n  rrule: FREQ=DAILY;BYHOUR=9;BYMINUTE=0\n"
        "  timezone: Europe/Berlin\n  duration: 1h\n  reason: backups\n",
    )
    [window] = cfg.maintenance
    # 09:00 in Berlin is 08:00 UTC before 31 March 2024 (CET) and 07:00 UTC after (CEST)
    assert not cfg.in_maintenance("api", at("2024-03-30T07:30:00+00:00"))
    assert cfg.in_maintenance("api", at("2024-03-30T08:30:00+00:00"))
    assert cfg.in_maintenance("api", at("2024-04-01T07:30:00+00:00"))
    assert not cfg.in_maintenance("api", at("2024-04-01T08:30:00+00:00"))
    assert not cfg.in_maintenance("other", at("2024-04-01T07:30:00+00:00"))
    starts = [start for start, _ in window.occurrences(at("2024-03-30T00:00:00+00:00"), at("2024-04-02T00:00:00+00:00"))]
    assert starts == [at("2024-03-30T08:00:00+00:00"), at("2024-03-31T07:00:00+00:00"), at("2024-04-01T07:00:00+00:00")]


def test_the_duration_is_elapsed_time_when_a_window_spans_the_autumn_change(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        "maintenance:\n- targets: [api]\n  rrule: FREQ=WEEKLY;BYDAY=SU;BYHOUR=1;BYMINUTE=30\n  timezone: Europe/Berlin\n  duration: 3h\n",
    )
    # Sunday 27 October 2024, 01:30 CEST = 23:30 UTC the day before; 3 h later is 02:30 UTC (03:30 CET)
    assert cfg.in_maintenance("api", at("2024-10-27T02:29:00+00:00"))
    assert not cfg.in_maintenance("api", at("2024-10-27T02:31:00+00:00"))
    assert not cfg.in_maintenance("api", at("2024-10-26T23:29:00+00:00"))


def test_a_rule_counts_from_start_and_ends_with_until(tmp_path: Path) -> None:
    cfg = load(
        tmp_path,
        "maintenance:\n- targets: [api]\n  rrule: FREQ=DAILY;INTERVAL=2;UNTIL=20300110T000000Z\n"
        "  start: 2030-01-01T22:00:00\n  timezone: America/New_York\n  duration: 30m\n",
    )
    assert cfg.in_maintenance("api", at("2030-01-02T03:10:00+00:00"))  # 22:10 in New York on 1 January
    assert not cfg.in_maintenance("api", at("2030-01-03T03:10:00+00:00"))  # every other day
    assert cfg.in_maintenance("api", at("2030-01-04T03:10:00+00:00"))
    assert not cfg.in_maintenance("api", at("2030-01-12T03:10:00+00:00"))  # after UNTIL


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("  rrule: FREQ=SOMETIMES\n  duration: 1h\n", "monitor.yaml:5: maintenance[0].rrule: 'FREQ=SOMETIMES' is not an RRULE"),
        ("  rrule: FREQ=DAILY;BYHOUR=25\n  duration: 1h\n", "monitor.yaml:5: maintenance[0].rrule: "),
        (
            "  rrule: DTSTART:20300101T000000\\nRRULE:FREQ=DAILY\n  duration: 1h\n",
            "monitor.yaml:5: maintenance[0].rrule: put the rule's first moment in start:",
        ),
        (
            "  rrule: FREQ=DAILY\n  timezone: Mars/Olympus_Mons\n  duration: 1h\n",
            "monitor.yaml:6: maintenance[0].timezone: 'Mars/Olympus_Mons' is not a time zone",
        ),
        ("  rrule: FREQ=DAILY\n  timezone: ../../etc/passwd\n  duration: 1h\n", "monitor.yaml:6: maintenance[0].timezone: "),
        ("  rrule: FREQ=DAILY;UNTIL=20300101T000000\n  duration: 1h\n", "UNTIL values must be specified in UTC"),
        ("  rrule: FREQ=DAILY\n", "monitor.yaml:4: maintenance[0]: rrule: needs duration:"),
        ("  rrule: FREQ=DAILY\n  duration: soon\n", "monitor.yaml:6: maintenance[0].duration: 'soon' is not a duration"),
        ("  rrule: FREQ=DAILY\n  duration: 1h\n  end: 2030-01-01T00:00:00Z\n", "end: is for one-off windows"),
        ("  start: 2030-01-01T00:00:00Z\n", "needs start: and end:, or rrule: and duration:"),
    ],
)
def test_bad_recurring_windows_are_named_by_file_line_and_field(tmp_path: Path, text: str, error: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(tmp_path, "maintenance:\n- targets: [api]\n" + text)
    assert error in str(info.value)


def test_alerts_are_held_in_a_recurring_window_while_checks_go_on(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cfg = load(
        tmp_path,
        "maintenance:\n- targets: [api]\n  rrule: FREQ=DAILY;BYHOUR=2\n  timezone: Europe/Berlin\n"
        "  duration: 1h\n  reason: nightly upgrade\n",
    )
    clock = [at("2024-06-01T00:30:00+00:00")]  # 02:30 in Berlin: in the window
    store = Store(tmp_path / "m.db", clock=lambda: clock[0])
    windows = Maintenance(lambda: cfg.maintenance, clock=lambda: clock[0])
    tracker = Tracker(store, Detectors(consecutive=1), writer=quiet_writer(store, maintenance=windows), clock=lambda: clock[0])
    store.results.add_results([Result("api", "http://127.0.0.1:9/", False, "critical", None, 0.0, "connect_error", "refused", clock[0])])
    _, [opened] = tracker.observe("api")
    assert opened.kind == "opened" and opened.incident.silenced == 1  # recorded, and no alert goes out
    assert store.results.count_results("api") == 1
    caplog.set_level(logging.INFO, logger="monitor.maintenance")
    assert windows.announce() == ["maintenance started for api until 2024-06-01 01:00 UTC (nightly upgrade)"]
    assert windows.announce() == []  # said once
    clock[0] = at("2024-06-01T01:00:00+00:00")
    assert windows.announce() == ["maintenance ended for api (nightly upgrade)"]
    assert not windows.covers("api")
    clock[0] = at("2024-06-02T00:00:00+00:00")
    assert windows.announce() == ["maintenance started for api until 2024-06-02 01:00 UTC (nightly upgrade)"]
    assert [r.getMessage() for r in caplog.records][-1].startswith("maintenance started for api until 2024-06-02")


@pytest.mark.parametrize(
    "rule, said",
    [
        ("FREQ=SECONDLY", "recurs more often than hourly"),
        ("FREQ=MINUTELY;INTERVAL=30", "recurs more often than hourly"),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30", "never occurs"),
    ],
)
def test_a_rule_that_would_hang_the_daemon_is_a_config_error(tmp_path: Path, rule: str, said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, f"maintenance:\n- targets: [api]\n  rrule: '{rule}'\n  duration: 1s\n")
    assert ":5: maintenance[0].rrule: " in str(caught.value) and said in str(caught.value)


@pytest.mark.parametrize(
    "rule, start",
    [
        ("FREQ=HOURLY;BYMINUTE=15", None),
        ("FREQ=HOURLY;INTERVAL=5", "2020-03-01T00:20:00Z"),
        ("FREQ=DAILY;INTERVAL=3;BYHOUR=4", None),
        ("FREQ=MONTHLY;BYDAY=1SU;BYHOUR=2", None),
    ],
)
def test_windows_are_found_fast_years_after_the_rule_began(tmp_path: Path, rule: str, start: str | None) -> None:
    """A status page asks for every window each request, the daemon at every incident: counting up from 2020
    took seconds for an hourly rule; the answers stay those of the rule counted from its start."""
    import time

    from dateutil.rrule import rrulestr

    anchored = f"\n  start: {start}" if start else ""
    cfg = load(tmp_path, f"maintenance:\n- targets: [api]\n  rrule: '{rule}'\n  duration: 10m\n  timezone: Europe/Berlin{anchored}\n")
    [window] = cfg.maintenance
    now = at("2031-07-04T12:34:00+00:00")
    began = time.perf_counter()
    found = window.occurrences(now, now + 7 * 86400)
    active = [window.active(now + minutes * 60) for minutes in range(0, 600, 7)]
    assert time.perf_counter() - began < 0.5
    zone = window._local(now).tzinfo
    first = datetime.fromisoformat(start).astimezone(zone) if start else datetime(2020, 1, 1, tzinfo=zone)
    truth = rrulestr(rule, dtstart=first).between(window._local(now - 600), window._local(now + 7 * 86400), inc=True)
    assert found == [(m.timestamp(), m.timestamp() + 600) for m in truth if m.timestamp() + 600 > now][:100]
    assert any(active) == any(s <= now + m * 60 < e for m in range(0, 600, 7) for s, e in found)
