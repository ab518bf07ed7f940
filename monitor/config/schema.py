"""The whole config: :class:`Config`, its sections, and the checks between fields of different sections.

Each section is a model of its own module (targets, detectors, agent, memory, alerts, serving,
maintenance, probe); this one puts them together, applies ``defaults`` to every target, and works out
which replica this process is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from monitor.config.agent import AgentConfig, ModelConfig
from monitor.config.alerts import AlertsConfig
from monitor.config.backlog import BacklogConfig
from monitor.config.defaults import with_defaults
from monitor.config.detectors import Detectors
from monitor.config.errors import ConfigError
from monitor.config.maintenance import Maintenance
from monitor.config.memory import MemoryConfig
from monitor.config.probe import ProbeConfig
from monitor.config.rules import DEFAULT_POLICY, AlertPolicy, AlertRule, receiver_names, unknown_receivers, unmatched, webhook_names
from monitor.config.serving import MetricsConfig, WebConfig
from monitor.config.status import StatusPage
from monitor.config.targets import Target, TargetDefaults, fields_of_another_kind, share_parts
from monitor.config.values import MAX_WORKERS, Duration, Strict, Workers, settle

DEFAULT_LEASE = 15.0  # seconds: a dead replica's targets move to the live ones within it plus an interval


class Config(Strict):
    database: str | None = None
    defaults: TargetDefaults = Field(default_factory=TargetDefaults)
    targets: list[Target] = Field(default_factory=list)
    target_files: list[str] = Field(default_factory=list, max_length=1000)  # globs of files of targets (targetfiles.py)
    detectors: Detectors = Field(default_factory=Detectors)
    model: ModelConfig = Field(default_factory=ModelConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    alert_rules: list[AlertRule] = Field(default_factory=list)
    maintenance: list[Maintenance] = Field(default_factory=list)
    status_pages: list[StatusPage] = Field(default_factory=list, max_length=100)
    probe: ProbeConfig = Field(default_factory=ProbeConfig)
    concurrency: int = Field(default=64, ge=1, le=4096)
    backlog: BacklogConfig = Field(default_factory=BacklogConfig)
    # scale-out: replicas split the targets between them by a stable hash of each name (schedule.py)
    replicas: int = Field(default=1, ge=1, le=1000)
    replica_index: int | None = Field(default=None, ge=0)
    # failover: replicas hold leases in the shared database and own targets by rendezvous hashing over the
    # live ones (monitor.daemon.members); on by default with replicas > 1 (DEFAULT_LEASE); ``off``: the static split
    lease: Duration | None = Field(default=None, ge=1.0, le=3600.0)
    # where this replica checks from (else $MONITOR_LOCATION): stored with each result, and what a target's
    # ``quorum`` counts
    location: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    # every core: checking processes on this machine (``auto``, the default: as many as the fleet's checks a second
    # need, up to one per core, so one process on one core), sharing this replica's targets by rendezvous hashing
    # over the live ones; the daemon records their results (monitor.daemon.workers)
    workers: Workers = Field(default="auto", validate_default=True, ge=1, le=MAX_WORKERS)
    _from_files: tuple[int, int] = PrivateAttr(default=(0, 0))
    _by_demand: bool = PrivateAttr(default=True)

    @property
    def workers_by_demand(self) -> bool:
        """``workers: auto`` (or left out): ``workers`` is the most, one per core; the daemon starts as many as the
        fleet's checks a second need (:func:`monitor.daemon.workers.needed`), more when a reload asks for more.
        Read as it was written: a copy of the config with ``workers`` updated keeps it."""
        return self._by_demand

    @model_validator(mode="after")
    def _workers_as_written(self) -> Config:
        self._by_demand = "workers" not in self.model_fields_set
        return self

    @property
    def from_target_files(self) -> tuple[int, int]:
        """How many of the targets came from target files, and from how many files."""
        return self._from_files

    def with_target_files(self, targets: list[Target], files: int) -> Config:
        """This config with ``targets`` read from ``files`` target files after its own (already validated)."""
        share_parts(targets)
        config = self.model_copy(update={"targets": self.targets + targets})
        config._from_files = (len(targets), files)
        return config

    @field_validator("lease", mode="before")
    @classmethod
    def _lease_off(cls, value: Any) -> Any:
        if value is None:  # `lease:` with nothing after it: neither a duration nor off
            raise ValueError("is empty: give a duration such as 15s, or off for a static split without failover")
        return None if value == "off" or value is False else value

    @model_validator(mode="after")
    def _replica(self) -> Config:
        """``replica_index`` from the config, else ``$MONITOR_REPLICA_INDEX``, else the host name's
        ordinal (a StatefulSet's pod ``monitor-2`` is replica 2); alone, a daemon is replica 0."""
        index = replica_ordinal(self.replicas) if self.replica_index is None else self.replica_index
        if index >= self.replicas:
            raise ValueError(f"replica_index {index} must be below replicas ({self.replicas})")
        if self.replica_index is None:
            settle(self, replica_index=index)
        if self.replicas > 1 and self.lease is None and "lease" not in self.model_fields_set:
            settle(self, lease=DEFAULT_LEASE)  # replicas are asked for so that a dead one's share moves
        if self.replicas > 1 and self.lease is None and any(t.quorum for t in self.targets):
            raise ValueError("a target with a quorum is checked from several replicas: it needs a lease, not lease: off")
        if self.location is None and os.environ.get("MONITOR_LOCATION", "").strip():
            settle(self, location=_location(os.environ["MONITOR_LOCATION"].strip()))
        return self

    @model_validator(mode="before")
    @classmethod
    def _apply_defaults(cls, data: Any) -> Any:
        """Each target starts from ``defaults`` and overrides what it names; its own ``detectors`` start
        from the top-level ``detectors``. ``workers: auto`` is as if left out (:attr:`workers_by_demand`)."""
        if isinstance(data, dict) and isinstance(data.get("workers"), str) and data["workers"].strip().lower() == "auto":
            data = {key: value for key, value in data.items() if key != "workers"}
        if not isinstance(data, dict) or not isinstance(data.get("targets"), list):
            return data
        defaults = data.get("defaults") or {}
        if not isinstance(defaults, dict):
            return data
        data = dict(data)
        detectors = data.get("detectors")
        data["targets"] = with_defaults(defaults, data["targets"], detectors if isinstance(detectors, dict) else None)
        return data

    @model_validator(mode="after")
    def _cross_references(self, info: ValidationInfo) -> Config:
        """Unique target names, known maintenance targets (``parse`` checks these on the raw data)."""
        if info.context and info.context.get("cross_checked"):
            return self
        problems = cross_references(
            {
                "targets": [
                    {
                        "name": t.name,
                        "depends_on": t.depends_on,
                        "alerts": t.alerts and t.alerts.model_dump(),
                        "group": t.group,
                        "labels": t.labels,
                    }
                    for t in self.targets
                ],
                "maintenance": [{"targets": m.targets} for m in self.maintenance],
                "alerts": {
                    **self.alerts.model_dump(include={"alertmanager", "notify", "default_receivers"}),
                    "webhooks": [{"name": w.name} for w in self.alerts.webhooks],
                },
                "alert_rules": [r.model_dump() for r in self.alert_rules],
                "status_pages": [{"slug": p.slug, "groups": [{"targets": g.targets} for g in p.groups]} for p in self.status_pages],
            }
        )
        if problems:
            raise ValueError("\n".join(f"{where}: {message}" for where, message in problems))
        return self

    @model_validator(mode="after")
    def _judge_reads_a_model(self) -> Config:
        if self.memory.judge.model == "agent" and self.model.id == "builtin":
            raise ValueError("memory.judge.model: agent, but model.id is builtin, which cannot judge: name a model, e.g. openai/qwen2.5:7b")
        return self

    @model_validator(mode="after")
    def _shared_parts(self) -> Config:
        """Its targets validated and settled (the last after-validator): equal parts held once (:func:`share_parts`)."""
        share_parts(self.targets)
        return self

    def in_maintenance(self, target: str, at: float) -> bool:
        return any(window.covers(target, at) for window in self.maintenance)

    def detectors_for(self, name: str) -> Detectors:
        """The target's own detector thresholds, else the top-level ones."""
        own = next((t.detectors for t in self.targets if t.name == name), None)
        return own or self.detectors

    def alert_policy(self, target: Target) -> AlertPolicy:
        """The target's own ``alerts:``, else the first of ``alert_rules`` that matches it, else the default."""
        if target.alerts is not None:
            return target.alerts
        for rule in self.alert_rules:
            if rule.match.matches(target.name, target.group, target.labels):
                return rule
        return DEFAULT_POLICY

    def target(self, name: str) -> Target:
        for target in self.targets:
            if target.name == name:
                return target
        raise ConfigError(f"no target named {name!r} (configured: {some_names([t.name for t in self.targets])})")


def replica_ordinal(replicas: int) -> int:
    """Which replica this process is, when the config does not say: see ``Config._replica``."""
    if replicas == 1:
        return 0
    value = os.environ.get("MONITOR_REPLICA_INDEX", "").strip()
    if value:
        if not value.isdigit():
            raise ValueError(f"MONITOR_REPLICA_INDEX={value[:20]!r} is not a number")
        return int(value)
    import socket

    match = re.search(r"-(\d+)$", socket.gethostname())
    if match is None:
        raise ValueError(
            f"replicas is {replicas}: set replica_index, or MONITOR_REPLICA_INDEX, or run as a "
            f"StatefulSet pod whose host name ends in -N (this one is {socket.gethostname()!r})"
        )
    return int(match.group(1))


def _location(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", value):
        raise ValueError(f"MONITOR_LOCATION={value[:20]!r} is not a location: letters, digits and _.:- only")
    return value


def some_names(names: list[str], shown: int = 20) -> str:
    """A list of names for a message: the first ``shown``, and how many more (a fleet has 50,000)."""
    more = f", ... and {len(names) - shown:,} more" if len(names) > shown else ""
    return (", ".join(names[:shown]) or "none") + more


def cross_references(data: Any, located: Callable[[int], str] | None = None) -> list[tuple[str, str]]:
    """Problems between fields, found on raw data so that they show beside every other error; ``located(i)``
    says where target ``i`` was written (``file:line``), for a name used twice."""
    targets = data.get("targets") if isinstance(data, dict) else None
    if not isinstance(targets, list):
        return []
    problems, first = [], dict[str, int]()
    tokens: dict[str, Any] = {}
    for index, target in enumerate(targets):
        name = target.get("name") if isinstance(target, dict) else None
        if isinstance(name, str) and name in first:
            also = f" (also at {located(first[name])})" if located else ""
            problems.append((f"targets[{index}].name", f"target name {name!r} is used twice; names must be unique{also}"))
        elif isinstance(name, str):
            first[name] = index
        problems += fields_of_another_kind(index, target)
        beat = target.get("heartbeat") if isinstance(target, dict) else None
        token = beat.get("token") if isinstance(beat, dict) else None
        if isinstance(token, str) and token in tokens:  # the pings would all go to one of them
            problems.append(
                (
                    f"targets[{index}].heartbeat.token",
                    f"the same token as target {tokens[token]!r}; each heartbeat needs its own (make one with `monitor token`)",
                )
            )
        elif isinstance(token, str):
            tokens[token] = name
    names = set(first)
    problems += _dependencies(targets, names)
    problems += _receivers(data, targets)
    windows = data.get("maintenance")
    for index, window in enumerate(windows if isinstance(windows, list) else []):
        wanted = window.get("targets") if isinstance(window, dict) else None
        for position, name in enumerate(wanted if isinstance(wanted, list) else []):
            if isinstance(name, str) and name not in first:
                problems.append(
                    (f"maintenance[{index}].targets[{position}]", f"no target named {name!r} (configured: {some_names(sorted(first))})")
                )
    return problems + _status_pages(data.get("status_pages"), names)


def _status_pages(pages: Any, names: set[str]) -> list[tuple[str, str]]:
    """A status page whose slug another page has, or whose groups name a target that is not configured."""
    problems, slugs = [], set()
    for index, page in enumerate(pages if isinstance(pages, list) else []):
        slug = page.get("slug") if isinstance(page, dict) else None
        if isinstance(slug, str) and slug in slugs:
            problems.append((f"status_pages[{index}].slug", f"{slug!r} is the slug of another page; each needs its own"))
        slugs.add(slug)
        groups = page.get("groups") if isinstance(page, dict) else None
        for number, group in enumerate(groups if isinstance(groups, list) else []):
            wanted = group.get("targets") if isinstance(group, dict) else None
            for position, name in enumerate(wanted if isinstance(wanted, list) else []):
                if isinstance(name, str) and name not in names:
                    problems.append(
                        (
                            f"status_pages[{index}].groups[{number}].targets[{position}]",
                            f"no target named {name!r} (configured: {some_names(sorted(names))})",
                        )
                    )
    return problems


def _dependencies(targets: list[Any], names: set[str]) -> list[tuple[str, str]]:
    """A target that depends on itself, names a dependency twice, or names a target in the wrong case."""
    problems, folded = [], {name.lower(): name for name in names}
    for index, target in enumerate(targets):
        wanted = target.get("depends_on") if isinstance(target, dict) else None
        seen: set[str] = set()
        for position, name in enumerate(wanted if isinstance(wanted, list) else []):
            where = f"targets[{index}].depends_on[{position}]"
            if not isinstance(name, str):
                continue
            if name == target.get("name"):
                problems.append((where, f"target {name!r} depends on itself"))
            elif name in seen:
                problems.append((where, f"{name!r} is listed twice"))
            elif name not in names and name.lower() in folded:
                problems.append(
                    (
                        where,
                        f"no target named {name!r}: did you mean {folded[name.lower()]!r}? "
                        "(names are case-sensitive; a name that is no target is a component)",
                    )
                )
            seen.add(name)
    return problems


def _receivers(data: dict[str, Any], targets: list[Any]) -> list[tuple[str, str]]:
    """Alert policies naming receivers that are not configured."""
    alerts = data.get("alerts")
    alerts = alerts if isinstance(alerts, dict) else {}
    known = receiver_names(alerts)
    problems = unknown_receivers("alerts", {"receivers": alerts.get("default_receivers")}, known)
    problems = [(where.replace("alerts.receivers", "alerts.default_receivers"), message) for where, message in problems]
    problems += webhook_names(alerts.get("webhooks"))
    for index, target in enumerate(targets):
        problems += unknown_receivers(f"targets[{index}].alerts", target.get("alerts") if isinstance(target, dict) else None, known)
    rules = data.get("alert_rules")
    for index, rule in enumerate(rules if isinstance(rules, list) else []):
        problems += unknown_receivers(f"alert_rules[{index}]", rule, known)
        problems += unmatched(f"alert_rules[{index}].match", rule.get("match") if isinstance(rule, dict) else None, targets)
    return problems
