"""What the model is told of each tool stays the same, to the byte: the tool list a request carries (from
``inputs``) and the grammar of a guided call (``argument_schema``, derived from ``inputs``), as captured in
``fixtures/tool_schemas.json``. A change to a tool's arguments changes that file on purpose
(``MONITOR_CAPTURE_TOOL_SCHEMAS=1`` writes it anew); a change to how schemas are made must not."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from smolagents.models import get_tool_json_schema

from monitor import wiring
from monitor.agent.models import tool_call_schema
from monitor.agent.tools import MonitorTool, Toolbox, toolset
from monitor.config import Config
from monitor.core.diagnoses import Diagnosed
from monitor.core.results import Result
from monitor.store import Store
from monitor.store.writes import IncidentWrites

CAPTURED = Path(__file__).parent / "fixtures" / "tool_schemas.json"
FOCUS = "api"


class Counted(MonitorTool):
    """A tool that declares its ``inputs`` only, one of them nullable, one with choices: the base's grammar."""

    name = "counted"
    description = "Count something."
    inputs = {
        "n": {"type": "integer", "description": "How many.", "nullable": True},
        "kind": {"type": "string", "enum": ["a", "b"], "description": "Which."},
    }

    def forward(self, n: int | None, kind: str) -> str:
        return f"{n} {kind}"


def investigation(db_path: str, remediation: str = "on") -> Toolbox:
    """An investigation of ``api`` (which depends on ``cache``, each with a restart action; ``other`` is out of
    reach), with a past incident of ``api`` shown, whose fix could apply."""
    restart = {"restart": {"url": "http://127.0.0.1:9/restart", "method": "POST"}}
    config = Config.model_validate(
        {
            "targets": [
                {"name": FOCUS, "url": "http://127.0.0.1:9/api", "depends_on": ["cache"], "actions": restart},
                {"name": "cache", "url": "http://127.0.0.1:9/cache", "actions": restart},
                {"name": "other", "url": "http://127.0.0.1:9/other"},
            ],
            "agent": {"remediation": remediation},
            "model": {"id": "builtin"},
        }
    )
    box = wiring.toolbox(config, Store(db_path), embedder=None)
    store = box.store
    failed = [Result(FOCUS, "http://127.0.0.1:9/api", False, "critical", 500, 20.0, "unexpected_status", "", 1000.0 + n) for n in range(3)]
    store.results.add_results(failed)
    past = IncidentWrites(store).open_incident(FOCUS, "consecutive", "api down")
    IncidentWrites(store).record_diagnosis(
        None,
        past,
        Diagnosed(diagnosis="the pool ran dry", root_cause="server_error", related_incident=None, confidence="high", suspected_cause=""),
    )
    IncidentWrites(store).close_incident(past, "raised the pool")
    incident = IncidentWrites(store).open_incident(FOCUS, "consecutive", "api down again")
    box.begin(store.runs.start_run("t", target=FOCUS, incident_id=incident), incident, FOCUS, "consecutive")
    box.seen.add(past)
    return box


def schemas(box: Toolbox) -> dict[str, Any]:
    """Each tool's entry in a request's tool list and its guided grammar, and the grammar of a guided call."""
    tools = [tool for tool in [*toolset(box), Counted(box)] if isinstance(tool, MonitorTool)]
    assert len(tools) == len(toolset(box)) + 1  # every tool is one of ours: each has its grammar
    return {
        "tools": {tool.name: {"listed": get_tool_json_schema(tool), "grammar": tool.argument_schema()} for tool in tools},
        "call": tool_call_schema(tools),
    }


def made(db_path: str) -> dict[str, Any]:
    return {"remediation on": schemas(investigation(db_path)), "remediation dry_run, no actions in reach": narrow(db_path)}


def narrow(db_path: str) -> dict[str, Any]:
    box = investigation(db_path + "-2", remediation="dry_run")
    box.focus = "other"  # no action is configured in its reach: remediate's grammar offers its name only
    return schemas(box)


def test_each_tools_schemas_are_as_captured(db_path: str) -> None:
    now = made(db_path)
    if os.environ.get("MONITOR_CAPTURE_TOOL_SCHEMAS"):
        CAPTURED.write_text(json.dumps(now, indent=1, ensure_ascii=False) + "\n")
    captured = json.loads(CAPTURED.read_text())
    for case, expected in captured.items():
        for name, tool in expected["tools"].items():
            for part in ("listed", "grammar"):
                assert json.dumps(now[case]["tools"][name][part]) == json.dumps(tool[part]), (case, name, part)
        assert json.dumps(now[case]["call"]) == json.dumps(expected["call"]), case
    assert json.dumps(now) == json.dumps(captured)  # the bytes, key order included
