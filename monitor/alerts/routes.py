"""Routes: which receivers hear of a target's incidents, and when (alert rules applied to a config).

:class:`Routes` reads the config's alert policies (``targets[].alerts``, ``alert_rules``, see
:mod:`monitor.config.rules`) once per config, and answers for a target: its receivers (by outbox name),
whether its recovery is sent, its reminders and escalation, and how long its first message is held::

    hold    wait_for_diagnosis when the agent investigates (a diagnosis landing earlier sends it at once),
            else group_window; incidents opening while a first message is held join it when they share a
            component (depends_on) or opened within group_window of it: one message lists them

``Routes()`` (no config) sends everything to every receiver at once, as before rules existed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from monitor.alerts import registry
from monitor.config import Config
from monitor.config.rules import ALERTMANAGER, APPRISE, DEFAULT_POLICY, AlertPolicy
from monitor.core.incidents import Incident


@dataclass(frozen=True)
class _Policies:
    """What :class:`Routes` reads of one config, swapped whole at a reload (a sender reads the old or the new)."""

    config: Config | None
    investigated: bool
    policies: dict[str, AlertPolicy]  # only what differs from a target alone with the default policy: 50,000 of those weighed 13 MB
    depends: dict[str, frozenset[str]]
    names: frozenset[str]
    groups: dict[str, str]

    @classmethod
    def of(cls, config: Config | None, investigated: bool | None) -> _Policies:
        if config is None:
            return cls(None, bool(investigated), {}, {}, frozenset(), {})
        targets = config.targets
        return cls(
            config,
            config.agent.mode != "off" if investigated is None else investigated,
            {t.name: p for t in targets if (p := config.alert_policy(t)) is not DEFAULT_POLICY},
            {t.name: frozenset({t.name, *t.depends_on}) for t in targets if t.depends_on},
            frozenset(t.name for t in targets),
            {t.name: t.group for t in targets if t.group},
        )


class Routes:
    """Alert policies by target: ``Routes(config)``, made by the composition root, following each reload
    (:meth:`apply_config`); ``Routes()`` sends everything to every receiver at once."""

    def __init__(self, config: Config | None = None, *, investigated: bool | None = None) -> None:
        self._investigated = investigated
        self._now = _Policies.of(config, investigated)

    def apply_config(self, config: Config) -> None:
        """After a reload: the policies of ``config`` (routes made without a config stay so)."""
        if self._now.config is not None:
            self._now = _Policies.of(config, self._investigated)

    @property
    def config(self) -> Config | None:
        return self._now.config

    @property
    def investigated(self) -> bool:
        return self._now.investigated

    @property
    def hold(self) -> float:
        """How long a first message waits (for its diagnosis, or for the rest of its outage)."""
        now = self._now
        if now.config is None:
            return 0.0
        alerts = now.config.alerts
        return alerts.wait_for_diagnosis if now.investigated else alerts.group_window

    @property
    def external_url(self) -> str | None:
        """Where people reach the web UI (``web.external_url``): alerts link to incidents' pages there."""
        config = self._now.config
        return config.web.external_url if config is not None else None

    @property
    def group_window(self) -> float:
        config = self._now.config
        return config.alerts.group_window if config is not None else 0.0

    def policy(self, target: str) -> AlertPolicy:
        return self._now.policies.get(target) or DEFAULT_POLICY

    def group(self, target: str) -> str | None:
        return self._now.groups.get(target)

    def send_resolved(self, target: str, rule: str) -> bool:
        """Whether the receiver ``rule`` hears that the target's incidents resolved (its own word, else the policy's)."""
        policy = self.policy(target)
        own = policy.per_receiver.get(rule)
        return policy.send_resolved if own is None or own.send_resolved is None else own.send_resolved

    def receivers(self, target: str, outbox: dict[str, str]) -> set[str]:
        """The outbox names of the target's receivers; ``outbox`` maps each outbox name to its rule name."""
        config = self._now.config
        wanted = self.policy(target).receivers
        if wanted is None and config is not None:
            wanted = config.alerts.default_receivers
        return set(outbox) if wanted is None else {name for name, rule in outbox.items() if rule in wanted}

    def escalation(self, target: str, outbox: dict[str, str]) -> set[str]:
        """The outbox names of those the target's incidents escalate to."""
        escalate = self.policy(target).escalate
        return set() if escalate is None else {name for name, rule in outbox.items() if rule in escalate.receivers}

    def _components(self, now: _Policies, target: str) -> frozenset[str]:
        """The target and what it depends on (nothing for a target no longer configured)."""
        found = now.depends.get(target)
        return found if found is not None else frozenset({target}) if target in now.names else frozenset()

    def together(self, leader: Incident, incident: Incident) -> bool:
        """Whether ``incident`` belongs to the outage ``leader`` opened: a shared component, or the window."""
        now = self._now
        if self._components(now, incident.target) & self._components(now, leader.target):
            return True
        return bool(incident.opened_at - leader.opened_at <= self.group_window)


def rule_names(receivers: dict[str, Any]) -> dict[str, str]:
    """Each receiver's outbox name → the name rules call it by: a webhook's ``name`` (an unnamed webhook is
    in no rule, only in the default), ``alertmanager``, ``apprise``, a registered kind's name."""
    named = {}
    for outbox, receiver in receivers.items():
        hook = getattr(receiver, "hook", None)
        if outbox.startswith(ALERTMANAGER):
            named[outbox] = ALERTMANAGER
        elif outbox.startswith("apprise:"):
            named[outbox] = APPRISE
        elif (kind := registry.kind_of(outbox)) is not None:
            named[outbox] = kind
        else:
            named[outbox] = getattr(hook, "name", None) or outbox
    return named
