"""The agent's requests are bounded whatever its memory of incidents holds (issue 45): an investigation with a
memory of hundreds of incidents, their texts as long as the store keeps, sends no request larger than the same
investigation with a memory of a few, beyond a fixed cap. ``bench/prompt_growth.py`` measures it over 1,000
investigations of a memory that grows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ollama import FakeOllama, call, final
from servers import Misbehaving
from test_recall import Trigrams

from monitor import wiring
from monitor.config import Config
from monitor.core.diagnoses import Diagnosed
from monitor.memory.search import index_incidents
from monitor.store import Store
from monitor.store.writes import IncidentWrites

# What a large memory may add to a request of one investigation over a memory of a few, at most: the recalled lines
# are as many either way (memory.inject_incidents, 3, capped together at monitor.memory.working.RECALL_CHARS);
# search_incidents' answer lists more (memory.max_observation, 1,500 characters) and so may the closing
# instruction (five candidates, each clipped to monitor.agent.loop.HINT_CHARS), JSON-escaped on the wire.
CAP = 3_000
FIX = "restarted the connection pool of db-3 after the deploy, then " + "drained and refilled it slowly; " * 30


def offered(body: dict[str, Any]) -> str:
    """The one tool a guided request offers."""
    schema = body["format"]
    return str(schema.get("anyOf", [schema])[0]["properties"]["name"]["enum"][0])


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """A careful model: each step with the arguments the guide asks for."""
    tool = offered(body)
    if tool in ("check_target", "recent_results"):
        return call(tool, name="api")
    if tool == "search_incidents":
        return call("search_incidents", query="api 500 boom connection pool")
    if tool == "record_diagnosis":
        return call("record_diagnosis", root_cause="server_error", related_incident="no", confidence="high", summary="api answers 500")
    return final("api answers 500: boom")


def remember(store: Store, count: int) -> None:
    """``count`` resolved incidents of api and of others, failing as api fails now, their texts long."""
    for n in range(count):
        target = "api" if n % 2 else f"svc-{n % 7}"
        incident = IncidentWrites(store).open_incident(
            target, "consecutive", f'{target} answered 500 "boom" from the pool of db-{n % 5} ' + "x" * 300
        )
        IncidentWrites(store).record_diagnosis(
            None,
            incident,
            Diagnosed(
                diagnosis=f"{target} failed: the connection pool of db-{n % 5} was exhausted " + "by a slow query " * 40,
                root_cause="server_error",
                related_incident=None,
                confidence="high",
                suspected_cause="",
            ),
        )
        IncidentWrites(store).close_incident(incident, f"{FIX} (ticket OPS-{n})")


def requests(web: Misbehaving, path: Path, incidents: int) -> list[int]:
    """The bytes of each request of one investigation of api, with a memory of ``incidents`` incidents."""
    store = Store(str(path))
    remember(store, incidents)
    embedder = Trigrams()
    index_incidents(store, embedder, limit=incidents + 1)
    with FakeOllama(default=reply) as ollama:
        model = {"id": "ollama_chat/llama3.2", "api_base": ollama.url, "timeout": 5, "retries": 0}
        config = Config.model_validate({"targets": [{"name": "api", "url": web.url("/500"), "timeout": 1}], "model": model})
        incident = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")
        outcome = wiring.investigator(config, store, embedder=embedder).investigate(
            "api", incident=incident, pattern="consecutive", summary="3 consecutive failures of api"
        )
    store.close()
    assert outcome.state == "success", outcome.error
    return [len(json.dumps(body).encode()) for body in ollama.chats]


def test_a_memory_of_hundreds_of_incidents_adds_no_more_than_a_fixed_cap_to_any_request(web: Misbehaving, tmp_path: Path) -> None:
    few = requests(web, tmp_path / "few.db", 3)
    many = requests(web, tmp_path / "many.db", 300)
    assert len(few) == len(many) == 5
    assert all(large <= small + CAP for small, large in zip(few, many, strict=True)), (few, many)
