"""A tool over the fleet's graph: what a target depends on, who else does, and how each of them is now."""

from __future__ import annotations

from monitor.agent.tools.base import TargetTool, format_incident, one_line
from monitor.core.incidents import Incident
from monitor.core.results import StoredResult
from monitor.memory import graph

PAST = 3  # past incidents of other targets shown through shared components


class Neighbours(TargetTool):
    name = "neighbours"
    description = (
        "Show what a target depends on (databases, caches, upstreams: configured, named in its answers, or "
        "failing together with it) and the other targets that share them, each with its current state "
        "and open incident, plus past incidents of those targets through the shared component. Use it to "
        "see whether a shared component is failing for others too."
    )

    def about(self, name: str) -> str:
        target = self.target(name).name
        store = self.box.store
        evidence = self.box.evidence_text() if target == self.box.focus else ""
        components = graph.components_of(store, target, evidence)
        linked = graph.neighbours(store, target, evidence)
        states = self._states([n.target for n in linked])
        lines = [
            f"{target} depends on {len(components)} known component(s)"
            + (":" if components else " (none configured with depends_on, named in its answers, or failing together with it)")
        ]
        for component in components:
            lines += self._component(component, [n for n in linked if n.component == component.name], states)
        dependants = [
            n for n in linked if n.relation == "depends" or (n.relation == "shares" and n.component not in {c.name for c in components})
        ]
        if dependants:
            lines.append(
                "targets that depend on "
                + target
                + " or share its host: "
                + "; ".join(f"{n.target} {states[n.target]}" for n in dependants)
            )
        lines += self._past(target, evidence)
        return "\n".join(lines)

    def _component(self, component: graph.Component, linked: list[graph.Neighbour], states: dict[str, str]) -> list[str]:
        """A component's lines: where it is known from, the target checking it, the other targets using it."""
        sources = ", ".join(dict.fromkeys(component.sources))
        itself = [n for n in linked if n.relation == "is"]
        others = [n for n in linked if n.relation == "shares"]
        checked = "; ".join(f"its own check is target {n.target}: {states[n.target]}" for n in itself) or "no target checks it"
        shared = "; ".join(f"{n.target} {states[n.target]}" for n in others) or "no other target"
        return [f"- {component.name} ({sources}, seen {component.weight}x): {checked}", f"  also used by: {shared}"]

    def _states(self, targets: list[str]) -> dict[str, str]:
        """Each target's state now: its latest result, and its open incident."""
        store = self.box.store
        latest = store.results.latest_of(sorted(set(targets))) if targets else {}
        states = {}
        for target in set(targets):
            states[target] = self._state(latest.get(target), store.incidents.open_incidents(target))
        return states

    def _state(self, row: StoredResult | None, open_incidents: list[Incident]) -> str:
        if row is None:
            state = "(no check result yet)"
        else:
            ago = max(0.0, self.box.store.clock() - float(row.checked_at))
            word = "OK" if row.ok else ("WARNING" if row.severity == "warning" else "FAILING")
            error = f" {row.error}: {one_line(row.detail or '', 120)}" if not row.ok else ""
            state = f"({word}{error}, checked {ago:.0f} s ago"
            state += ")" if not open_incidents else f", open incident #{open_incidents[-1].id})"
        return state

    def _past(self, target: str, evidence: str) -> list[str]:
        """Past incidents of other targets through a shared component; the model may name them afterwards."""
        recalled = graph.incidents_via_components(self.box.store, target, evidence, PAST, exclude=self.box.incident_id)
        if not recalled:
            return []
        lines = ["past incidents of other targets through a shared component:"]
        lines += [f"- {format_incident(r.incident)} | {r.mark()}" for r in recalled]
        text = "\n".join(lines)
        self.box.saw(text)
        return lines
