"""A knowledge graph of the fleet: what each target depends on, who else does, and past incidents found
through what they share.

An edge goes from a target to a component (another target, or a name no target checks, like ``pg-main``).
Edges come from four sources::

    address      what a target is: its name and its host (``tcp://pg-main.db.internal:5432`` is pg-main)
    config       a target's ``depends_on:``
    answered     a component named in what the target answered when one of its incidents opened
                 (``connection to server at "pg-main.db.internal"``, ``upstream: "http://orders_backend"``);
                 the incident keeps the names too
    co-occurred  targets whose incidents opened within ``TOGETHER`` seconds of each other, each to the
                 other; it counts from the ``CO_OCCURRED`` th time, so that one coincidence links nothing

Components are named as :mod:`monitor.memory.components` reads them. The daemon calls :func:`sync_config`
at start and at each reload, and :func:`learn_opened` when an incident opens (never per check).

Reading it::

    components_of(store, target, evidence="") -> list[Component]       what target depends on
    neighbours(store, target, evidence="") -> list[Neighbour]          targets that share a component with it
    incidents_via_components(store, target, evidence="", k=5, exclude=None) -> list[Recalled]

:func:`incidents_via_components` is recall across targets: past incidents of OTHER targets that share a
component with ``target`` or with what ``evidence`` (the latest failing answer) names, best first:

1. ``answered``: the other target's own answer named the component when that incident opened;
2. ``named``: the incident's text (summary, diagnosis, cause, resolution, notes) names it, as a whole name;
3. ``neighbour``: an incident of a target that shares a component by config, answer or co-occurrence.

Within a tier incidents with a resolution come first, then the newest. Each :class:`Recalled` says which
component it shares and how (:meth:`Recalled.mark`), so a diagnosis can say "like #3 on invoices, which
shares pg-main".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from monitor.config import Config, Target
from monitor.core.incidents import Incident
from monitor.memory.components import canonical, extract, is_address, matchable, named_in
from monitor.store import Store
from monitor.store.graph import Edge, GraphReader

TOGETHER = 120.0  # seconds between two incidents' openings that count as opening together
BURST = 12  # more targets than this opening together is an outage of the network, or of monitor: it links nothing
CO_OCCURRED = 2  # times two targets must open incidents together before they count as neighbours
MAX_NEIGHBOURS = 30
TIERS = ("answered", "named", "neighbour")
SOURCES = ("config", "answered", "co-occurred", "evidence")


class GraphStore(Protocol):
    """What reading the graph needs of a store: its graph's reads (a store, or its read-only parts)."""

    @property
    def graph(self) -> GraphReader: ...


@dataclass(frozen=True)
class Component:
    """A component a target depends on: its name, where that is known from, and how often it was seen."""

    name: str
    sources: tuple[str, ...]  # config, answered, co-occurred, evidence
    weight: int


@dataclass(frozen=True)
class Neighbour:
    """Another target linked to this one through ``component``.

    ``relation`` is ``is`` (the neighbour is the component: its name or its host), ``shares`` (it depends
    on the component too), or ``depends`` (``component`` is this target: the neighbour depends on it).
    """

    target: str
    component: str
    relation: str
    source: str  # the source of the neighbour's edge


@dataclass(frozen=True)
class Recalled:
    """A past incident of another target, found through a shared component."""

    incident: Incident
    component: str
    how: str  # answered | named | neighbour (TIERS)

    def mark(self) -> str:
        """How it is related, for the model and for people: ``shares pg-main with orders (...)``."""
        why = {
            "answered": "its check's answer named it when it opened",
            "named": "its text names it",
            "neighbour": f"{self.incident.target} depends on it too",
        }[self.how]
        return f"via shared component {self.component}: {why}"


def address_of(target: Target) -> list[str]:
    """What a target is: its name, and the canonical name of the host it checks (none for loopback)."""
    names = [target.name]
    host: str | None = None
    if target.kind in ("http", "tcp", "tls"):
        host = urlsplit(target.url).hostname
    elif target.kind == "dns":  # dns:NAME/TYPE: the name it looks up
        host = target.url.split(":", 1)[1].split("/")[0]
    for name in (canonical(target.name), canonical(host) if host else None):
        if name and name not in names:
            names.append(name)
    return names


def configured_edges(config: Config) -> list[Edge]:
    """The ``address`` and ``config`` edges of every target of ``config``."""
    names = {t.name for t in config.targets}
    edges: list[Edge] = []
    for target in config.targets:
        edges += [(target.name, name, "address") for name in address_of(target)]
        for wanted in target.depends_on:
            component = wanted if wanted in names else canonical(wanted)
            if component and component != target.name:
                edges.append((target.name, component, "config"))
    return edges


def sync_config(store: Store, config: Config) -> None:
    """Make the stored ``address`` and ``config`` edges those of ``config`` (at start, at each reload)."""
    store.graph.replace_configured_edges(configured_edges(config))


def learn_opened(store: Store, incident: Incident, evidence: str) -> list[str]:
    """Learn from an incident that just opened: the components ``evidence`` (what its target answered) names,
    and the targets whose incidents opened with it. Returns the components named."""
    target = incident.target
    own = {row["component"] for row in store.graph.edges_from([target]) if row["source"] == "address"} | {target}
    named = [name for name in extract(evidence) if name not in own]
    if named:
        store.graph.add_edges([(target, name, "answered") for name in named])
        store.graph.mention(incident.id, named)
    opened = float(incident.opened_at)
    near = store.graph.opened_between(opened - TOGETHER, opened, BURST + 2)
    others = list(dict.fromkeys(row.target for row in near if row.target != target))
    if others and len(others) <= BURST:
        store.graph.add_edges([edge for other in others for edge in ((target, other, "co-occurred"), (other, target, "co-occurred"))])
    return named


def _counts(row: dict[str, Any]) -> bool:
    """Whether an edge links anything yet: a co-occurrence only once it happened ``CO_OCCURRED`` times."""
    return row["source"] != "co-occurred" or int(row["weight"]) >= CO_OCCURRED


def components_of(store: GraphStore, target: str, evidence: str = "") -> list[Component]:
    """What ``target`` depends on: its stored edges (but what it is), and what ``evidence`` names."""
    found: dict[str, tuple[list[str], int]] = {}
    edges = store.graph.edges_from([target])
    own = {row["component"] for row in edges if row["source"] == "address"} | {target}
    for row in edges:
        if row["source"] != "address" and _counts(row):
            sources, weight = found.setdefault(row["component"], ([], 0))
            found[row["component"]] = (sources + [row["source"]], weight + int(row["weight"]))
    for name in extract(evidence):
        if name not in own:
            sources, weight = found.setdefault(name, ([], 0))
            found[name] = (sources + ["evidence"], weight + 1)
    components = [Component(name, tuple(sorted(set(sources), key=SOURCES.index)), weight) for name, (sources, weight) in found.items()]
    return sorted(components, key=lambda c: (-c.weight, is_address(c.name)))  # a name says more than an address


def neighbours(store: GraphStore, target: str, evidence: str = "", *, components: list[Component] | None = None) -> list[Neighbour]:
    """Targets linked to ``target`` through a component: those that are one of its components, those that
    depend on the same ones, and those that depend on ``target`` itself (or on its host). ``components``:
    ``components_of(store, target, evidence)``, when the caller has it already."""
    wanted = [c.name for c in (components_of(store, target, evidence) if components is None else components)]
    own = [row["component"] for row in store.graph.edges_from([target]) if row["source"] == "address"] or [target]
    rank = {"is": 0, "depends": 1, "shares": 2}
    found: dict[tuple[str, str], Neighbour] = {}
    for row in store.graph.edges_to(wanted + own):
        if row["target"] == target or not _counts(row):
            continue
        neighbour = _relation(row, set(wanted), set(own))
        if neighbour is None:
            continue
        key = (neighbour.target, neighbour.component)
        if key not in found or rank[neighbour.relation] < rank[found[key].relation]:
            found[key] = neighbour
    ordered = sorted(
        found.values(), key=lambda n: (rank[n.relation], wanted.index(n.component) if n.component in wanted else len(wanted), n.target)
    )
    return ordered[:MAX_NEIGHBOURS]


def _relation(row: dict[str, Any], wanted: set[str], own: set[str]) -> Neighbour | None:
    """What an edge of another target to one of ours says about that target."""
    other, component, source = row["target"], row["component"], row["source"]
    if component in wanted:
        return Neighbour(other, component, "is" if source == "address" else "shares", source)
    if source == "co-occurred":  # the other half of ours, to its name: it is that component
        return Neighbour(other, other, "is", source) if other in wanted else None
    return Neighbour(other, component, "shares" if source == "address" else "depends", source)


def incidents_via_components(store: GraphStore, target: str, evidence: str = "", k: int = 5, exclude: int | None = None) -> list[Recalled]:
    """Past incidents of other targets that share a component with ``target`` or ``evidence``: see the
    module docstring for the order. ``exclude`` is the incident under investigation."""
    components = components_of(store, target, evidence)
    names = [c.name for c in components]
    if not names or k <= 0:
        return []
    found: dict[int, Recalled] = {}
    for incident, component in sorted(
        store.graph.incidents_mentioning(names, besides=target, exclude=exclude, limit=k * len(names)),
        key=lambda pair: names.index(pair[1]),
    ):  # the component the evidence named first
        found.setdefault(incident.id, Recalled(incident, component, "answered"))
    searchable = [name for name in names if matchable(name)]
    for incident in store.graph.incidents_naming(searchable, besides=target, exclude=exclude, limit=4 * k):
        name = named_in(" ".join(str(getattr(incident, c) or "") for c in TEXT), searchable)
        if name is not None:
            found.setdefault(incident.id, Recalled(incident, name, "named"))
    through = {n.target: n.component for n in neighbours(store, target, evidence, components=components)}
    if through:
        for incident in store.graph.incidents_of(list(through), exclude=exclude, limit=k):
            found.setdefault(incident.id, Recalled(incident, through[incident.target], "neighbour"))
    ordered = sorted(found.values(), key=lambda r: (TIERS.index(r.how), not _fixed(r.incident), -r.incident.id))
    return ordered[:k]


TEXT = ("summary", "diagnosis", "suspected_cause", "resolution", "notes")


def _fixed(incident: Incident) -> bool:
    return bool((incident.resolution or "").strip())
