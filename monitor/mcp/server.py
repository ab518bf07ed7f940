"""The MCP server: the tools an assistant may call, bound to one store and config (the official ``mcp`` SDK).

Every tool reads (:mod:`monitor.mcp.answers`) but two: ``investigate`` runs the agent on one configured target, and
is offered only where the config lets the agent run (``agent.mode`` is not ``off``), with remediation off whatever
``agent.remediation`` says; ``confirm_suggestion`` records a person's word on a past incident the memory asserted
or suggested (:mod:`monitor.mcp.confirming`). There is no ``remediate`` tool. Every answer, and every error, leaves redacted
(:func:`monitor.core.urls.redacted`), as from the web API. Calls take turns on the store: one at a time. Before the
daemon first ran there is no database yet: the tools answer empty, with a note that says so (:mod:`monitor.mcp.source`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from monitor import __version__
from monitor.config import Config
from monitor.core.urls import redact_text, redacted
from monitor.mcp.answers import Answers, NotFound
from monitor.mcp.source import Source, Unavailable

INSTRUCTIONS = (
    "monitor's health checks and its incident memory. Start with `targets` (what is down) or `incidents` "
    "(what is open); `incident` gives one with its diagnosis and fix; `recall` finds past incidents like one. "
    "A past fix is asserted only where the evidence decides; a suggested one is not a claim: check it first. "
    "When the person who fixed an incident says which past incident it was (or was not), `confirm_suggestion` keeps it."
)
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
ACTS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)
SAYS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class Tools:
    """The tools' bodies: each takes its turn on the store, and answers redacted or fails with a redacted error."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.turn = threading.Lock()

    @property
    def answers(self) -> Answers:
        return self.source.answers

    def answer(self, read: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        try:
            with self.turn:
                self.source.look()
                found = read()
                note = self.source.note
        except (NotFound, ValueError, Unavailable) as exc:
            raise ToolError(redact_text(str(exc))) from None
        answer: dict[str, Any] = redacted({**found, "note": note} if note else found)
        return answer


def server(source: Source) -> MCPServer:
    """The MCP server over ``source``'s store: its read tools, and ``investigate`` where the config allows it."""
    app = MCPServer("monitor", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    tools = Tools(source)
    for tool in read_tools(tools):
        app.add_tool(tool, annotations=READ, structured_output=True)
    if investigating(source.config):
        app.add_tool(investigation(tools, source.config), name="investigate", annotations=ACTS, structured_output=True)
    app.add_tool(confirmation(tools, source.config), name="confirm_suggestion", annotations=SAYS, structured_output=True)
    return app


def investigating(config: Config) -> bool:
    """Whether the config lets the agent investigate (``agent.mode`` is not ``off``)."""
    return config.agent.mode != "off"


def read_tools(tools: Tools) -> list[Callable[..., dict[str, Any]]]:
    """The read tools, each named for its function; their docstrings are what the client is told."""

    def targets(query: str = "", page: int = 1, limit: int = 100) -> dict[str, Any]:
        """The monitored targets and their state (up, warning, down, maintenance, stale, unknown, waiting), problems
        first, with each one's last check and uptime; `query` keeps names that contain it; `counts` is the fleet's."""
        return tools.answer(lambda: tools.answers.targets(query=query, page=page, limit=limit))

    def target(name: str) -> dict[str, Any]:
        """One target: its state, its configuration, its last check, its uptime and its open incidents."""
        return tools.answer(lambda: tools.answers.target(name))

    def results(name: str, limit: int = 20) -> dict[str, Any]:
        """A target's most recent check results, newest first: severity, status, latency by phase, error, detail."""
        return tools.answer(lambda: tools.answers.results(name, limit=limit))

    def incidents(status: str = "open", target: str = "", limit: int = 50, before: int | None = None) -> dict[str, Any]:
        """Incidents newest first: `status` open, resolved or all; only `target`'s when given; `before` an id pages
        back (the answer's `next`)."""
        return tools.answer(lambda: tools.answers.incidents(status=status, target=target or None, limit=limit, before=before))

    def incident(id: int) -> dict[str, Any]:  # noqa: A002 - the client sees this name
        """One incident in full: its diagnosis (root cause, the past incident asserted and those only suggested),
        its fix (resolution), its claim, its timeline and its agent runs."""
        return tools.answer(lambda: tools.answers.incident(id))

    def recall(id: int, k: int = 5) -> dict[str, Any]:  # noqa: A002 - the client sees this name
        """What past incidents are like this one? The incident memory's recall: one past incident asserted only
        where the evidence decides its fix applies, others suggested as possibly related (not asserted), why."""
        return tools.answer(lambda: tools.answers.recall(id, k=k))

    def review(since: str = "7d") -> dict[str, Any]:
        """A review of the history since `since` ago (30m, 12h, 7d): recurring failures, fixes that did not hold,
        targets whose incidents come together (`monitor review`, builtin)."""
        return tools.answer(lambda: tools.answers.review(since=since))

    return [targets, target, results, incidents, incident, recall, review]


def investigation(tools: Tools, config: Config) -> Callable[..., dict[str, Any]]:
    """The ``investigate`` tool: check one configured target now and let the agent investigate it if it fails."""

    def investigate(target: str) -> dict[str, Any]:
        """Check one configured target now; if it fails, the agent investigates and records a diagnosis (as
        `monitor investigate`). It never remediates. Takes as long as the model does."""
        from monitor.mcp.investigating import investigate as run

        return tools.answer(lambda: run(tools.source.store, config, target))

    return investigate


def confirmation(tools: Tools, config: Config) -> Callable[..., dict[str, Any]]:
    """The ``confirm_suggestion`` tool: a person's word on a past incident asserted or suggested for an incident."""

    def confirm_suggestion(incident: int, other: int, same: bool, note: str = "") -> dict[str, Any]:
        """Record what the person who resolved `incident` says of past incident `other`, which the memory asserted
        or suggested for it: `same` true, it was the same failure (its fix is asserted when that failure comes back);
        false, the suggestion was wrong (it is not suggested again for that failure). Call it only on that person's
        word, never on your own guess. `note`: why, at most 1,000 characters. A later word replaces this one."""
        from monitor.mcp.confirming import confirm

        return tools.answer(lambda: confirm(tools.source.writer(), incident, other, same, note))

    return confirm_suggestion
