"""An incident leaves as a JSON object of its fields at every edge (the web API, MCP, a webhook), parsed back
here with no fallback, so one handed out whole would fail (the API serialises with ``default=str``: a forgotten
``to_json()`` sent a string); and the incidents table's columns are :class:`Incident`'s fields, in its order."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from outbox import plain_alerts, queue
from past import known
from servers import Receiver
from starlette.testclient import TestClient

from monitor.config import Config
from monitor.core.incidents import Event, Incident
from monitor.mcp.answers import Answers
from monitor.store import Store
from monitor.store.writes import IncidentWrites
from monitor.web.app import create_app

FIELDS = [f.name for f in fields(Incident)]
CONFIG = Config.model_validate({"targets": [{"name": "api", "url": "http://127.0.0.1:9/"}]})
EVIDENCE = {"status_code": 503, "error": "unexpected_status", "excerpt": "pool exhausted"}


def stored(store: Store) -> Incident:
    """An open incident with a diagnosis and evidence (a JSON column) written."""
    writes = IncidentWrites(store)
    incident = writes.open_incident("api", "consecutive", "3 consecutive failures of api", root_cause="server_error")
    writes.update_incident(incident, diagnosis="the pool is exhausted", evidence=json.dumps(EVIDENCE), confidence="high")
    return known(store.incidents.incident(incident))


def assert_the_incident(shown: Any, incident: Incident, *, parsed: tuple[str, ...] = ()) -> None:
    """``shown`` is a JSON object with every field of ``incident``, each as stored but those the view shows
    ``parsed`` (as an object of their own)."""
    assert isinstance(shown, dict), shown
    assert all(isinstance(shown[name], dict | None) for name in parsed), shown
    assert {name: shown[name] for name in FIELDS if name not in parsed} == {
        name: value for name, value in incident.to_json().items() if name not in parsed
    }


def test_the_api_shows_each_incident_as_an_object_of_its_fields(db_path: str) -> None:
    store = Store(db_path)
    incident = stored(store)
    client = TestClient(create_app(store, CONFIG), base_url="http://127.0.0.1:9110")
    [listed] = json.loads(client.get("/api/v1/incidents?status=open").text)["items"]
    assert_the_incident(listed, incident)
    assert_the_incident(json.loads(client.get(f"/api/v1/incidents/{incident.id}").text), incident, parsed=("claim",))
    [open_one] = json.loads(client.get("/api/v1/targets/api").text)["open_incidents"]
    assert_the_incident(open_one, incident)


def test_mcp_answers_each_incident_as_an_object_of_its_fields(db_path: str) -> None:
    store = Store(db_path)
    incident = stored(store)
    answers = Answers(store.read_only(), CONFIG)
    [listed] = json.loads(json.dumps(answers.incidents()))["items"]  # no default=: an object json cannot write fails
    assert_the_incident(listed, incident)
    one = json.loads(json.dumps(answers.incident(incident.id)))
    assert_the_incident(one, incident, parsed=("claim", "diagnosis"))  # the diagnosis: asserted and suggested
    [open_one] = json.loads(json.dumps(answers.target("api")))["open_incidents"]
    assert_the_incident(open_one, incident)


def test_a_webhook_carries_the_incident_as_an_object_of_its_fields(db_path: str) -> None:
    with Receiver() as hook:
        store = Store(db_path)
        incident = stored(store)
        alerts = plain_alerts(Config.model_validate({"alerts": {"webhooks": [{"url": hook.url}]}}).alerts, store)
        queue(alerts, Event("opened", incident))
        assert alerts.deliver_due() == 1
    [payload] = hook.received
    shown = payload["incident"]
    assert shown["evidence"] == EVIDENCE  # a JSON column sent as the object it holds
    assert_the_incident({**shown, "evidence": json.dumps(EVIDENCE)}, incident)


def test_the_incidents_table_has_the_fields_of_an_incident_in_their_order(db_path: str) -> None:
    """On SQLite, and on PostgreSQL under --store=postgres: a column added to one and not the other fails here."""
    store = Store(db_path)
    assert list(store.engine.columns("incidents")) == FIELDS
