"""What each MCP tool answers, read from the store: plain dicts, the same data as the web API.

:class:`Answers` reads through :class:`monitor.web.pages.Pages`, so a target's state is the one
:mod:`monitor.core.state` gives every channel, and an incident's diagnosis says its asserted and suggested
past incidents in the words every channel uses (:mod:`monitor.incidents.diagnosis`). Nothing here changes an
incident; recall keeps the vectors it embeds on its way, as an investigation's recall does.
Every answer leaves redacted (:func:`monitor.core.urls.redacted`), in :mod:`monitor.mcp.server`.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from monitor.config import Config, parse_duration
from monitor.core.claims import Claim
from monitor.core.incidents import Incident
from monitor.incidents.diagnosis import Diagnosis
from monitor.store import StoreView
from monitor.web.pages import MAX_ID, Pages
from monitor.web.routes.api import result_json, target_json

MAX_ROWS = 200  # rows one answer holds at most: a page of them, and the next page's cursor
MAX_PAGE = 1_000_000  # pages of targets: far past any fleet
MAX_K = 10  # past incidents recall names at most
STATUSES = ("open", "resolved", "all")


# The past incidents like an incident, at most k of them: :func:`monitor.mcp.likeness.like`.
Like = Callable[[Incident, int], dict[str, Any]]


class NotFound(LookupError):
    """A target or an incident the store does not hold: the tool answers with an error the client reads."""


class Answers:
    """The read side of the MCP tools over one store's read-only parts and a config; ``clock`` for the states' "now";
    ``like``: the past incidents like an incident (:func:`monitor.mcp.likeness.like` over the store, which recall by
    meaning indexes as it goes; default: none recalled)."""

    def __init__(self, store: StoreView, config: Config, *, like: Like | None = None, clock: Callable[[], float] = time.time) -> None:
        self.store, self.config, self.like = store, config, like
        self.pages = Pages(store, config, clock=clock)

    def targets(self, *, query: str = "", page: int = 1, limit: int = 100) -> dict[str, Any]:
        """A page of targets with their state, problems first; ``counts`` are the whole fleet's."""
        data = self.pages.fleet(page=within("page", page, 1, MAX_PAGE), per_page=bounded(limit), q=query)
        shown = {k: data[k] for k in ("page", "pages", "total", "matched", "counts")}
        return {"items": [target_json(row) for row in data["targets"]], **shown}

    def target(self, name: str) -> dict[str, Any]:
        """One target's state, last check, uptime and open incidents."""
        self.known(name)
        row = self.pages.target_row(name, self.pages.clock())
        return {**target_json(row), "open_incidents": [i.to_json() for i in self.store.incidents.open_incidents(name)]}

    def results(self, name: str, *, limit: int = 20) -> dict[str, Any]:
        """A target's newest check results, newest first."""
        self.known(name)
        return {"target": name, "items": [result_json(r) for r in self.store.results.results_page(name, limit=bounded(limit))]}

    def incidents(self, *, status: str = "open", target: str | None = None, limit: int = 50, before: int | None = None) -> dict[str, Any]:
        """Incidents newest first (open, resolved or all), with ids below ``before``; ``next`` is the next page's."""
        if status not in STATUSES:
            raise ValueError(f"status {status[:20]!r}: one of {', '.join(STATUSES)}")
        limit = bounded(limit)
        before = None if before is None else within("before", before, 1, MAX_ID)
        rows = self.store.incidents.incidents_page(
            target=target or None, status=None if status == "all" else status, limit=limit, before=before
        )
        return {"items": [row.to_json() for row in rows], "next": rows[-1].id if len(rows) == limit else None}

    def incident(self, incident_id: int) -> dict[str, Any]:
        """One incident in full: its diagnosis (asserted and suggested past incidents), its fix and its timeline."""
        data = self.pages.incident(within("id", incident_id, 1, MAX_ID))
        if data is None:
            raise NotFound(f"no incident #{incident_id}")
        incident = data["incident"]
        diagnosis = Diagnosis.of(incident, self.store)
        return {
            **{k: v for k, v in incident.to_json().items() if k != "claim"},
            "diagnosis": diagnosis.to_dict() if diagnosis is not None else None,
            "claim": said.to_dict() if (said := Claim.from_json(incident.claim)) else {},
            "fix": incident.resolution,
            "links": data["links"],  # what people said of it and past incidents
            "timeline": data["timeline"],
            "runs": [{k: run.to_json()[k] for k in ("id", "state", "root_cause", "confidence", "started_at")} for run in data["runs"]],
        }

    def recall(self, incident_id: int, *, k: int = 5) -> dict[str, Any]:
        """The past incidents like this one, asserted or suggested as every channel says them (:mod:`.likeness`)."""
        incident = self.store.incidents.incident(within("id", incident_id, 1, MAX_ID))
        if incident is None:
            raise NotFound(f"no incident #{incident_id}")
        if self.like is None:
            raise NotFound(f"no past incident is recalled here for #{incident_id}")
        return self.like(incident, within("k", k, 1, MAX_K))

    def review(self, *, since: str = "7d") -> dict[str, Any]:
        """``monitor review``'s findings and its builtin review over the history since ``since`` ago."""
        from monitor.memory import review as reviewing

        found = reviewing.findings(self.store, self.pages.clock() - parse_duration(since))
        return {"model": "builtin", "review": reviewing.written(found), **dataclasses.asdict(found)}

    def known(self, name: str) -> None:
        if not self.pages.known(name):
            raise NotFound(f"no target {name[:100]!r}")


def bounded(limit: int) -> int:
    """``limit`` checked: rows from 1 to :data:`MAX_ROWS`."""
    return within("limit", limit, 1, MAX_ROWS)


def within(name: str, value: int, low: int, high: int) -> int:
    """``value`` if it lies from ``low`` to ``high``; else a ValueError naming the argument and its range."""
    if not low <= value <= high:
        shown = str(value) if -(10**20) < value < 10**20 else "a number of that size"
        raise ValueError(f"{name}: a whole number from {low:,} to {high:,}, not {shown}")
    return value
