"""The incident and its first notification commit together: a crash between them loses neither."""

from __future__ import annotations

import time

import pytest
from prometheus_client import CollectorRegistry

from monitor.checks.engine import Result
from monitor.config import Config
from monitor.daemon import Daemon
from monitor.store import Store
from monitor.store.engines import Sqlite
from monitor.store.postgres import Postgres


class Crash(BaseException):
    """A process dying at this exact point: nothing after it runs, no handler catches it."""


def test_a_crash_right_after_an_incident_opens_never_loses_its_first_notification(db_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from monitor.incidents import writer as incidents

    config = Config.model_validate(
        {
            "targets": [{"name": "api", "url": "http://127.0.0.1:9/api"}],
            "detectors": {"consecutive": 1},
            "alerts": {"webhooks": [{"url": "http://127.0.0.1:9/hook"}]},
            "agent": {"mode": "off"},
            "metrics": {"enabled": False},
        }
    )
    daemon = Daemon(config, store=Store(db_path), registry=CollectorRegistry())

    def crash(*args: object, **kwargs: object) -> None:
        raise Crash

    monkeypatch.setattr(incidents.Writer, "_get", crash)  # just after the incident is written
    with pytest.raises(Crash):
        daemon.cycle.after_checks(
            [Result("api", "u", False, "critical", 500, 5.0, "unexpected_status", "", time.time())]
        )  # checked now: an old result is stored, not judged
    assert isinstance(daemon.store.engine, (Sqlite, Postgres))  # either store: its one connection, cut
    daemon.store.engine.conn.close()

    after = Store(db_path)  # the restart
    [incident] = after.incidents.open_incidents("api")
    [queued] = after.outbox.due_notifications(10**12)
    assert (queued.message["event"], queued.message["incident"]["id"]) == ("opened", incident.id)
