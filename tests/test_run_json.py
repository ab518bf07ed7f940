"""An agent run and its steps are read from the store as a :class:`Run` and :class:`Step` each, and leave as JSON
objects of their fields at every edge (the web API's list, a run, an incident's runs, MCP's answer), parsed back
here with no fallback (the API serialises with ``default=str``: a forgotten ``to_json()`` sent a string); and the
tables' columns are their fields, in their order."""

from __future__ import annotations

import json
from dataclasses import fields

from past import known
from starlette.testclient import TestClient

from monitor.config import Config
from monitor.core.runs import NewStep, Run, Step
from monitor.mcp.answers import Answers
from monitor.store import Store
from monitor.store.writes import IncidentWrites
from monitor.web.app import create_app

CONFIG = Config.model_validate({"targets": [{"name": "api", "url": "http://127.0.0.1:9/"}]})
CALLS = [{"name": "check_target", "arguments": {"name": "api"}}]


def investigated(store: Store) -> tuple[int, Run]:
    """An incident, and a finished run of it: a recall step, an action step that called a tool."""
    incident = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")
    run_id = store.runs.start_run("look at api", target="api", incident_id=incident, model="builtin")
    store.runs.add_step(run_id, NewStep(0, "recall", 1.0, observations="#7 [resolved] target api"))
    store.runs.add_step(run_id, NewStep(1, "action", 2.0, 0.5, tool_calls=json.dumps(CALLS), input_tokens=12))
    store.runs.finish_run(run_id, "success", "the pool is exhausted")
    return incident, known(store.runs.run(run_id))


def test_a_run_and_its_steps_are_read_typed(db_path: str) -> None:
    store = Store(db_path)
    _, run = investigated(store)
    assert (run.task, run.target, run.state, run.final_answer, run.input_tokens) == (
        "look at api",
        "api",
        "success",
        "the pool is exhausted",
        12,
    )
    recall, action = store.runs.steps(run.id)
    assert isinstance(recall, Step) and (recall.kind, recall.observations) == ("recall", "#7 [resolved] target api")
    assert (action.kind, action.duration, json.loads(action.tool_calls or "")) == ("action", 0.5, CALLS)
    assert store.runs.recent_runs(5) == store.runs.runs_page() == store.runs.runs_started(0.0) == [run]
    assert store.runs.recall_steps([run.id]) == [recall]


def test_the_api_shows_each_run_as_an_object_of_its_fields(db_path: str) -> None:
    store = Store(db_path)
    incident, run = investigated(store)
    client = TestClient(create_app(store, CONFIG), base_url="http://127.0.0.1:9110")
    assert json.loads(client.get("/api/v1/runs").text)["items"] == [run.to_json()]
    shown = json.loads(client.get(f"/api/v1/runs/{run.id}").text)
    assert {name: shown[name] for name in run.to_json()} == run.to_json()
    recall, action = store.runs.steps(run.id)
    assert shown["recall"] == {**recall.to_json(), "calls": []}
    [step] = shown["steps"]
    assert step == {
        **{k: v for k, v in action.to_json().items() if k != "tool_calls"},
        "calls": [{"name": "check_target", "arguments": "name='api'"}],
    }
    assert json.loads(client.get(f"/api/v1/incidents/{incident}").text)["runs"] == [run.to_json()]


def test_mcp_answers_an_incidents_runs_from_their_fields(db_path: str) -> None:
    store = Store(db_path)
    incident, run = investigated(store)
    shown = json.loads(json.dumps(Answers(store.read_only(), CONFIG).incident(incident)))  # no default=
    assert shown["runs"] == [{"id": run.id, "state": "success", "root_cause": None, "confidence": None, "started_at": run.started_at}]


def test_the_runs_tables_have_the_fields_of_a_run_and_a_step_in_their_order(db_path: str) -> None:
    """On SQLite, and on PostgreSQL under --store=postgres."""
    store = Store(db_path)
    assert list(store.engine.columns("agent_runs")) == [f.name for f in fields(Run)]
    assert list(store.engine.columns("agent_steps")) == [f.name for f in fields(Step)]
