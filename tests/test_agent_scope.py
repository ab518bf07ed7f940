"""Issue #33, item 1: every tool the agent has acts only on the target under investigation and what the config
ties to it (``depends_on``), by the grammar and by the tool itself. A model that obeys a target's text (prompt
injection) cannot check, read or restart another target."""

from __future__ import annotations

import json
from typing import Any

import pytest
from servers import Misbehaving, Receiver
from test_reach import Scripted  # an obedient model: it calls what it is told

from monitor import wiring
from monitor.agent.tools import Remediate, Toolbox, toolset
from monitor.config import Config
from monitor.store import Store
from monitor.store.writes import IncidentWrites

FOCUS, TIED, OTHERS = "pub-site", "cache-tier", ["internal-svc", "db-main"]


def fleet(web: Misbehaving, hook: Receiver, **agent: Any) -> Config:
    """``pub-site`` (under investigation) depends on ``cache-tier``; ``internal-svc`` and ``db-main`` (which has a
    restart action) are other targets of the fleet."""
    restart = {"restart": {"url": hook.url, "method": "POST"}}
    return Config.model_validate(
        {
            "targets": [
                {"name": FOCUS, "url": web.url("/500"), "depends_on": [TIED, "pg-main"], "actions": restart},
                {"name": TIED, "url": web.url("/healthy?cache"), "actions": restart},
                {"name": "internal-svc", "url": web.url("/healthy?internal"), "actions": restart},
                {"name": "db-main", "url": web.url("/healthy?db"), "actions": restart},
            ],
            "agent": {"remediation": "on", **agent},
            "model": {"id": "builtin"},
        }
    )


def named_tools(box: Toolbox) -> list[Any]:
    """The tools that take a target's name."""
    return [tool for tool in toolset(box) if "name" in tool.inputs]


def test_each_tool_refuses_every_other_targets_name_and_its_grammar_offers_none(web: Misbehaving, db_path: str) -> None:
    with Receiver() as hook:
        config = fleet(web, hook)
        box = wiring.toolbox(config, Store(db_path), embedder=None)
        incident = IncidentWrites(box.store).open_incident(FOCUS, "consecutive", "down")
        box.begin(box.store.runs.start_run("t", target=FOCUS, incident_id=incident), incident, FOCUS)
        tools = named_tools(box)
        assert {t.name for t in tools} == {"check_target", "recent_results", "neighbours", "remediate"}
        for tool in tools:
            grammar = json.dumps(tool.argument_schema())
            assert FOCUS in grammar and not [name for name in OTHERS if name in grammar], (tool.name, grammar)
            for name in OTHERS:
                by_url = config.target(name).url
                for asked in (name, by_url) if tool.name == "check_target" else (name,):
                    arguments = {"name": asked, "action": "restart"} if tool.name == "remediate" else {"name": asked}
                    answer = tool(**arguments)
                    assert answer.startswith(f"ERROR: target {name!r} is not part of this investigation"), answer
        assert not any("internal" in hit or "db" in hit for hit in web.hits)  # nothing was checked
        assert hook.received == []  # nothing was restarted
        refused = [(r["target"], r["detail"]) for r in box.store.runs.remediations()]
        assert refused == [(name, "refused: not this investigation's target") for name in OTHERS]


def test_the_target_under_investigation_and_what_it_depends_on_stay_in_reach(web: Misbehaving, db_path: str) -> None:
    with Receiver() as hook:
        box = wiring.toolbox(fleet(web, hook), Store(db_path), embedder=None)
        box.begin(box.store.runs.start_run("t", target=FOCUS), None, FOCUS)
        assert box.reach() == [FOCUS, TIED]  # pg-main is a component, no target
        tools = {t.name: t for t in toolset(box)}
        assert "OK status=200" in tools["check_target"](name=TIED)
        assert "CRITICAL status=500" in tools["check_target"](name=FOCUS)
        assert tools["recent_results"](name=TIED).startswith(f"{TIED}: 0 of the last 1 checks failed")
        assert tools["remediate"](name=TIED, action="restart").endswith("-> 200")
        assert len(hook.received) == 1


@pytest.mark.parametrize("guided", [True, False])
def test_an_injected_remediation_of_another_target_is_refused_in_a_run(guided: bool, web: Misbehaving, db_path: str) -> None:
    """The issue's run: investigating one target, an obedient model calls remediate on another."""
    with Receiver() as hook:
        store = Store(db_path)
        model = Scripted(
            [
                ("remediate", {"name": "db-main", "action": "restart"}),
                ("check_target", {"name": "internal-svc"}),
                ("final_answer", {"answer": "done"}),
            ]
        )
        outcome = wiring.investigator(fleet(web, hook, guided=guided), store, model=model, embedder=None).investigate(
            FOCUS, pattern="consecutive", summary="down"
        )
    assert hook.received == [] and not any("internal" in hit for hit in web.hits)
    [audit] = store.runs.remediations()
    assert (audit["target"], audit["ok"], audit["run_id"]) == ("db-main", 0, outcome.run_id)
    assert audit["detail"] == "refused: not this investigation's target"
    observations = " ".join(step.observations or "" for step in store.runs.steps(outcome.run_id))
    assert "'internal-svc' is not part of this investigation" in observations


def test_the_remediate_grammar_of_a_target_no_longer_configured_offers_nothing(web: Misbehaving, db_path: str) -> None:
    """A reload removed the target under investigation: the grammar is built all the same, and offers no action."""
    tools = wiring.toolbox(
        Config.model_validate({"targets": [{"name": "api", "url": web.url("/500"), "timeout": 1}], "agent": {"remediation": "on"}}),
        Store(db_path),
    )
    tools.begin(1, None, "gone", "consecutive")
    schema = Remediate(tools).argument_schema()
    assert schema["properties"]["name"]["enum"] == ["gone"]
