"""A resolve by hand pages like a recovery: the CLI's and the web UI's reach every receiver as "resolved".

A daemon checks a failing target, with a webhook (a real HTTP server on loopback) and a real Alertmanager as
receivers; its incident is resolved from ``monitor incidents resolve`` and from the web UI (``monitor web``, on the
same database), and each receiver must see it resolved: the webhook gets a "resolved" event, Alertmanager no
longer lists the alert as active (its ``endsAt`` is in the past).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from click.testing import CliRunner
from prometheus_client import CollectorRegistry
from servers import Misbehaving, Receiver, wait_for
from starlette.testclient import TestClient
from test_alertmanager import running_alertmanager

from monitor import config as config_module
from monitor.cli.main import main
from monitor.core.incidents import Incident
from monitor.daemon import Daemon
from monitor.store import Store
from monitor.web.app import create_app

TOKEN = "a-token-of-twenty-chars"


def alert_of(alertmanager: str, key: str) -> dict[str, Any] | None:
    """The incident's alert as Alertmanager lists it (active, silenced or inhibited); None when it is not active."""
    alerts = httpx.get(
        f"{alertmanager}/api/v2/alerts", params={"active": "true", "silenced": "true", "inhibited": "true", "unprocessed": "true"}
    ).json()
    return next((a for a in alerts if a["labels"]["incident"] == key), None)


def events_of(hook: Receiver, incident_id: int) -> list[str]:
    return [m["event"] for m in hook.received if m["incident"]["id"] == incident_id]


def open_incident(store: Store, other_than: set[int]) -> Incident:
    return wait_for(lambda: next((i for i in store.incidents.open_incidents("api") if i.id not in other_than), None))


def test_an_incident_resolved_from_the_cli_or_the_web_is_resolved_for_every_receiver(
    web: Misbehaving, tmp_path: Path, db_path: str, store_location: Any
) -> None:
    with Receiver() as hook, running_alertmanager(tmp_path) as alertmanager:
        path = tmp_path / "monitor.yaml"
        path.write_text(
            f"database: {store_location(db_path)}\n"
            f"targets: [{{name: api, url: '{web.url('/500')}', interval: 200ms, timeout: 1s}}]\n"
            "detectors: {consecutive: 2}\nagent: {mode: 'off'}\nmetrics: {enabled: false}\n"
            f"alerts: {{webhooks: [{{url: '{hook.url}'}}], alertmanager: '{alertmanager}'}}\n"
            f"web: {{token: {TOKEN}}}\n"
        )
        config = config_module.load(str(path))
        daemon = Daemon(config, registry=CollectorRegistry())
        daemon.start(serve_metrics=False)
        try:
            store = daemon.store
            first = open_incident(store, set())
            key = store.incidents.incident_key(first.id)
            wait_for(lambda: alert_of(alertmanager, key))  # firing
            wait_for(lambda: events_of(hook, first.id) == ["opened"])

            done = CliRunner().invoke(main, ["incidents", "resolve", str(first.id), "--note", "restarted the pool", "--config", str(path)])
            assert done.exit_code == 0, done.output
            wait_for(lambda: events_of(hook, first.id) == ["opened", "resolved"])
            resolved = next(m for m in hook.received if m["event"] == "resolved")
            assert resolved["incident"]["resolution"] == "restarted the pool"
            wait_for(lambda: alert_of(alertmanager, key) is None)

            second = open_incident(store, {first.id})  # the target still fails: a new incident opens
            key = store.incidents.incident_key(second.id)
            wait_for(lambda: alert_of(alertmanager, key))
            client = TestClient(
                create_app(Store(db_path), config), base_url="http://127.0.0.1:9110", headers={"origin": "http://127.0.0.1:9110"}
            )
            client.get(f"/incidents/{second.id}")
            form = {"action": "resolve", "note": "rolled back deploy 4711", "token": TOKEN, "csrf": client.cookies["monitor_csrf"]}
            answer = client.post(f"/incidents/{second.id}/actions", data=form, follow_redirects=False)
            assert answer.status_code == 303
            wait_for(lambda: events_of(hook, second.id) == ["opened", "resolved"])
            wait_for(lambda: alert_of(alertmanager, key) is None)
        finally:
            daemon.stop()
