"""Notification channels through Apprise: one config line per service, tested via Apprise's JSON URL."""

from __future__ import annotations

import pytest
from outbox import plain_alerts, queue
from past import known
from servers import Receiver

from monitor.config import Config, ConfigError, parse
from monitor.core.diagnoses import Diagnosed
from monitor.incidents.tracker import Event
from monitor.store import Store
from monitor.store.writes import IncidentWrites


def test_apprise_urls_get_a_readable_title_and_body_with_the_diagnosis_and_past_fix(db_path: str) -> None:
    with Receiver() as hook:
        url = hook.url.replace("http://", "json://")
        store = Store(db_path)
        alerts = plain_alerts(Config.model_validate({"alerts": {"notify": [url]}}).alerts, store)
        past = IncidentWrites(store).open_incident("api", "consecutive", "pool exhausted", root_cause="server_error")
        IncidentWrites(store).close_incident(past, "raised the DB pool to 50 (CHG-1042)")
        now = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")
        queue(alerts, Event("opened", known(store.incidents.incident(now))))
        assert alerts.deliver_due() == 1
        IncidentWrites(store).record_diagnosis(
            None,
            now,
            Diagnosed(
                diagnosis="the pool is exhausted again",
                root_cause="server_error",
                related_incident=past,
                confidence="high",
                suspected_cause="5xx",
            ),
        )
        queue(alerts, Event("diagnosed", known(store.incidents.incident(now))))
        assert alerts.deliver_due() == 1
        IncidentWrites(store).close_incident(now)
        queue(alerts, Event("resolved", known(store.incidents.incident(now))))
        assert alerts.deliver_due() == 1
    opened, diagnosed, resolved = hook.received
    assert opened["title"] == f"[monitor] api: incident #{now} opened (critical)"
    assert "3 consecutive failures of api" in opened["message"] and opened["type"] == "failure"
    assert "server_error (high confidence)" in diagnosed["message"]
    assert f"past incident #{past}, fixed by: raised the DB pool to 50 (CHG-1042)" in diagnosed["message"]
    assert resolved["title"] == f"[monitor] api: incident #{now} resolved" and resolved["type"] == "success"
    # the outbox names the channel by a digest, never by its URL
    receivers = {row[0] for row in store.engine.execute("SELECT receiver FROM outbox").fetchall()}
    assert len(receivers) == 1 and receivers.pop().startswith("apprise:") and url not in str(receivers)


def test_an_apprise_url_no_service_understands_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"alerts\.notify: .*no Apprise service"):
        parse("alerts: {notify: ['nope://x']}")
