"""A stored result is read from the store as a :class:`StoredResult`, and leaves as a JSON object of its fields at
every edge (the web API's results, a target's latest check, a fleet page, MCP's answers, ``monitor status --json``),
parsed back here with no fallback (the API serialises with ``default=str``: a forgotten ``to_json()`` sent a
string); and the results table's columns are its fields, in their order."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import fields
from typing import Any

from click.testing import CliRunner
from past import known
from starlette.testclient import TestClient

from monitor.cli.main import main
from monitor.config import Config
from monitor.core.results import Latest, Result, Slice, StoredResult, Uptime
from monitor.mcp.answers import Answers
from monitor.store import Store
from monitor.web.app import create_app

CONFIG = Config.model_validate({"targets": [{"name": "api", "url": "http://127.0.0.1:9/"}]})
NOW = 1_800_000_000.0
PHASES = {"dns": 0.5, "connect": 1.0, "tls": 0.0, "first_byte": 40.0, "body": 0.5}


def stored(store: Store) -> StoredResult:
    """Two checks of api: a pass, then a failure with phases and a location; the failure, as read back."""
    store.results.add_results(
        [
            Result("api", "http://127.0.0.1:9/", True, "ok", 200, 12.0, None, "", NOW - 60),
            Result("api", "http://127.0.0.1:9/", False, "critical", 503, 42.0, "unexpected_status", "status 503", NOW,
                   phases=PHASES, location="eu-west"),
        ]
    )  # fmt: skip
    return known(store.results.latest_result("api"))


def shown(result: StoredResult) -> dict[str, Any]:
    """A result as the API and MCP show it: its fields, its phases an object."""
    return {**result.to_json(), "phases": result.phase_times() or None}


def test_results_are_read_typed(db_path: str) -> None:
    store = Store(db_path)
    newest = stored(store)
    assert isinstance(newest, StoredResult)
    assert (newest.target, newest.ok, newest.status_code, newest.error, newest.location) == ("api", 0, 503, "unexpected_status", "eu-west")
    assert newest.phase_times() == PHASES
    older, = store.results.results_page("api", limit=1, before=(newest.checked_at, newest.id))  # fmt: skip
    assert store.results.recent_results("api") == [newest, older] == store.results.results_between("api", 0, NOW)[::-1]
    assert store.results.latest_results() == [newest] == list(store.results.latest_of(["api"]).values())
    assert store.results.latest_by_location("api", NOW - 1) == [newest]
    assert store.results.latest_states(["api"]) == {"api": Latest(NOW, 0, "critical", "unexpected_status")}
    assert store.results.uptime("api", {"1h": 3600.0}, NOW)["1h"] == Uptime(2, 1, 1, 0.5)
    [slice_] = store.results.latency_buckets("api", NOW - 120, NOW + 1, 1)
    assert slice_ == Slice(0, 2, 1, 27.0, 42.0)


def test_the_api_shows_each_result_as_an_object_of_its_fields(db_path: str) -> None:
    store = Store(db_path)
    newest = stored(store)
    client = TestClient(create_app(store, CONFIG, clock=lambda: NOW), base_url="http://127.0.0.1:9110")
    items = json.loads(client.get("/api/v1/targets/api/results").text)["items"]
    assert items == [shown(r) for r in store.results.recent_results("api")]
    target = json.loads(client.get("/api/v1/targets/api").text)
    assert target["latest"] == shown(newest) and target["last_check"] == NOW
    assert target["uptime"]["24h"] == {"checks": 2, "passed": 1, "up": 1, "ratio": 0.5}
    [listed] = json.loads(client.get("/api/v1/targets").text)["items"]
    assert listed["latest"] == shown(newest) and listed["uptime"] == target["uptime"]


def test_mcp_answers_each_result_as_an_object_of_its_fields(db_path: str) -> None:
    store = Store(db_path)
    newest = stored(store)
    answers = Answers(store.read_only(), CONFIG, clock=lambda: NOW)
    items = json.loads(json.dumps(answers.results("api")))["items"]  # no default=: an object json cannot write fails
    assert items == [shown(r) for r in store.results.recent_results("api")]
    target = json.loads(json.dumps(answers.target("api")))
    assert target["latest"] == shown(newest) and target["uptime"]["7d"] == Uptime(2, 1, 1, 0.5).to_json()


def test_status_prints_each_result_as_an_object_of_its_fields(db_path: str, store_location: Callable[[str], str]) -> None:
    store = Store(db_path)
    newest = stored(store)
    answer = CliRunner().invoke(main, ["status", "--db", store_location(db_path), "--json"])
    [target] = json.loads(answer.output)["targets"]
    assert target == {**shown(newest), "ok": False, "state": "down"}


def test_the_results_table_has_the_fields_of_a_stored_result_in_their_order(db_path: str) -> None:
    """On SQLite (its ``results`` view), and on PostgreSQL under --store=postgres."""
    store = Store(db_path)
    assert list(store.engine.columns("results")) == [f.name for f in fields(StoredResult)]
