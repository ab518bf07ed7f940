"""The tools the agent may call, bound to the config, the store and the checker.

Every tool returns text. A tool that fails returns ``ERROR: ...`` that the model
can read and act on; it never raises into the agent. Each call is timed and
counted in ``Toolbox.calls`` for memory stats.

The agent cannot make the checker fetch arbitrary URLs: ``check_target`` takes
configured target names, or URLs under a prefix in ``agent.allow_urls``.
``remediate`` runs only actions configured on a target, is off unless
``agent.remediation`` enables it, is a dry run by default, and is audited.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from smolagents import Tool

from monitor.checks import Checker, Result
from monitor.config import Config, ConfigError, Target
from monitor.store import Store


@dataclass
class ToolCall:
    name: str
    ok: bool
    seconds: float


@dataclass
class Toolbox:
    """What the tools act on. ``run_id`` is set by the runner for the audit trail."""

    config: Config
    store: Store
    run_id: int | None = None
    calls: list[ToolCall] = field(default_factory=list)
    remediate_http: Callable[..., httpx.Response] = httpx.request

    def take_calls(self) -> list[ToolCall]:
        calls, self.calls = self.calls, []
        return calls


class ToolFailure(Exception):
    """A tool's own, expected failure: its message goes to the model as ``ERROR: ...``."""


def format_result(r: Result | dict[str, Any]) -> str:
    row = r.to_dict() if isinstance(r, Result) else r
    when = time.strftime("%H:%M:%S", time.localtime(row["checked_at"]))
    state = (row.get("severity") or ("ok" if row["ok"] else "critical")).upper()
    latency = row.get("latency_ms") or 0
    error = f" {row['error']}:" if row.get("error") else ""
    return f"{when} {state} status={row.get('status_code') or '-'} latency={latency:.0f}ms{error} {row.get('detail') or ''}".rstrip()


def format_incident(i: dict[str, Any], full: bool = False) -> str:
    parts = [f"#{i['id']} [{i['status']}] {i['target']} {i['pattern']}: {i.get('summary') or ''}"]
    for key in ("diagnosis", "suspected_cause", "resolution") + (("notes",) if full else ()):
        if i.get(key):
            parts.append(f"{key}: {i[key]}")
    return " | ".join(parts)


class MonitorTool(Tool):
    """Base: binds a Toolbox and turns any failure into readable error text."""

    output_type = "string"
    skip_forward_signature_validation = False

    def __init__(self, box: Toolbox) -> None:
        self.box = box
        super().__init__()

    def guarded(self, work: Callable[[], str]) -> str:
        started = time.perf_counter()
        try:
            text, ok = work(), True
        except ToolFailure as exc:
            text, ok = f"ERROR: {exc}", False
        except Exception as exc:  # a tool must never crash the agent
            text, ok = f"ERROR: {self.name} failed: {type(exc).__name__}: {exc}", False
        self.box.calls.append(ToolCall(self.name, ok, time.perf_counter() - started))
        return text

    def target(self, name: str) -> Target:
        try:
            return self.box.config.target(name)
        except ConfigError as exc:
            raise ToolFailure(str(exc)) from None


class CheckTarget(MonitorTool):
    name = "check_target"
    description = ("Re-check a monitored target right now and return its state, HTTP status, latency and error. "
                   "Use it first, to see whether the problem is still there.")
    inputs = {"name": {"type": "string", "description": "The configured target name, e.g. 'api'."}}

    def forward(self, name: str) -> str:
        return self.guarded(lambda: self._check(name))

    def _check(self, name: str) -> str:
        target = self._resolve(name)
        [result] = Checker(concurrency=1).run([target])
        self.box.store.add_results([result])
        return f"{target.name}: {format_result(result)}"

    def _resolve(self, name: str) -> Target:
        by_url = next((t for t in self.box.config.targets if t.url == name), None)
        if by_url is not None:  # models often pass the target's URL instead of its name
            return by_url
        if name.startswith(("http://", "https://")):
            for prefix in self.box.config.agent.allow_urls:
                if name.startswith(prefix):
                    return Target(name="adhoc", url=name, timeout=self.box.config.defaults.timeout)
            raise ToolFailure(f"URL {name!r} is not a configured target and matches no agent.allow_urls prefix")
        return self.target(name)


class RecentResults(MonitorTool):
    name = "recent_results"
    description = "Return the last n check results of a target, newest first, one per line."
    inputs = {
        "name": {"type": "string", "description": "The configured target name."},
        "n": {"type": "integer", "description": "How many results (1 to 50).", "nullable": True},
    }

    def forward(self, name: str, n: int | None = 10) -> str:
        return self.guarded(lambda: self._recent(name, n or 10))

    def _recent(self, name: str, n: int) -> str:
        self.target(name)
        rows = self.box.store.recent_results(name, max(1, min(int(n), 50)))
        if not rows:
            return f"{name}: no results recorded yet"
        failures = sum(1 for r in rows if not r["ok"])
        lines = [f"{name}: {failures} of the last {len(rows)} checks failed"]
        return "\n".join(lines + [format_result(r) for r in rows])


class SearchIncidents(MonitorTool):
    name = "search_incidents"
    description = ("Full-text search of past incidents, with their diagnoses and resolutions; resolved ones with a "
                   "known fix come first. Use it to find how a similar problem was fixed before.")
    inputs = {
        "query": {"type": "string", "description": "Words to look for, e.g. 'api timeout 502'."},
        "k": {"type": "integer", "description": "How many incidents at most (1 to 10).", "nullable": True},
    }

    def forward(self, query: str, k: int | None = 3) -> str:
        return self.guarded(lambda: self._search(query, k or 3))

    def _search(self, query: str, k: int) -> str:
        found = self.box.store.search_incidents(query, max(1, min(int(k), 10)))
        if not found:
            return f"no past incident matches {query!r}"
        return "\n".join(format_incident(i) for i in found)


class GetIncident(MonitorTool):
    name = "get_incident"
    description = "Return one incident in full: target, pattern, summary, diagnosis, resolution and notes."
    inputs = {"id": {"type": "integer", "description": "The incident id, e.g. 12."}}

    def forward(self, id: int) -> str:  # noqa: A002 - the model sees this name
        return self.guarded(lambda: self._get(id))

    def _get(self, incident_id: int) -> str:
        incident = self.box.store.incident(int(incident_id))
        if incident is None:
            raise ToolFailure(f"no incident #{incident_id}")
        return format_incident(incident, full=True)


class RecordDiagnosis(MonitorTool):
    name = "record_diagnosis"
    description = ("Record your diagnosis and the suspected cause on an incident, so operators and later "
                   "investigations can read it. Call it before final_answer.")
    inputs = {
        "incident_id": {"type": "integer", "description": "The incident id from the task."},
        "diagnosis": {"type": "string", "description": "What is wrong, in one or two sentences."},
        "suspected_cause": {"type": "string", "description": "The most likely cause, and the past fix if one applies."},
    }

    def forward(self, incident_id: int, diagnosis: str, suspected_cause: str) -> str:
        return self.guarded(lambda: self._record(incident_id, diagnosis, suspected_cause))

    def _record(self, incident_id: int, diagnosis: str, suspected_cause: str) -> str:
        if self.box.store.incident(int(incident_id)) is None:
            raise ToolFailure(f"no incident #{incident_id}")
        self.box.store.update_incident(int(incident_id), diagnosis=diagnosis[:2000],
                                       suspected_cause=suspected_cause[:2000])
        return f"diagnosis recorded on incident #{incident_id}"


class Remediate(MonitorTool):
    name = "remediate"
    description = ("Run a remediation action configured on a target (for example 'restart'). Only configured "
                   "actions exist; it may be disabled or a dry run. Every call is audited.")
    inputs = {
        "name": {"type": "string", "description": "The configured target name."},
        "action": {"type": "string", "description": "The action name configured on that target."},
    }

    def forward(self, name: str, action: str) -> str:
        return self.guarded(lambda: self._remediate(name, action))

    def _remediate(self, name: str, action_name: str) -> str:
        mode = self.box.config.agent.remediation
        target = self.target(name)
        action = target.actions.get(action_name)
        store, run_id = self.box.store, self.box.run_id
        if mode == "off":
            store.audit_remediation(name, action_name, dry_run=True, ok=False, detail="refused: remediation is off",
                                    run_id=run_id)
            raise ToolFailure("remediation is disabled (agent.remediation: off)")
        if action is None:
            known = ", ".join(target.actions) or "none"
            store.audit_remediation(name, action_name, dry_run=True, ok=False, detail="refused: not configured",
                                    run_id=run_id)
            raise ToolFailure(f"target {name!r} has no action {action_name!r} (configured: {known})")
        if mode == "dry_run":
            detail = f"dry run: would {action.method} {action.url}"
            store.audit_remediation(name, action_name, dry_run=True, ok=True, detail=detail, run_id=run_id)
            return detail
        try:
            response = self.box.remediate_http(action.method, action.url, headers=action.headers,
                                               content=action.body, timeout=10.0)
            ok, detail = response.is_success, f"{action.method} {action.url} -> {response.status_code}"
        except httpx.HTTPError as exc:
            ok, detail = False, f"{action.method} {action.url} failed: {exc}"
        store.audit_remediation(name, action_name, dry_run=False, ok=ok, detail=detail, run_id=run_id)
        if not ok:
            raise ToolFailure(detail)
        return detail


def toolset(box: Toolbox) -> list[Tool]:
    """The tools for one agent; ``remediate`` only where remediation is enabled."""
    tools: list[Tool] = [CheckTarget(box), RecentResults(box), SearchIncidents(box), GetIncident(box),
                         RecordDiagnosis(box)]
    if box.config.agent.remediation != "off":
        tools.append(Remediate(box))
    return tools
