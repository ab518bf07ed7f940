"""The remediate tool: configured actions only, limited, audited."""

from __future__ import annotations

from typing import Any, NoReturn

from monitor.agent.tools.base import MonitorTool, OutOfReach, ToolFailure, branch, one_line
from monitor.config import Action, Config, Target
from monitor.core import urls


class Remediate(MonitorTool):
    name = "remediate"
    description = (
        "Run a remediation action configured on a target (for example 'restart'). Only configured "
        "actions exist; it may be disabled or a dry run. Every call is audited."
    )
    inputs = {
        "name": {"type": "string", "description": "The configured target name."},
        "action": {"type": "string", "description": "The action name configured on that target."},
    }

    @classmethod
    def available(cls, config: Config) -> bool:
        return config.agent.remediation != "off"

    def forward(self, name: str, action: str) -> str:
        return self.guarded(lambda: self._remediate(name, action))

    def argument_schema(self) -> dict[str, Any]:
        """The actions configured on the targets this investigation may act on, each with its target's name."""
        config = self.box.config
        branches = [
            branch(self.arguments({"name": {"enum": [target.name]}, "action": {"enum": list(target.actions)}}))
            for name in self.target_names()
            for target in config.targets
            if target.name == name and target.actions
        ]  # a target a reload removed has none
        if not branches:  # nothing to run here: a call can only be refused, and audited
            return branch(self.arguments({"name": {"enum": self.target_names()}, "action": {"maxLength": 64}}))
        return branches[0] if len(branches) == 1 else {"anyOf": branches}

    def _remediate(self, name: str, action_name: str) -> str:
        """Refusals, dry runs and real calls are all audited; a real call's row is written before it is made."""
        box = self.box
        name, action_name = one_line(name, 128), one_line(action_name, 128)
        mode = box.config.agent.remediation
        target = self._target(name, action_name)
        action = target.actions.get(action_name)
        if mode == "off":
            self._refuse(name, action_name, "remediation is off", "remediation is disabled (agent.remediation: off)")
        if action is None:
            known = ", ".join(target.actions) or "none"
            self._refuse(name, action_name, "not configured", f"target {name!r} has no action {action_name!r} (configured: {known})")
        call = f"{action.method} {urls.redact(action.url)}"
        if mode == "dry_run":
            detail = f"dry run: would {call}"
            box.store.runs.audit_remediation(name, action_name, dry_run=True, ok=True, detail=detail, run_id=box.run_id)
            return detail
        return self._call(name, action_name, action, call)

    def _call(self, name: str, action_name: str, action: Action, call: str) -> str:
        """The real call: its audit row claimed first (within the limits), then completed with the answer."""
        box = self.box
        claim = box.store.runs.claim_remediation(
            name,
            action_name,
            detail=f"intent: {call} (no answer recorded)",
            run_id=box.run_id,
            incident_id=box.incident_id,
            per_incident=box.remediations_per_incident,
            per_hour=box.remediations_per_hour,
        )
        if claim is None:
            self._refuse(
                name,
                action_name,
                "limit reached",
                f"remediation limit reached ({box.remediations_per_incident} per incident, "
                f"{box.remediations_per_hour} per hour): ask an operator",
            )
        try:
            response = box.remediate_http(action.method, action.url, headers=action.headers, content=action.body, timeout=10.0)
            ok, detail = response.is_success, f"{call} -> {response.status_code}"
        except Exception as exc:  # noqa: BLE001 - any failure of the call is audited, then shown to the model
            ok, detail = False, f"{call} failed: {type(exc).__name__}: {one_line(urls.redact_text(str(exc)), 200)}"
        box.store.runs.complete_remediation(claim, ok=ok, detail=detail)
        if not ok:
            raise ToolFailure(detail)
        return detail

    def _target(self, name: str, action_name: str) -> Target:
        """The configured target ``name`` of this investigation; else the call is refused, and audited."""
        try:
            return self.target(name)
        except OutOfReach as exc:
            self._refuse(name, action_name, "not this investigation's target", str(exc))
        except ToolFailure as exc:
            self._refuse(name, action_name, "no such target", str(exc))

    def _refuse(self, name: str, action_name: str, why: str, message: str) -> NoReturn:
        self.box.store.runs.audit_remediation(name, action_name, dry_run=True, ok=False, detail=f"refused: {why}", run_id=self.box.run_id)
        raise ToolFailure(message)
