"""Alert rules: who hears of a target's incidents, and how often (``targets[].alerts:`` and ``alert_rules:``).

A target's own ``alerts:`` decides for it; else the first of ``alert_rules:`` that matches it (by name,
glob patterns allowed, by ``group`` or by ``labels``); else every receiver in ``alerts.default_receivers``
(all of them, when that is not set). Receivers are named: a webhook's ``name``, ``alertmanager`` (every
member), ``apprise`` (every channel of ``alerts.notify``) and a declared receiver kind's name (its section's).
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from pydantic import Field, field_validator

from monitor.config.values import Duration, Strict, parse_duration

ALERTMANAGER, APPRISE = "alertmanager", "apprise"  # the names of those receivers in rules


class Escalation(Strict):
    """Still open and unacknowledged ``after`` its opening: ``receivers`` hear of it too, from then on."""

    after: Duration
    receivers: list[str] = Field(min_length=1)


class ReceiverPolicy(Strict):
    """One receiver's own thresholds for a target, as Gatus has them per alert: it hears that the incident opened
    at the check that makes ``failures`` failures in a row (at the earliest when the incident opens), and that it
    resolved at the check that makes ``successes`` passes in a row (at the latest when the incident resolves);
    ``send_resolved`` over the policy's. Unset: the target's ``detectors.consecutive`` and ``recover_after``."""

    failures: int | None = Field(default=None, ge=1)
    successes: int | None = Field(default=None, ge=1)
    send_resolved: bool | None = None


class AlertPolicy(Strict):
    """How a target's incidents are sent: to whom, whether their recovery too, reminders, escalation, and the
    receivers with thresholds of their own (``per_receiver``, by the name rules call them)."""

    receivers: list[str] | None = None  # None: alerts.default_receivers
    send_resolved: bool = True
    per_receiver: dict[str, ReceiverPolicy] = Field(default_factory=dict)
    repeat_every: Duration | None = None  # a reminder while open and unacknowledged, at most once a minute
    escalate: Escalation | None = None

    @field_validator("repeat_every", mode="before")
    @classmethod
    def _once_a_minute_at_most(cls, value: Any) -> Any:
        if value is not None and parse_duration(value) < 60:
            raise ValueError(f"{parse_duration(value):g}s is too often: reminders come at most once a minute (1m)")
        return value


DEFAULT_POLICY = AlertPolicy()  # a target with no policy of its own or a rule: one, shared by all of them


class Match(Strict):
    """Which targets a rule is for: every condition given must hold (none given: every target)."""

    targets: list[str] = Field(default_factory=list)  # names, or glob patterns (``api-*``)
    groups: list[str] = Field(default_factory=list)
    labels: dict[str, str] = Field(default_factory=dict)

    def matches(self, name: str, group: str | None, labels: dict[str, str]) -> bool:
        return (
            (not self.targets or any(fnmatchcase(name, pattern) for pattern in self.targets))
            and (not self.groups or group in self.groups)
            and all(labels.get(key) == value for key, value in self.labels.items())
        )


class AlertRule(AlertPolicy):
    """An entry of ``alert_rules:``: a policy, and the targets it is for."""

    match: Match = Field(default_factory=Match)


def receiver_names(alerts: Any) -> set[str]:
    """The receiver names rules may use, read from a raw or validated ``alerts:`` section."""
    from monitor.config.alerts import AlertsConfig, receiver_kinds  # here: a target's own policy needs neither

    get = alerts.get if isinstance(alerts, dict) else lambda key, default=None: getattr(alerts, key, default)
    hooks = get("webhooks") or []
    hooks = hooks if isinstance(hooks, (list, tuple)) else []  # not a list: the section's own check says so
    found = (h.get("name") if isinstance(h, dict) else getattr(h, "name", None) for h in hooks)
    names = {n for n in found if isinstance(n, str)}
    if get("alertmanager"):
        names.add(ALERTMANAGER)
    if get("notify"):
        names.add(APPRISE)
    declared = alerts.receiver_settings() if isinstance(alerts, AlertsConfig) else {}
    return names | {kind for kind in receiver_kinds() if get(kind) is not None or kind in declared}


def webhook_names(hooks: Any) -> list[tuple[str, str]]:
    """Webhook names (raw) that would make a rule ambiguous: one used twice, or the name of another receiver."""
    from monitor.config.alerts import receiver_kinds

    problems: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for index, hook in enumerate(hooks if isinstance(hooks, list) else []):
        name = hook.get("name") if isinstance(hook, dict) else None
        where = f"alerts.webhooks[{index}].name"
        if name in (ALERTMANAGER, APPRISE, *receiver_kinds()):
            means = {ALERTMANAGER: "every Alertmanager", APPRISE: "the Apprise channels"}.get(name, f"the {name} receivers")
            problems.append((where, f"{name!r} is what rules call {means}: give the webhook another name"))
        elif isinstance(name, str) and name in seen:
            problems.append((where, f"{name!r} is the name of webhooks[{seen[name]}] already; each needs its own"))
        elif isinstance(name, str):
            seen[name] = index
    return problems


def unmatched(where: str, match: Any, targets: list[Any]) -> list[tuple[str, str]]:
    """A rule's ``match`` (raw) naming a target, group or label no target has: a typo that would page nobody."""
    if not isinstance(match, dict):
        return []
    known = [t for t in targets if isinstance(t, dict)]
    names = [str(t["name"]) for t in known if isinstance(t.get("name"), str)]
    groups = sorted({t["group"] for t in known if isinstance(t.get("group"), str)})
    problems = []
    for position, pattern in enumerate(_listed(match.get("targets"))):
        if not any(fnmatchcase(name, pattern) for name in names):
            said = (
                f"{pattern!r} matches no target"
                if any(c in pattern for c in "*?[")
                else f"no target named {pattern!r} (configured: {', '.join(sorted(names)) or 'none'})"
            )
            problems.append((f"{where}.targets[{position}]", said))
    problems += [
        (f"{where}.groups[{position}]", f"no target has group {group!r} (groups: {', '.join(groups) or 'none'})")
        for position, group in enumerate(_listed(match.get("groups")))
        if group not in groups
    ]
    labels = match.get("labels")
    for key, value in labels.items() if isinstance(labels, dict) else []:
        if not any(isinstance(t.get("labels"), dict) and t["labels"].get(key) == value for t in known):
            problems.append((f"{where}.labels.{key}", f"no target has label {key}: {value}"))
    return problems


def _listed(value: Any) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def unknown_receivers(where: str, policy: Any, known: set[str]) -> list[tuple[str, str]]:
    """A policy (raw) naming a receiver that is not configured: one problem per name."""
    if not isinstance(policy, dict):
        return []
    escalate, own = policy.get("escalate"), policy.get("per_receiver")
    lists = [
        ("receivers", policy.get("receivers")),
        ("escalate.receivers", escalate.get("receivers") if isinstance(escalate, dict) else None),
        ("per_receiver", list(own) if isinstance(own, dict) else None),
    ]
    shown = ", ".join(sorted(known)) or "none (name a webhook with name:)"
    return [
        (f"{where}.{field}[{position}]", f"no receiver named {name!r} (configured: {shown})")
        for field, names in lists
        if isinstance(names, list)
        for position, name in enumerate(names)
        if isinstance(name, str) and name not in known
    ]
