"""Alert states that match what happened: real checks of a loopback server, real SQLite, a real webhook receiver,
a fake clock.

A maintenance window that ends on a failing target sends one "opened"; reminders and escalations come within
one tick of their time; latency drift pages only when asked; "resolved" says what the target answers now;
each window's start and end is logged once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import Any

import pytest
from past import known
from prometheus_client import CollectorRegistry
from servers import Misbehaving, Receiver, wait_for

from monitor.alerts.delivery import Alerts
from monitor.alerts.routes import Routes
from monitor.checks.engine import Checker
from monitor.config import Config
from monitor.core.results import Result
from monitor.daemon import Cycle, Daemon, daemon_cycle
from monitor.incidents.maintenance import Maintenance
from monitor.store import Store

T0 = 1_700_000_000.0


class Clock:
    """A fake clock; ``creep`` seconds pass at each reading, as real time passes while code runs."""

    def __init__(self, now: float = T0, creep: float = 0.0) -> None:
        self.now, self.creep = now, creep

    def __call__(self) -> float:
        now = self.now
        self.now += self.creep
        return now


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat()


@pytest.fixture
def server() -> Iterator[Misbehaving]:
    with Misbehaving() as web:
        web.state = "error"
        yield web


@pytest.fixture
def hooks() -> Iterator[dict[str, Receiver]]:
    with ExitStack() as stack:
        yield {name: stack.enter_context(Receiver()) for name in ("ops", "pager")}


def setup(spec: dict[str, Any], hooks: dict[str, Receiver], db_path: str, clock: Clock) -> tuple[Config, Store, Alerts, Cycle]:
    spec = {"agent": {"mode": "off"}, **spec, "alerts": {"webhooks": [{"url": hook.url, "name": name} for name, hook in hooks.items()]}}
    config = Config.model_validate(spec)
    store = Store(db_path, clock=clock)
    alerts = Alerts(
        config.alerts, store, clock=clock, routes=Routes(config), maintenance=Maintenance(lambda: config.maintenance, clock=clock)
    )
    return config, store, alerts, daemon_cycle(config, store, alerts=alerts, clock=clock)


def check(cycle: Cycle, config: Config, clock: Clock, times: int = 1) -> None:
    for _ in range(times):
        clock.now += 10
        cycle.after_checks([r.__class__(**{**r.to_dict(), "checked_at": clock.now}) for r in Checker().run(config.targets)])


def events(hook: Receiver) -> list[str]:
    return [message["event"] for message in hook.received]


def test_a_window_that_ends_while_the_target_still_fails_sends_one_opened_alert(
    server: Misbehaving, hooks: dict[str, Receiver], db_path: str
) -> None:
    clock = Clock()
    config, store, alerts, cycle = setup(
        {
            "targets": [{"name": "api", "url": server.url("/state"), "timeout": 1, "detectors": {"consecutive": 1}}],
            "maintenance": [{"targets": ["api"], "start": iso(T0 - 60), "end": iso(T0 + 120), "reason": "upgrade"}],
        },
        hooks,
        db_path,
        clock,
    )
    check(cycle, config, clock, times=3)  # opens in the window: recorded, nobody told
    [incident] = store.incidents.open_incidents("api")
    assert alerts.deliver_due() == 0 and events(hooks["ops"]) == []

    clock.now = T0 + 125  # the window is over, and api still answers 500
    check(cycle, config, clock, times=4)
    alerts.deliver_due()
    assert events(hooks["ops"]) == ["opened"] == events(hooks["pager"])
    [fact] = hooks["ops"].received[0]["incidents"]
    assert fact["id"] == incident.id and fact["status_code"] == 500
    assert not known(store.incidents.incident(incident.id)).silenced

    server.state = "healthy"
    check(cycle, config, clock, times=3)
    alerts.deliver_due()
    assert events(hooks["ops"]) == ["opened", "resolved"]


def test_a_failure_that_ends_inside_its_window_is_never_sent_and_a_silence_by_hand_stays(
    server: Misbehaving, hooks: dict[str, Receiver], db_path: str
) -> None:
    clock = Clock()
    config, store, alerts, cycle = setup(
        {
            "targets": [{"name": "api", "url": server.url("/state"), "timeout": 1, "detectors": {"consecutive": 1}}],
            "maintenance": [{"targets": ["api"], "start": iso(T0 - 60), "end": iso(T0 + 120)}],
        },
        hooks,
        db_path,
        clock,
    )
    check(cycle, config, clock)
    server.state = "healthy"
    check(cycle, config, clock, times=2)
    assert store.incidents.open_incidents() == []
    server.state = "error"
    check(cycle, config, clock)  # a second incident, opened in the window and silenced there by a person
    [second] = store.incidents.open_incidents("api")
    store.incidents.audit_web_action(second.id, "silence", ok=True, detail="silenced", note="known", client="127.0.0.1")
    cycle.incidents.silence(second.id, "silenced in the web UI: known")
    clock.now = T0 + 125
    check(cycle, config, clock, times=3)
    alerts.deliver_due()
    assert events(hooks["ops"]) == [] and known(store.incidents.incident(second.id)).silenced == 1


def test_a_failure_told_before_its_window_that_recovers_in_it_is_resolved_when_the_window_ends(
    server: Misbehaving, hooks: dict[str, Receiver], db_path: str
) -> None:
    """Found by tests/test_lifecycle.py: the "resolved" was held by the window and never sent, so the receivers kept
    an alert open for ever."""
    clock = Clock()
    config, store, alerts, cycle = setup(
        {
            "targets": [{"name": "api", "url": server.url("/state"), "timeout": 1, "detectors": {"consecutive": 1}}],
            "maintenance": [{"targets": ["api"], "start": iso(T0 + 30), "end": iso(T0 + 120), "reason": "upgrade"}],
        },
        hooks,
        db_path,
        clock,
    )
    check(cycle, config, clock)
    alerts.deliver_due()
    assert events(hooks["ops"]) == ["opened"]
    clock.now = T0 + 40  # in the window, api recovers
    server.state = "healthy"
    check(cycle, config, clock, times=2)
    assert store.incidents.open_incidents() == [] and alerts.deliver_due() == 0 and events(hooks["ops"]) == ["opened"]
    clock.now = T0 + 115
    assert alerts.deliver_due() == 0
    clock.now = T0 + 120  # the window is over: its held "resolved" goes out, once
    alerts.deliver_due()
    clock.now += 60
    alerts.deliver_due()
    assert events(hooks["ops"]) == ["opened", "resolved"] == events(hooks["pager"])
    assert hooks["ops"].received[-1]["incidents"][0]["status_code"] == 200


class Jobs:
    """APScheduler's BackgroundScheduler, as the daemon sees it: it records the jobs, and the test runs them
    on the fake clock, at the times the real one would."""

    made: list[Jobs] = []

    def __init__(self, **_: Any) -> None:
        self.jobs: list[tuple[Callable[[], Any], float]] = []
        Jobs.made.append(self)

    def add_job(self, func: Callable[[], Any], trigger: str, *, seconds: float, **_: Any) -> None:
        assert trigger == "interval"
        self.jobs.append((func, seconds))

    def start(self) -> None:
        pass

    def shutdown(self, wait: bool = True) -> None:
        pass


def test_reminders_and_escalations_come_within_one_tick_of_their_time(
    server: Misbehaving, hooks: dict[str, Receiver], db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``repeat_every: 1m`` reminded every 2 minutes, and ``escalate.after: 2m`` fired at 2 m 54 s."""
    import apscheduler.schedulers.background as background

    monkeypatch.setattr(background, "BackgroundScheduler", Jobs)
    server.state = "healthy"
    start = float(int(time.time())) + 3600  # after the real clock: the daemon's first check is older
    clock = Clock(start, creep=0.001)
    config = Config.model_validate(
        {
            "database": db_path,
            "agent": {"mode": "off"},
            "memory": {"embedder": "none"},
            "alerts": {"webhooks": [{"url": hook.url, "name": name} for name, hook in hooks.items()]},
            "targets": [
                {
                    "name": "api",
                    "url": server.url("/healthy"),
                    "interval": "1h",
                    "timeout": 1,
                    "detectors": {"consecutive": 1},
                    "alerts": {"receivers": ["ops"], "repeat_every": "1m", "escalate": {"after": "2m", "receivers": ["pager"]}},
                }
            ],
        }
    )
    daemon = Daemon(config, store=Store(db_path, clock=clock), registry=CollectorRegistry(), clock=clock)
    daemon.start(serve_metrics=False)
    try:
        wait_for(lambda: daemon.store.results.count_results("api") == 1)  # the first check, as the daemon started
        [scheduler] = Jobs.made[-1:]
        clock.now = start + 7
        daemon.deliver(
            [
                Result(
                    "api", server.url("/healthy"), False, "critical", 500, 3.0, "http_status", "status 500 not in expected codes", clock.now
                )
            ]
        )
        wait_for(lambda: events(hooks["ops"]) == ["opened"])
        heard: dict[str, list[tuple[int, str]]] = {"ops": [], "pager": []}  # seconds after it opened, event
        seen = {name: len(hook.received) for name, hook in hooks.items()}
        for second in range(8, 7 + 6 * 60 + 10):
            clock.now = start + second
            for func, every in scheduler.jobs:
                if second % every == 0:
                    func()
            wait_for(lambda: daemon.store.outbox.pending_notifications() == 0)
            for name, hook in hooks.items():
                heard[name] += [(second - 7, m["event"]) for m in hook.received[seen[name] :]]
                seen[name] = len(hook.received)
    finally:
        daemon.stop()
    reminders = [at for at, event in heard["ops"] if event == "reminder"]
    [escalated] = [at for at, event in heard["pager"] if event == "escalated"]
    tick = 10  # what "within one tick" may take here: the daemon looks every few seconds
    assert 120 <= escalated <= 120 + tick, heard
    assert len(reminders) == 6, heard
    assert all(60 * k <= at <= 60 * k + tick for k, at in enumerate(reminders, start=1)), heard


def test_latency_drift_opens_nothing_unless_asked(hooks: dict[str, Receiver], db_path: str) -> None:
    """A loopback target went "median 52 ms vs baseline 3 ms" on a loaded machine, and paged."""
    for asked, pages in ((None, []), (True, ["opened"])):
        clock = Clock()
        detectors = {"page_on_drift": True} if asked else {}
        config, store, alerts, cycle = setup(
            {"targets": [{"name": "mail", "url": "tcp://127.0.0.1:9", **({"detectors": detectors} if asked else {})}]},
            hooks,
            f"{db_path}.{asked}",
            clock,
        )
        for latency in [3.0] * 50 + [52.0] * 5:
            clock.now += 10
            cycle.after_checks([Result("mail", "tcp://127.0.0.1:9", True, "ok", None, latency, None, "", clock.now, kind="tcp")])
        alerts.deliver_due()
        opened = [m for m in hooks["ops"].received if m["incident"]["target"] == "mail"]
        assert [m["event"] for m in opened] == pages
        assert [i.pattern for i in store.incidents.recent_incidents()] == (["latency_drift"] if asked else [])


def test_resolved_says_what_the_target_answers_now(server: Misbehaving, hooks: dict[str, Receiver], db_path: str) -> None:
    clock = Clock()
    config, store, alerts, cycle = setup(
        {"targets": [{"name": "api", "url": server.url("/state"), "timeout": 1, "detectors": {"consecutive": 1}}]}, hooks, db_path, clock
    )
    check(cycle, config, clock)
    alerts.deliver_due()
    server.state = "healthy"
    check(cycle, config, clock, times=2)
    alerts.deliver_due()
    assert events(hooks["ops"]) == ["opened", "resolved"]
    resolved = hooks["ops"].received[-1]
    [fact] = resolved["incidents"]
    assert fact["status_code"] == 200 and fact["error"] is None and not fact["excerpt"]
    assert "HTTP 200" in resolved["text"] and "500" not in resolved["text"] and "boom" not in resolved["text"]


def test_each_window_is_logged_once_when_it_starts_and_once_when_it_ends(caplog: pytest.LogCaptureFixture) -> None:
    """A reload that moved a window's end logged "started … until 13:52" and "ended" at once, then "ended" again."""
    clock = Clock(T0)
    api = [{"name": "api", "url": "http://127.0.0.1:9/"}]
    first = Config.model_validate(
        {"targets": api, "maintenance": [{"targets": ["api"], "start": iso(T0 - 60), "end": iso(T0 + 60), "reason": "upgrade"}]}
    )
    windows = [first]
    maintenance = Maintenance(lambda: windows[-1].maintenance, clock=clock)
    caplog.set_level(logging.INFO, logger="monitor.maintenance")
    said = maintenance.announce()
    windows.append(
        Config.model_validate(
            {
                "targets": api,
                "maintenance": [  # reloaded: 2 minutes longer, and a new reason
                    {"targets": ["api"], "start": iso(T0 - 60), "end": iso(T0 + 180), "reason": "upgrade, part 2"}
                ],
            }
        )
    )
    clock.now += 10
    said += maintenance.announce()
    for _ in range(30):
        clock.now += 10
        said += maintenance.announce()
    started = [line for line in said if line.startswith("maintenance started")]
    ended = [line for line in said if line.startswith("maintenance ended")]
    assert len(started) == 1 and len(ended) == 1, said
    assert said.index(ended[0]) == len(said) - 1 and said == [r.getMessage() for r in caplog.records]
