"""Check kinds, as each declares itself: the one registry the config, the checker, ``/probe`` and the metrics read.

A kind is one module. It declares what the rest of monitor knows of it, and the check that runs its targets::

    KIND = kinds.declare(kinds.Kind(
        "icmp",
        schemes=("icmp",),               # icmp://host names an icmp target
        settings=IcmpSettings,           # the model of a target's ``icmp:`` section (a pydantic model)
        address=icmp_host,               # checks an address of the kind; a ValueError says what is wrong
        host=icmp_host,                  # the component an address names (the host it reaches)
        errors={"icmp_no_reply": "no echo reply to any request", ...},
        probe=kinds.Probe("icmp://probe.invalid", series=(kinds.Series(...),)),
        check=Icmp,                      # Icmp(context) checks a target of the kind (monitor.checks.registry)
    ))

and names its module in the ``monitor.kinds`` entry point group of its distribution, as monitor does for its own
six (``pyproject.toml``)::

    [project.entry-points."monitor.kinds"]
    icmp = "monitor.checks.icmp"

Why here: the config validates a target's kind, address and settings, and may not import the checks (they sit
above it), so the declarations are kept at the bottom, in the standard library's terms, where every layer may read
them; which module declares a kind is said by the installed distributions' metadata, above every layer, never by a
module path in the code. The built-in kinds' names and schemes are in :data:`BUILTIN`, so reading an address or a
kind's name loads nothing; the first question about a kind's settings, address, probe or check loads its entry
point (a config of http targets never loads dnspython or icmplib), a plugin's as a built-in's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from monitor.core import plugins

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

GROUP = plugins.KINDS  # the entry point group a distribution names its kinds' modules in
DISTRIBUTION = plugins.DISTRIBUTION  # monitor's own, which names the built-in kinds
# The built-in kinds and the schemes of their addresses; their modules are monitor's own entry points.
BUILTIN: dict[str, tuple[str, ...]] = {
    "http": ("http", "https"),
    "tcp": ("tcp",),
    "tls": ("tls",),
    "dns": ("dns",),
    "icmp": ("icmp",),
    "heartbeat": ("heartbeat",),
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
    # what checks a target of the kind: ``check(context)`` (:data:`monitor.checks.registry.Factory`); None for a kind
    # only declared (a test's)
    check: Callable[[Any], Any] | None = None


_DECLARED: dict[str, Kind] = {}


def entry_point_table() -> dict[str, EntryPoint]:
    """The installed distributions' kinds by name; a built-in kind's is monitor's own, whoever else names it."""
    return plugins.table(GROUP, tuple(BUILTIN))


rescan = plugins.rescan  # read the installed distributions' entry points again


def declare(kind: Kind) -> Kind:
    """Make ``kind`` known by its name and schemes; declaring the same kind again is fine, another is refused."""
    known = _DECLARED.get(kind.name)
    if known is not None and known != kind:
        raise ValueError(f"check kind {kind.name!r} is already declared")
    taken = {scheme: name for name in [*BUILTIN, *_DECLARED] if name != kind.name for scheme in schemes_of(name)}
    clash = [scheme for scheme in kind.schemes if scheme in taken]
    if clash:
        raise ValueError(f"check kind {kind.name!r}: scheme {clash[0]!r} is {taken[clash[0]]!r}'s")
    _DECLARED[kind.name] = kind
    return kind


def forget(name: str) -> None:
    """Undeclare a kind that is not built in (a test's)."""
    if name not in BUILTIN:
        _DECLARED.pop(name, None)


def declared(name: str) -> bool:
    """Whether kind ``name`` is declared (its module loaded)."""
    return name in _DECLARED


def known(name: object) -> bool:
    """Whether ``name`` is a kind, without loading any."""
    return isinstance(name, str) and (name in BUILTIN or name in _DECLARED or name in entry_point_table())


def names() -> list[str]:
    """Every kind: the built-in ones in their order, then the declared and the installed ones."""
    return list(dict.fromkeys([*BUILTIN, *_DECLARED, *entry_point_table()]))


def schemes_of(name: str) -> tuple[str, ...]:
    """The schemes of kind ``name``'s addresses (an installed plugin's kind is loaded to ask)."""
    return BUILTIN[name] if name in BUILTIN else get(name).schemes


def by_scheme(scheme: str) -> str | None:
    """The kind whose addresses start ``scheme:`` (``https`` -> http), or None; a scheme no built-in kind has is
    looked for among the installed kinds, each loaded to ask."""
    scheme = scheme.lower()
    near = next((name for name in [*BUILTIN, *_DECLARED] if scheme in schemes_of(name)), None)
    if near is not None:  # found reading no package metadata
        return near
    return next((name for name in entry_point_table() if scheme in schemes_of(name)), None)


def get(name: str) -> Kind:
    """The declaration of kind ``name``, its entry point loaded on first ask. KeyError if there is none."""
    if name not in _DECLARED and (point := entry_point_table().get(name)) is not None:
        loaded = point.load()  # a module declares itself; ``module:KIND`` names its declaration
        if isinstance(loaded, Kind) and loaded.name == name:
            declare(loaded)
        if name not in _DECLARED:
            raise ValueError(f"entry point {point.value!r} of {GROUP} declares no check kind {name!r}")
    if name not in _DECLARED and name in BUILTIN:
        raise plugins.missing(GROUP, name)
    return _DECLARED[name]


def loaded() -> list[Kind]:
    """Every kind's declaration, every installed one loaded (for listing what all kinds have, e.g. probers; for
    the fork server, which loads every kind before it forks a worker)."""
    return [get(name) for name in names()]
