"""The diagnosis reaches people: the first message of an investigated incident waits for it (webhook), and
Alertmanager's alert gets it as an update."""

from __future__ import annotations

import queue
from pathlib import Path

from outbox import Stop
from servers import Misbehaving, Receiver, wait_for
from test_alertmanager import active_alerts, running_alertmanager

from monitor import wiring
from monitor.checks.engine import Checker
from monitor.config import Config
from monitor.daemon import daemon_cycle
from monitor.store import Store
from monitor.store.writes import IncidentWrites


def test_the_first_message_of_an_investigated_incident_carries_the_diagnosis_and_past_fix(
    web: Misbehaving, tmp_path: Path, db_path: str, stopped: Stop
) -> None:
    with Receiver() as hook, running_alertmanager(tmp_path) as am:
        config = Config.model_validate(
            {
                "targets": [{"name": "api", "url": web.url("/500"), "timeout": 1}],
                "detectors": {"consecutive": 2},
                "model": {"id": "builtin"},
                "alerts": {"webhooks": [{"url": hook.url}], "alertmanager": am},
            }
        )
        store = Store(db_path)
        past = IncidentWrites(store).open_incident(
            "api", "consecutive", 'api answered 500 {"error": "boom"} after deploy', root_cause="server_error"
        )
        IncidentWrites(store).close_incident(past, resolution="rolled back the deploy and flushed the cache")
        alerts = stopped(wiring.alerts(config, store))  # as the daemon makes it
        cycle = daemon_cycle(config, store, alerts=alerts)
        cycle.investigator = wiring.investigator(config, store, cycle.parts)
        cycle.queue = queue.Queue()  # as the daemon runs it: the agent works after the cycle
        cycle.after_checks(Checker().run(config.targets))
        cycle.after_checks(Checker().run(config.targets))
        [incident] = store.incidents.open_incidents("api")
        alerts.deliver_due()
        assert hook.received == []  # the first message waits for the diagnosis (alerts.wait_for_diagnosis)

        cycle.drain()  # the agent investigates, records its diagnosis and finishes: the message goes at once
        alerts.deliver_due()
        assert [m["event"] for m in hook.received] == ["opened"]
        diagnosed = hook.received[-1]
        assert "diagnosis: server_error" in diagnosed["text"] and "HTTP 500" in diagnosed["text"]
        assert "rolled back the deploy and flushed the cache" in diagnosed["text"]
        assert diagnosed["incident"]["id"] == incident.id
        assert {k: diagnosed["diagnosis"][k] for k in ("root_cause", "related_incident", "past_fix")} == {
            "root_cause": "server_error",
            "related_incident": past,
            "past_fix": "rolled back the deploy and flushed the cache",
        }
        assert f"Same failure as past incident #{past}, fixed by: rolled back the deploy" in diagnosed["diagnosis"]["text"]

        alert = wait_for(lambda: next((a for a in active_alerts(am) if a["annotations"].get("root_cause")), None), timeout=5, every=0.05)
        assert len(active_alerts(am)) == 1
        assert alert["labels"]["incident"] == store.incidents.incident_key(incident.id) == diagnosed["key"]
        assert alert["annotations"]["root_cause"] == "server_error"
        assert alert["annotations"]["related_incident"] == f"#{past}"
        assert alert["annotations"]["past_fix"] == "rolled back the deploy and flushed the cache"
        assert alert["annotations"]["confidence"]
