"""The tools the agent may call, bound to the config, the store and the checker.

Every tool returns text. A tool that fails returns ``ERROR: ...`` that the model
can read and act on; it never raises into the agent. Each call is timed and
counted in ``Toolbox.calls`` for memory stats.

The agent cannot make the checker fetch arbitrary URLs: ``check_target`` takes
configured target names, or URLs that an ``agent.allow_urls`` entry admits
(``urls.Prefix``: same scheme, host and port, a path under it, no userinfo), and
such an ad-hoc check follows a redirect only to another admitted URL. What a
target answered reaches the model only inside a fence, capped (``fence``).
Every tool that takes a target's name acts only on the target under investigation and the targets
it ``depends_on`` (``Toolbox.reach``): the grammar offers no other name, and the tool refuses one.
``remediate`` runs only actions configured on such a target, is off unless
``agent.remediation`` enables it, is a dry run by default, is limited per
incident and per hour, and is audited: a real call's row is written before the
call and completed after it; refusals are audited too.

A tool of a module of its own is a :class:`MonitorTool` that the module registers (:func:`register`): every
agent made afterwards has it beside the built-in ones, and a model is offered it; one that ``agent.guided`` leads
is offered it after the built-in evidence and before the diagnosis (:func:`monitor.agent.loop.guided_order`).
"""

from __future__ import annotations

from smolagents import Tool

from monitor.agent.tools.base import (
    CONFIDENCE,
    DIAGNOSIS_CHARS,
    REMEDIATIONS_PER_HOUR,
    REMEDIATIONS_PER_INCIDENT,
    MonitorTool,
    OutOfReach,
    Toolbox,
    ToolCall,
    ToolFailure,
    fence,
    format_incident,
    format_phases,
    format_result,
    one_line,
)
from monitor.agent.tools.check import CheckTarget, RecentResults
from monitor.agent.tools.incidents import GetIncident, RecordDiagnosis, SearchIncidents, incident_ref
from monitor.agent.tools.neighbours import Neighbours
from monitor.agent.tools.remediate import Remediate
from monitor.core.causes import NOT_ACTIONABLE, ROOT_CAUSES

__all__ = [
    "CONFIDENCE",
    "DIAGNOSIS_CHARS",
    "NOT_ACTIONABLE",
    "REMEDIATIONS_PER_HOUR",
    "REMEDIATIONS_PER_INCIDENT",
    "ROOT_CAUSES",
    "CheckTarget",
    "GetIncident",
    "MonitorTool",
    "Neighbours",
    "OutOfReach",
    "RecentResults",
    "RecordDiagnosis",
    "Remediate",
    "SearchIncidents",
    "ToolCall",
    "Toolbox",
    "ToolFailure",
    "fence",
    "format_incident",
    "format_phases",
    "format_result",
    "incident_ref",
    "one_line",
    "register",
    "toolset",
    "unregister",
]


BUILTIN: tuple[type[MonitorTool], ...] = (CheckTarget, RecentResults, SearchIncidents, GetIncident, RecordDiagnosis, Neighbours)
_REGISTERED: dict[str, type[MonitorTool]] = {}


def register(tool: type[MonitorTool]) -> type[MonitorTool]:
    """Offer ``tool`` (a module's own :class:`MonitorTool`) to every agent made from now on, by its ``name``."""
    offered: tuple[type[MonitorTool], ...] = (*BUILTIN, Remediate)
    taken = {t.name for t in offered} | {name for name, known in _REGISTERED.items() if known is not tool}
    if tool.name in taken:
        raise ValueError(f"a tool named {tool.name!r} is already offered")
    _REGISTERED[tool.name] = tool
    return tool


def registered() -> list[str]:
    """The names of the tools modules registered, in the order they were."""
    return list(_REGISTERED)


def unregister(name: str) -> None:
    """Offer a registered tool no more (a test's)."""
    _REGISTERED.pop(name, None)


def toolset(box: Toolbox) -> list[Tool]:
    """The tools for one agent: the built-in ones, ``remediate`` only where remediation is enabled, then the
    registered ones."""
    tools: list[Tool] = [tool(box) for tool in BUILTIN]
    if box.config.agent.remediation != "off":
        tools.append(Remediate(box))
    return tools + [tool(box) for tool in _REGISTERED.values()]
