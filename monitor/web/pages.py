"""What each web page shows, read from the store: plain dicts, no HTTP and no HTML.

:mod:`monitor.web.app` renders these as pages and as the JSON API, so both always
show the same thing. Every read is bounded (a page of rows, a fixed number of
chart slices), so a page costs the same with a month of history as with a day.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from monitor.config import Config, ConfigHolder, Target
from monitor.core.audit import WebAction
from monitor.core.claims import suggestions
from monitor.core.incidents import Incident, Link
from monitor.core.outbox import Queued
from monitor.core.results import Seen, StoredResult
from monitor.core.runs import Run, Step
from monitor.core.state import WORST_FIRST, State, is_up, state_of
from monitor.core.urls import redact
from monitor.store import StoreView

WINDOWS = {"24h": 86400.0, "7d": 7 * 86400.0, "30d": 30 * 86400.0}
RECENT = 40  # checks drawn per target on the overview
PER_PAGE = 100  # targets on a page of the overview (and of /api/v1/targets unless limit says otherwise)
OPEN_SHOWN = 50  # open incidents listed above the overview's targets; /incidents?status=open has them all
# The overview's order: what needs looking at first (the states are monitor.core.state's).
RANK = {state: rank for rank, state in enumerate(WORST_FIRST)}
LEADING = 10  # checks shown before an incident opened
DURING = 50  # and after
SLICES = 120  # points of a history chart
RECALLED_ID = re.compile(r"^#(\d+) \[", re.MULTILINE)  # the recall template's line for each past incident


MAX_ID = 2**63 - 1  # the largest id a database holds: past it, nothing is there (SQLite would overflow)


@dataclass(frozen=True)
class Located:
    """The newest result from one location, and the target as seen from there: its state where it is up
    (up, warning), else ``down`` (enough locations agree) or ``path`` (a warning about that path)."""

    result: StoredResult
    verdict: str


class Pages:
    """The data behind each page. ``config`` names the targets and maintenance windows (a
    :class:`~monitor.config.ConfigHolder`: the one in force at each request); without targets in it,
    the targets are those with results in the database."""

    def __init__(self, store: StoreView, config: Config | ConfigHolder | None = None, *, clock: Callable[[], float] = time.time) -> None:
        self.store, self.clock = store, clock
        # the daemon's holder: every page reads the config in force, so the UI follows a reload at once
        self.holder = config if isinstance(config, ConfigHolder) else ConfigHolder(config or Config())
        self._by_name: tuple[Config | None, dict[str, Target]] = (None, {})

    @property
    def config(self) -> Config:
        return self.holder.current

    def _targets(self) -> dict[str, Target]:
        """The configured targets by name (built once per config: a fleet has thousands)."""
        if self._by_name[0] is not self.config:
            self._by_name = (self.config, {t.name: t for t in self.config.targets})
        return self._by_name[1]

    def target_names(self) -> list[str]:
        if self.config.targets:
            return list(self._targets())
        return self.store.results.target_names()

    def known(self, name: str) -> bool:
        if self.config.targets:
            return name in self._targets()
        return name in self.store.results.target_names()

    def configured(self, name: str) -> dict[str, Any] | None:
        """What the config says of a target (kind, address without secrets, interval), or None."""
        target = self._targets().get(name)
        if target is None:
            return None
        return {
            "kind": target.kind,
            "url": redact(target.url),
            "interval": target.interval,
            "timeout": target.timeout,
            "quorum": target.quorum,
        }

    def state(self, name: str, latest: Seen | None, now: float) -> State:
        """The target's state (:func:`monitor.core.state.state_of`) with the config's maintenance and staleness."""
        target = self._targets().get(name)
        stale_after = target.stale_after if target else None
        return state_of(latest, in_maintenance=self.config.in_maintenance(name, now), stale_after=stale_after, now=now)

    def target_row(self, name: str, now: float, *, recent: int = 0) -> dict[str, Any]:
        """A target's state, last check and uptime; with ``recent``, its last checks too."""
        latest = self.store.results.latest_result(name)
        row: dict[str, Any] = {
            "name": name,
            "config": self.configured(name),
            "state": self.state(name, latest, now),
            "latest": latest,
            "uptime": self.store.results.uptime(name, WINDOWS, now),
        }
        if recent:
            row["recent"] = self.store.results.results_page(name, limit=recent)
        return row

    def fleet(self, *, page: int = 1, per_page: int = PER_PAGE, q: str = "", recent: int = 0) -> dict[str, Any]:
        """One page of the targets whose name holds ``q`` (any case), problems first (``RANK``, then
        config order); ``counts`` are the whole fleet's. Only the page's targets are read in full: the
        rest cost one index seek each, for their state."""
        now = self.clock()
        names = self.target_names()
        newest = self.store.results.latest_states(names)
        states = {name: self.state(name, newest.get(name), now) for name in names}
        counts = {state: 0 for state in RANK}
        for state in states.values():
            counts[state] += 1
        needle = q.casefold()
        matched = sorted((n for n in names if needle in n.casefold()), key=lambda n: RANK[states[n]])
        shown = matched[(page - 1) * per_page : page * per_page]
        uptimes, latest = self.store.results.uptimes(shown, WINDOWS, now), self.store.results.latest_of(shown)
        rows = []
        for name in shown:
            row: dict[str, Any] = {
                "name": name,
                "config": self.configured(name),
                "state": states[name],
                "latest": latest.get(name),
                "uptime": uptimes[name],
            }
            if recent:
                row["recent"] = self.store.results.results_page(name, limit=recent)
            rows.append(row)
        return {
            "now": now,
            "targets": rows,
            "counts": counts,
            "total": len(names),
            "matched": len(matched),
            "page": page,
            "pages": max(1, math.ceil(len(matched) / per_page)),
            "per_page": per_page,
            "q": q,
        }

    def overview(self, *, page: int = 1, q: str = "") -> dict[str, Any]:
        """A page of the fleet with its last checks, under the newest open incidents (at most ``OPEN_SHOWN``)."""
        return {
            **self.fleet(page=page, q=q, recent=RECENT),
            "open_incidents": self.store.incidents.incidents_page(status="open", limit=OPEN_SHOWN),
            "open_count": self.store.incidents.count_open_incidents(),
        }

    def target(self, name: str, *, window: str = "24h", limit: int = 50, before: tuple[float, int] | None = None) -> dict[str, Any]:
        now = self.clock()
        since = now - WINDOWS[window]
        row = self.target_row(name, now)
        results = self.store.results.results_page(name, limit=limit + 1, before=before)
        return {
            **row,
            "now": now,
            "window": window,
            "since": since,
            "buckets": self.store.results.latency_buckets(name, since, now, SLICES),
            "slices": SLICES,
            "results": results[:limit],
            "more": len(results) > limit,
            "locations": self.locations(name, now),
            "incidents": self.store.incidents.incidents_page(target=name, limit=20),
            "window_incidents": self.store.incidents.incidents_page(target=name, limit=200, since=since),
        }

    def locations(self, name: str, now: float) -> list[Located]:
        """The newest result from each place the target was checked from lately, its state there (up, warning), or,
        where it was down: ``down`` when ``quorum.agree`` places (one without a quorum) found it down, else ``path``
        (a warning about that path)."""
        target = self._targets().get(name)
        rows = self.store.results.latest_by_location(name, now - 3 * (target.interval if target else 60) - 30)
        agree = target.quorum.agree if target is not None and target.quorum is not None else 1
        failing = sum(not is_up(row.severity) for row in rows)
        return [Located(row, state_of(row) if is_up(row.severity) else "down" if failing >= agree else "path") for row in rows]

    def incident(self, incident_id: int) -> dict[str, Any] | None:
        incident = self.store.incidents.incident(incident_id) if 0 < incident_id <= MAX_ID else None
        if incident is None:
            return None
        now = self.clock()
        target, opened = incident.target, incident.opened_at
        leading = list(reversed(self.store.results.results_page(target, limit=LEADING, before=(opened, 2**63 - 1))))
        during = self.store.results.results_between(target, opened + 1e-6, incident.closed_at or now, DURING)
        runs = list(reversed(self.store.runs.runs_page(incident_id=incident_id, limit=20)))
        notifications = [_notification(n) for n in self.store.outbox.notifications_for(incident_id)]
        recalled_ids = sorted(
            {int(i) for step in self.store.runs.recall_steps([r.id for r in runs]) for i in RECALLED_ID.findall(step.observations or "")}
            - {incident_id}
        )
        related = incident.related_incident
        actions = self.store.incidents.web_actions(incident_id)
        links = self.store.incidents.incident_links([incident_id])
        return {
            "incident": incident,
            "leading": leading,
            "during": during,
            "runs": runs,
            "actions": actions,
            "public_notes": self.store.public.public_notes([incident_id])[incident_id],
            "notifications": notifications,
            "recalled": self.store.incidents.incidents_by_id(recalled_ids),
            "related": self.store.incidents.incident(related) if related else None,
            "suggested": suggestions(incident.claim),
            "links": [{**asdict(link), "said": link.said(incident_id)} for link in links],
            "verdicts": {link.other: link.verdict for link in links if link.incident == incident_id},  # what people said of each
            "timeline": _timeline(incident, leading, during, notifications, runs, actions, links),
            "now": now,
        }

    def run(self, run_id: int) -> dict[str, Any] | None:
        run = self.store.runs.run(run_id) if 0 < run_id <= MAX_ID else None
        if run is None:
            return None
        steps = [_step(s) for s in self.store.runs.steps(run_id)]
        recall = next((s for s in steps if s["kind"] == "recall"), None)
        recalled_ids = [int(i) for i in RECALLED_ID.findall(recall["observations"] or "")] if recall else []
        return {
            "run": run,
            "steps": [s for s in steps if s["kind"] != "recall"],
            "recall": recall,
            "recalled": self.store.incidents.incidents_by_id(recalled_ids),
            "duration": (run.ended_at or self.clock()) - run.started_at,
        }

    def memory(self, *, window: str = "7d") -> dict[str, Any]:
        from monitor.memory import working as memory_module  # smolagents: only for this page
        from monitor.memory.exports import WORKING_MEMORY

        saved = self.store.memory.load_memory(WORKING_MEMORY)
        summaries = [s.get("text", "") for s in saved or [] if isinstance(s, dict) and s.get("type") == "summary"]
        now = self.clock()
        return {
            "report": memory_module.report(self.store),
            "summaries": summaries,
            "counts": self.store.incidents.incident_counts(),
            "notes": self.store.incidents.resolution_notes(),
            "samples": self.store.memory.memory_samples(now - WINDOWS[window]),
            "window": window,
            "now": now,
        }


def _notification(row: Queued) -> dict[str, Any]:
    """An outbox row as people read it: to whom, what, and what became of it."""
    try:
        payload = json.loads(row.payload)
    except ValueError:
        payload = {}
    event = payload.get("event") if isinstance(payload, dict) else None
    if event is None and isinstance(payload, dict) and payload.get("alerts"):
        ends = payload["alerts"][0].get("endsAt")
        event = "firing" if not ends or ends > time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) else "resolved"
    if event is None and isinstance(payload, dict) and payload.get("title"):
        event = payload["title"]
    outcome = (
        "delivered"
        if row.delivered_at
        else "dropped: " + (row.last_error or "")
        if row.dropped_at
        else "pending" + (f" (last error: {row.last_error})" if row.last_error else "")
    )
    return {
        "id": row.id,
        "receiver": row.receiver,
        "event": event or "notification",
        "queued_at": row.created_at,
        "delivered_at": row.delivered_at,
        "dropped_at": row.dropped_at,
        "attempts": row.attempts,
        "outcome": outcome,
    }


def _step(step: Step) -> dict[str, Any]:
    """A step as its page shows it: its row, and the tools it called in words (``calls``)."""
    try:
        calls = json.loads(step.tool_calls or "[]")
    except ValueError:
        calls = [{"name": "?", "arguments": step.tool_calls}]
    return {
        **step.to_json(),
        "calls": [{"name": str(c.get("name")), "arguments": _arguments(c.get("arguments"))} for c in calls if isinstance(c, dict)],
    }


def _arguments(arguments: Any) -> str:
    if isinstance(arguments, dict):
        return ", ".join(f"{k}={v!r}" for k, v in arguments.items())
    return "" if arguments is None else repr(arguments)


def _timeline(
    incident: Incident,
    leading: list[StoredResult],
    during: list[StoredResult],
    notifications: list[dict[str, Any]],
    runs: list[Run],
    actions: list[WebAction] | None = None,
    links: list[Link] | None = None,
) -> list[dict[str, Any]]:
    """Everything that happened to the incident, oldest first: checks, detection, alerts, agent runs, what people
    did and said of it, resolution."""
    events = [_checks_event(group) for group in _runs_of_checks(leading) + _runs_of_checks(during)]  # split at opening
    detector = f"detector {incident.pattern} fired ({incident.severity})"
    events.append(_event(incident.opened_at, "detected", detector, incident.summary or ""))
    for n in notifications:
        title, text = f"{n['event']} → {n['receiver']}", f"{n['outcome']}, {n['attempts']} attempt(s)"
        events.append(_event(n["queued_at"], "alert", title, text))
    events += [_run_event(run) for run in runs]
    for action in actions or []:
        if action.ok:
            title = f"{action.action} in the web UI (from {action.client or 'unknown'}): {action.detail}"
            events.append(_event(action.at, "action", title, action.note or ""))
    events += [
        _event(link.at, "link", link.said(incident.id), "", other=link.other if link.incident == incident.id else link.incident)
        for link in links or []
    ]
    if incident.closed_at:
        events.append(_event(incident.closed_at, "resolved", "resolved", incident.resolution or ""))
    return sorted(events, key=lambda e: e["at"])


def _event(at: float, kind: str, title: str, text: str, **more: Any) -> dict[str, Any]:
    return {"at": at, "kind": kind, "title": title, "text": text, **more}


def _checks_event(group: list[StoredResult]) -> dict[str, Any]:
    """One timeline entry for consecutive checks with the same outcome."""
    first, count = group[0], len(group)
    verdict = f"{count} checks" if count > 1 else "check"
    title = f"{verdict} {'passed' if first.ok else 'failed'}: {first.error or first.severity} {first.status_code or ''}"
    latency = max(r.latency_ms or 0 for r in group)
    return _event(
        first.checked_at,
        "check",
        title.strip(),
        first.detail or "",
        ok=bool(first.ok),
        count=count,
        latency_ms=latency,
        until=group[-1].checked_at,
    )


def _run_event(run: Run) -> dict[str, Any]:
    """One timeline entry for an agent run: its diagnosis, else its answer or error."""
    diagnosis = (
        f"{run.root_cause} ({run.confidence} confidence): {run.diagnosis or ''}"
        if run.root_cause
        else run.final_answer or run.error or "no diagnosis recorded"
    )
    return _event(run.started_at, "agent", f"agent run #{run.id} {run.state}", diagnosis, run=run.id)


def _runs_of_checks(results: list[StoredResult]) -> list[list[StoredResult]]:
    """Consecutive checks with the same outcome (passed or failed, error kind, status), as one group each."""
    groups: list[list[StoredResult]] = []
    for result in results:
        key = (result.ok, result.error, result.status_code)
        if groups and (groups[-1][0].ok, groups[-1][0].error, groups[-1][0].status_code) == key:
            groups[-1].append(result)
        else:
            groups.append([result])
    return groups
