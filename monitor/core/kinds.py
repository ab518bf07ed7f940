"""Check kinds, as each declares itself: the one list the config, ``/probe`` and the metrics read.

A kind is one module. It declares what the rest of monitor knows of it, and registers its check::

    kinds.declare(kinds.Kind(
        "icmp",
        schemes=("icmp",),               # icmp://host names an icmp target
        settings=IcmpSettings,           # the model of a target's ``icmp:`` section (a pydantic model)
        address=icmp_host,               # checks an address of the kind; a ValueError says what is wrong
        host=icmp_host,                  # the component an address names (the host it reaches)
        errors={"icmp_no_reply": "no echo reply to any request", ...},
        probe=kinds.Probe("icmp://probe.invalid", series=(kinds.Series(...),)),
    ))
    registry.register("icmp", Icmp)      # monitor.checks.registry: what checks a target of the kind

Why here: the config validates a target's kind, address and settings, and may not import the checks (they sit
above it), so the declarations live at the bottom, in the standard library's terms, where every layer may read
them. The built-in kinds are named in :data:`BUILTIN` with the module that declares each and the schemes of
their addresses, so reading an address or a kind's name loads nothing; the first question about a kind's
settings, address or probe imports its module by name (a config of http targets never loads dnspython or
icmplib). A kind of a plugin is declared when its module is imported, before a config names it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# The built-in kinds: the module that declares each, and the schemes of its addresses.
BUILTIN: dict[str, tuple[str, tuple[str, ...]]] = {
    "http": ("monitor.checks.http", ("http", "https")),
    "tcp": ("monitor.checks.tcp", ("tcp",)),
    "tls": ("monitor.checks.tls", ("tls",)),
    "dns": ("monitor.checks.dns", ("dns",)),
    "icmp": ("monitor.checks.icmp", ("icmp",)),
    "heartbeat": ("monitor.checks.heartbeat", ("heartbeat",)),
}


@dataclass(frozen=True)
class Series:
    """A gauge a kind adds to a ``/probe`` answer: ``value(result)`` is its value, or ``{label value: value}``
    with ``label`` (``probe_icmp_duration_seconds{phase="rtt"}``); None leaves it out of that answer."""

    name: str
    help: str
    value: Callable[[Any], float | Mapping[str, float] | None]
    label: str | None = None


@dataclass(frozen=True)
class Probe:
    """How ``/probe?module=`` probes with a kind: a sample address a module is validated with, the address a
    scrape's ``target`` names (blackbox_exporter's ``host:port``, or a URL), and the kind's own series."""

    sample: str
    address: Callable[[str], str] | None = None  # None: ``<kind>://<target>``
    series: tuple[Series, ...] = ()


def _no_host(address: str) -> str | None:
    return None


@dataclass(frozen=True)
class Kind:
    """What a kind of check declares about itself (see the module's docstring)."""

    name: str
    schemes: tuple[str, ...] = ()
    settings: type[Any] | None = None
    address: Callable[[str], object] | None = None
    host: Callable[[str], str | None] = _no_host
    errors: Mapping[str, str] = field(default_factory=dict)
    probe: Probe | None = None


_DECLARED: dict[str, Kind] = {}


def declare(kind: Kind) -> Kind:
    """Make ``kind`` known by its name and schemes; declaring the same kind again is fine, another is refused."""
    known = _DECLARED.get(kind.name)
    if known is not None and known != kind:
        raise ValueError(f"check kind {kind.name!r} is already declared")
    taken = {scheme: name for name in names() if name != kind.name for scheme in schemes_of(name)}
    clash = [scheme for scheme in kind.schemes if scheme in taken]
    if clash:
        raise ValueError(f"check kind {kind.name!r}: scheme {clash[0]!r} is {taken[clash[0]]!r}'s")
    _DECLARED[kind.name] = kind
    return kind


def forget(name: str) -> None:
    """Undeclare a kind that is not built in (a test's)."""
    if name not in BUILTIN:
        _DECLARED.pop(name, None)


def known(name: object) -> bool:
    """Whether ``name`` is a kind, without loading any."""
    return isinstance(name, str) and (name in BUILTIN or name in _DECLARED)


def names() -> list[str]:
    """Every kind: the built-in ones in their order, then the declared ones."""
    return [*BUILTIN, *(name for name in _DECLARED if name not in BUILTIN)]


def schemes_of(name: str) -> tuple[str, ...]:
    return BUILTIN[name][1] if name in BUILTIN else _DECLARED[name].schemes


def by_scheme(scheme: str) -> str | None:
    """The kind whose addresses start ``scheme:`` (``https`` -> http), or None."""
    scheme = scheme.lower()
    return next((name for name in names() if scheme in schemes_of(name)), None)


def get(name: str) -> Kind:
    """The declaration of kind ``name``; a built-in kind's module is imported on first ask. KeyError if none."""
    if name not in _DECLARED and name in BUILTIN:
        importlib.import_module(BUILTIN[name][0])  # it declares itself
    return _DECLARED[name]


def loaded() -> list[Kind]:
    """Every kind's declaration, the built-in ones loaded (for listing what all kinds have, e.g. probers)."""
    return [get(name) for name in names()]
