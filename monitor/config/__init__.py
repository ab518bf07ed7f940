"""Configuration: the one place a config file is read, validated and defaulted.

A config is YAML. ``load(path)`` returns a :class:`Config` or raises
:class:`ConfigError` whose message names the file, the path of the bad field
(``targets[2].expect.status``) and what is allowed there.

Durations are written ``30s``, ``500ms``, ``2m``, ``1h`` (or a bare number of
seconds), finite and at most 10 years. ``${ENV_VAR}`` anywhere in a string is
replaced by the variable's value; ``${ENV_VAR:-default}`` supplies a fallback,
which may itself hold ``${OTHER}``; ``$${`` is a literal ``${``.

The file is read as hostile input: at most 1 MiB of UTF-8, nested at most 64
deep, aliases expanding to at most 100,000 nodes, no duplicate keys. Booleans
are YAML 1.2's ``true`` and ``false`` only, so a bare ``off`` (``agent.mode:
off``) stays the word the user wrote. Every problem is reported, each as
``file:line: field: what is wrong``. A fleet larger than a config file holds goes in
target files (:mod:`monitor.config.targetfiles`), with bounds of their own. Top-level keys starting ``x-`` are
ignored: a place to define anchors (``x-common: &common {...}``).

The package, by what each module holds::

    errors.py       ConfigError, and the one rendering of a pydantic error (also the eval scenarios')
    values.py       durations, http(s) URLs, the frozen base model
    addresses.py    the kinds of address (http, tcp, tls, dns, a declared kind's) and their parsing
    sections.py     a target's section of a declared kind's own settings (icmp:, a plugin's)
    conditions.py   a target's Gatus-like conditions, parsed
    targets.py      defaults and targets, with the settings of each kind
    detectors.py, agent.py (model and agent), memory.py, alerts.py, serving.py (metrics and web), backlog.py,
    maintenance.py, status.py (status pages)  one section each
    schema.py       Config: the sections together, and checks between them
    defaults.py     a target's fields on top of the config's defaults, as written
    adhoc.py        the targets of ``monitor check URL`` alone, without the rest of a config
    safeyaml.py, substitution.py, loader.py     reading a file: load, parse, for_urls
    database.py     where a config's database is: relative to the config file (monitor.db beside it by default)
    targetfiles.py  target files (``target_files: [targets/*.yaml]``): finding and reading them, their bounds
    fleet.py        a config's targets and its target files' together: validated, names checked across files
    holder.py       ConfigHolder: the config in force, swapped whole on reload, with subscribers
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # at run time each name is imported when first asked for (__getattr__)
    from monitor.config import safeyaml, substitution
    from monitor.config.addresses import DNS_TYPES, KINDS, SCHEMES, Kind, dns_question, dns_server, host_port, kind_of
    from monitor.config.agent import DEFAULT_OLLAMA, AgentConfig, ModelConfig
    from monitor.config.alerts import AlertsConfig, Webhook
    from monitor.config.backlog import BacklogConfig
    from monitor.config.detectors import Detectors
    from monitor.config.errors import ConfigError, shown
    from monitor.config.holder import ConfigHolder
    from monitor.config.loader import (
        MAX_BYTES,
        MAX_CHARS,
        MAX_DEPTH,
        MAX_NODES,
        MAX_PROBLEMS,
        describe,
        for_urls,
        load,
        parse,
        parse_bytes,
        problems,
        with_urls,
    )
    from monitor.config.maintenance import Maintenance
    from monitor.config.memory import MemoryConfig
    from monitor.config.schema import Config, cross_references, replica_ordinal
    from monitor.config.serving import MetricsConfig, WebConfig
    from monitor.config.status import StatusGroup, StatusPage
    from monitor.config.targets import (
        HTTP_ONLY,
        SETTINGS,
        TLS_ONLY,
        Action,
        DnsSettings,
        Expect,
        HeartbeatSettings,
        JsonExpect,
        Target,
        TargetDefaults,
        TargetSettings,
        TcpSettings,
        TlsSettings,
        component_name,
    )
    from monitor.config.values import MAX_SECONDS, Duration, HttpUrl, Strict, ascii_url, http_url, parse_duration

# Each name, by the module of the package that defines it; ``monitor check URL`` loads only the ones it uses.
_WHERE: dict[str, str] = {
    "DNS_TYPES": "addresses",
    "KINDS": "addresses",
    "Kind": "addresses",
    "SCHEMES": "addresses",
    "dns_question": "addresses",
    "dns_server": "addresses",
    "host_port": "addresses",
    "kind_of": "addresses",
    "AgentConfig": "agent",
    "DEFAULT_OLLAMA": "agent",
    "ModelConfig": "agent",
    "AlertsConfig": "alerts",
    "Webhook": "alerts",
    "BacklogConfig": "backlog",
    "Detectors": "detectors",
    "ConfigError": "errors",
    "shown": "errors",
    "ConfigHolder": "holder",
    "MAX_BYTES": "loader",
    "MAX_CHARS": "loader",
    "MAX_DEPTH": "loader",
    "MAX_NODES": "loader",
    "MAX_PROBLEMS": "loader",
    "describe": "loader",
    "for_urls": "loader",
    "load": "loader",
    "parse": "loader",
    "parse_bytes": "loader",
    "problems": "loader",
    "with_urls": "loader",
    "Maintenance": "maintenance",
    "MemoryConfig": "memory",
    "safeyaml": "safeyaml",
    "Config": "schema",
    "cross_references": "schema",
    "replica_ordinal": "schema",
    "MetricsConfig": "serving",
    "WebConfig": "serving",
    "StatusGroup": "status",
    "StatusPage": "status",
    "substitution": "substitution",
    "Action": "targets",
    "DnsSettings": "targets",
    "Expect": "targets",
    "HTTP_ONLY": "targets",
    "HeartbeatSettings": "targets",
    "JsonExpect": "targets",
    "SETTINGS": "targets",
    "TLS_ONLY": "targets",
    "Target": "targets",
    "TargetDefaults": "targets",
    "TargetSettings": "targets",
    "TcpSettings": "targets",
    "TlsSettings": "targets",
    "component_name": "targets",
    "Duration": "values",
    "HttpUrl": "values",
    "MAX_SECONDS": "values",
    "Strict": "values",
    "ascii_url": "values",
    "http_url": "values",
    "parse_duration": "values",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = importlib.import_module(f"{__name__}.{module}")
    value = value if module == name else getattr(value, name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_OLLAMA",
    "DNS_TYPES",
    "HTTP_ONLY",
    "KINDS",
    "MAX_BYTES",
    "MAX_CHARS",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_PROBLEMS",
    "MAX_SECONDS",
    "SCHEMES",
    "SETTINGS",
    "TLS_ONLY",
    "Action",
    "AgentConfig",
    "AlertsConfig",
    "BacklogConfig",
    "Config",
    "ConfigError",
    "ConfigHolder",
    "Detectors",
    "DnsSettings",
    "Duration",
    "Expect",
    "HeartbeatSettings",
    "HttpUrl",
    "JsonExpect",
    "Kind",
    "Maintenance",
    "MemoryConfig",
    "MetricsConfig",
    "ModelConfig",
    "StatusGroup",
    "StatusPage",
    "Strict",
    "Target",
    "TargetDefaults",
    "TargetSettings",
    "TcpSettings",
    "TlsSettings",
    "WebConfig",
    "Webhook",
    "ascii_url",
    "component_name",
    "cross_references",
    "describe",
    "dns_question",
    "dns_server",
    "for_urls",
    "host_port",
    "http_url",
    "kind_of",
    "load",
    "parse",
    "parse_bytes",
    "parse_duration",
    "problems",
    "replica_ordinal",
    "safeyaml",
    "shown",
    "substitution",
    "with_urls",
]
