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
    "toolset",
]


def toolset(box: Toolbox) -> list[Tool]:
    """The tools for one agent; ``remediate`` only where remediation is enabled."""
    tools: list[Tool] = [
        CheckTarget(box),
        RecentResults(box),
        SearchIncidents(box),
        GetIncident(box),
        RecordDiagnosis(box),
        Neighbours(box),
    ]
    if box.config.agent.remediation != "off":
        tools.append(Remediate(box))
    return tools
