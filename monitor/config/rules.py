"""Alert rules: who hears of a target's incidents, and how often (``targets[].alerts:`` and ``alert_rules:``).

A target's own ``alerts:`` decides for it; else the first of ``alert_rules:`` that matches it (by name,
glob patterns allowed, by ``group`` or by ``labels``); else every receiver in ``alerts.default_receivers``
(all of them, when that is not set). Receivers are named: a webhook's ``name``, ``alertmanager`` (every
member) and ``apprise`` (every channel of ``alerts.notify``).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from pydantic import Field

from monitor.config.values import Duration, Strict

ALERTMANAGER, APPRISE = "alertmanager", "apprise"  # the names of those receivers in rules


class Escalation(Strict):
    """Still open and unacknowledged ``after`` its opening: ``receivers`` hear of it too, from then on."""

    after: Duration
    receivers: list[str] = Field(min_length=1)


class AlertPolicy(Strict):
    """How a target's incidents are sent: to whom, whether their recovery too, reminders, escalation."""

    receivers: list[str] | None = None  # None: alerts.default_receivers
    send_resolved: bool = True
    repeat_every: Duration | None = Field(default=None, ge=60.0)  # a reminder while open and unacknowledged
    escalate: Escalation | None = None


class Match(Strict):
    """Which targets a rule is for: every condition given must hold (none given: every target)."""

    targets: list[str] = Field(default_factory=list)  # names, or glob patterns (``api-*``)
    groups: list[str] = Field(default_factory=list)
    labels: dict[str, str] = Field(default_factory=dict)

    def matches(self, name: str, group: str | None, labels: dict[str, str]) -> bool:
        return ((not self.targets or any(fnmatchcase(name, pattern) for pattern in self.targets))
                and (not self.groups or group in self.groups)
                and all(labels.get(key) == value for key, value in self.labels.items()))


class AlertRule(AlertPolicy):
    """An entry of ``alert_rules:``: a policy, and the targets it is for."""

    match: Match = Field(default_factory=Match)


def receiver_names(alerts: Any) -> set[str]:
    """The receiver names rules may use, read from a raw or validated ``alerts:`` section."""
    get = alerts.get if isinstance(alerts, dict) else lambda key, default=None: getattr(alerts, key, default)
    hooks = get("webhooks") or []
    found = (h.get("name") if isinstance(h, dict) else getattr(h, "name", None) for h in hooks)
    names = {n for n in found if isinstance(n, str)}
    if get("alertmanager"):
        names.add(ALERTMANAGER)
    if get("notify"):
        names.add(APPRISE)
    return names


def unknown_receivers(where: str, policy: Any, known: set[str]) -> list[tuple[str, str]]:
    """A policy (raw) naming a receiver that is not configured: one problem per name."""
    if not isinstance(policy, dict):
        return []
    escalate = policy.get("escalate")
    lists = [("receivers", policy.get("receivers")),
             ("escalate.receivers", escalate.get("receivers") if isinstance(escalate, dict) else None)]
    shown = ", ".join(sorted(known)) or "none (name a webhook with name:)"
    return [(f"{where}.{field}[{position}]", f"no receiver named {name!r} (configured: {shown})")
            for field, names in lists if isinstance(names, list)
            for position, name in enumerate(names) if isinstance(name, str) and name not in known]
