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

Every tool, a built-in one as one of a package of its own, is a :class:`MonitorTool` named in the ``monitor.tools``
entry point group of its distribution (``name = "module:Class"``; monitor's own in ``pyproject.toml``): every
agent has it, and a model is offered it; one that ``agent.guided`` leads is offered a tool that is not built in
after the built-in evidence and before the diagnosis (:func:`monitor.agent.loop.guided_order`). A test registers
one in its own process (:func:`register`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
from monitor.core import plugins
from monitor.core.causes import NOT_ACTIONABLE, ROOT_CAUSES

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

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
    "loaded",
    "one_line",
    "register",
    "toolset",
    "unregister",
]


# The built-in tools, in the order a model is offered them; each is monitor's own ``monitor.tools`` entry point.
BUILTIN = ("check_target", "recent_results", "search_incidents", "get_incident", "record_diagnosis", "neighbours", "remediate")
_REGISTERED: dict[str, type[MonitorTool]] = {}


def register(tool: type[MonitorTool]) -> type[MonitorTool]:
    """Offer ``tool`` (a :class:`MonitorTool`) to every agent made from now on, by its ``name``; registering the
    same tool again is fine, another by a name already offered (a built-in's, an installed one's) is refused."""
    if {known.name: known for known in loaded()}.get(tool.name, tool) is not tool:
        raise ValueError(f"a tool named {tool.name!r} is already offered")
    _REGISTERED[tool.name] = tool
    return tool


def unregister(name: str) -> None:
    """Offer a registered tool no more (a test's); a built-in, or an installed one, is loaded again when asked for."""
    _REGISTERED.pop(name, None)


def loaded() -> list[type[MonitorTool]]:
    """Every tool: the built-in ones in their order, then each installed package's (its ``monitor.tools`` entry
    point, loaded on first ask), then those registered in this process."""
    return plugins.gather(plugins.TOOLS, BUILTIN, _REGISTERED, _tool)


def _tool(point: EntryPoint) -> type[MonitorTool]:
    tool = point.load()  # ``module:Class``
    if not (isinstance(tool, type) and issubclass(tool, MonitorTool) and tool.name == point.name):
        raise ValueError(f"entry point {point.value!r} of {plugins.TOOLS} is no MonitorTool named {point.name!r}")
    return tool


def registered() -> list[str]:
    """The names of the tools that are not built in (an installed package's, or registered here), in their order."""
    return [tool.name for tool in loaded() if tool.name not in BUILTIN]


def toolset(box: Toolbox) -> list[Tool]:
    """The tools for one agent: each tool :meth:`~MonitorTool.available` under the agent's config (``remediate`` only
    where remediation is enabled), built-in ones first."""
    return [tool(box) for tool in loaded() if tool.available(box.config)]
