"""``monitor review``: the monitoring history read back, by a second agent or by rules.

:func:`findings` computes, from incidents alone, what a review must say:

* **recurring failures**: a target failing more than once with the same cause (root cause, else pattern);
* **fixes that did not hold**: an incident resolved with a note, then a later incident of the same target
  and cause, opened within the review's window;
* **co-occurring targets**: incidents of two targets opened within ``together`` seconds of each other more
  often than chance would have it for targets failing independently (:func:`chance`), as a typed list
  (:class:`CoOccurrence`) that the knowledge graph records as edges. Two targets that each fail a few times an
  hour share a few windows a day by chance alone: that is no finding.

On the builtin model the review is :func:`written` from these, deterministically. With a model, the
history goes to it as smolagents messages (:func:`messages`: the reviewer's system prompt, then one task
holding a line per incident and the computed facts) and its answer is the review: one small call.
"""

from __future__ import annotations

import functools
import math
import time
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol

import yaml
from smolagents.agents import populate_template
from smolagents.memory import TaskStep
from smolagents.models import ChatMessage

from monitor.core.incidents import Occurrence
from monitor.memory import transcripts
from monitor.store import StoreView

TOGETHER = 600.0  # seconds between two targets' incidents for them to count as co-occurring
ALPHA = 0.05  # how unlikely, by chance, the co-occurrences a review lists are, all pairs tested together
INCIDENT_LINES = 200  # incidents a model reads, the newest; the facts cover all of them
DATE = "%Y-%m-%d %H:%M"


@dataclass(frozen=True)
class Recurring:
    target: str
    cause: str
    incidents: tuple[int, ...]
    first: float
    last: float


@dataclass(frozen=True)
class NotHeld:
    """A fix that did not hold: ``fixed`` was resolved with ``resolution``, then ``again`` failed the same way."""

    target: str
    cause: str
    fixed: int
    resolution: str
    closed_at: float
    again: int
    reopened_at: float


@dataclass(frozen=True)
class CoOccurrence:
    """Two targets whose incidents opened together: ``pairs`` holds the incident ids, ``first``'s first."""

    first: str
    second: str
    pairs: tuple[tuple[int, int], ...]

    @property
    def together(self) -> int:
        return len(self.pairs)


@dataclass
class Findings:
    start: float
    end: float
    incidents: int
    runs: int
    recurring: list[Recurring] = field(default_factory=list)
    not_held: list[NotHeld] = field(default_factory=list)
    co_occurring: list[CoOccurrence] = field(default_factory=list)


def recurring(incidents: list[Occurrence]) -> list[Recurring]:
    groups: dict[tuple[str, str], list[Occurrence]] = {}
    for incident in incidents:
        groups.setdefault((incident.target, incident.cause), []).append(incident)
    found = [
        Recurring(target, cause, tuple(i.id for i in rows), rows[0].opened_at, rows[-1].opened_at)
        for (target, cause), rows in groups.items()
        if len(rows) > 1
    ]
    return sorted(found, key=lambda r: (-len(r.incidents), r.target, r.cause))


def not_held(incidents: list[Occurrence], fixes: list[Occurrence]) -> list[NotHeld]:
    """For each fix (closed), the first incident in ``incidents`` of its target and cause opened after it closed."""
    found = []
    for fix in fixes:
        closed = fix.closed_at
        if closed is None:
            continue
        same = (i for i in incidents if i.target == fix.target and i.cause == fix.cause and i.opened_at >= closed and i.id != fix.id)
        if (again := next(same, None)) is not None:
            found.append(NotHeld(fix.target, fix.cause, fix.id, fix.resolution or "", closed, again.id, again.opened_at))
    return found


def co_occurring(incidents: list[Occurrence], together: float = TOGETHER, *, span: float | None = None) -> list[CoOccurrence]:
    """Pairs of targets with incidents opened within ``together`` seconds more often than chance would have them
    (``incidents`` oldest first, seen over ``span`` seconds: by default, from the first to the last). A pair is
    listed when targets failing independently would co-occur as often with a chance of at most ``ALPHA``
    shared among the pairs tested (Bonferroni)."""
    pairs: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for n, incident in enumerate(incidents):
        for later in incidents[n + 1 :]:
            if later.opened_at - incident.opened_at > together:
                break
            if later.target != incident.target:
                a, b = sorted((incident, later), key=lambda i: i.target)
                pairs.setdefault((a.target, b.target), []).append((a.id, b.id))
    if span is None:
        span = incidents[-1].opened_at - incidents[0].opened_at if incidents else 0.0
    counts, span = Counter(i.target for i in incidents), max(span, 2 * together)
    found = [
        CoOccurrence(a, b, tuple(both))
        for (a, b), both in pairs.items()
        if chance(len(both), counts[a] * counts[b] * 2 * together / span) <= ALPHA / len(pairs)
    ]
    return sorted(found, key=lambda c: (-c.together, c.first, c.second))


def chance(times: int, expected: float) -> float:
    """How likely independent targets are to co-occur ``times`` or more, ``expected`` times on average (a Poisson
    tail): each of ``a``'s incidents has ``b``'s in its window with chance ``2 x together / span``."""
    term = total = math.exp(-expected)
    for k in range(1, times):
        term *= expected / k
        total += term
    return max(0.0, 1.0 - total)


def findings(store: StoreView, since: float, *, now: float | None = None, together: float = TOGETHER) -> Findings:
    """What a review of the incidents opened since ``since`` must say (fixes may be older)."""
    end = store.clock() if now is None else now
    incidents = [i for i in store.importance.incident_history(since) if i.opened_at >= since]
    fixes = [i for i in store.importance.incident_history(0.0, noted=True) if i.closed_at is not None]
    runs = len(store.runs.runs_started(since))
    span = end - max(since, incidents[0].opened_at) if incidents else 0.0
    return Findings(
        since, end, len(incidents), runs, recurring(incidents), not_held(incidents, fixes), co_occurring(incidents, together, span=span)
    )


def day(at: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(at))


def ids(numbers: tuple[int, ...], limit: int = 8) -> str:
    shown = ", ".join(f"#{n}" for n in numbers[:limit])
    return shown + (f" and {len(numbers) - limit} more" if len(numbers) > limit else "")


def after(seconds: float) -> str:
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} seconds"


def facts(found: Findings) -> list[str]:
    """The findings, one line each."""
    lines = [
        f"recurring: {r.target} {r.cause}, {len(r.incidents)} incidents ({ids(r.incidents)}), {day(r.first)} to {day(r.last)}"
        for r in found.recurring
    ]
    lines += [
        f"did not hold: #{n.fixed} {n.target} {n.cause} resolved ({n.resolution.strip()[:120]}), "
        f"failed again as #{n.again} {after(n.reopened_at - n.closed_at)} later"
        for n in found.not_held
    ]
    lines += [
        f"together: {c.first} and {c.second}, {c.together} time{'' if c.together == 1 else 's'} "
        f"({', '.join(f'#{a}/#{b}' for a, b in c.pairs[:5])})"
        for c in found.co_occurring
    ]
    return lines


def written(found: Findings) -> str:
    """The builtin review: the findings in three sections."""
    sections = [
        ("Recurring failures", [f for f in facts(found) if f.startswith("recurring: ")]),
        ("Fixes that did not hold", [f for f in facts(found) if f.startswith("did not hold: ")]),
        ("Targets whose incidents co-occur", [f for f in facts(found) if f.startswith("together: ")]),
    ]
    head = (
        f"Review of {time.strftime(DATE, time.gmtime(found.start))} to {time.strftime(DATE, time.gmtime(found.end))} "
        f"(UTC): {found.incidents} incidents, {found.runs} agent runs."
    )
    body = [f"{title}:\n" + ("\n".join(f"  {line.split(': ', 1)[1]}" for line in lines) or "  none") for title, lines in sections]
    return "\n\n".join([head, *body])


@functools.lru_cache(maxsize=1)
def prompts() -> dict[str, Any]:
    """The reviewer's prompt templates, ``monitor/agent/prompts/review.yaml``."""
    return dict(yaml.safe_load((resources.files("monitor") / "agent" / "prompts" / "review.yaml").read_text()))


def incident_line(incident: Occurrence) -> str:
    closed = time.strftime(DATE, time.gmtime(incident.closed_at)) if incident.closed_at else "open"
    note = f", {' '.join(str(incident.resolution).split())[:160]}" if incident.resolution else ""
    return (
        f"#{incident.id} {incident.target} {incident.pattern} {incident.root_cause or '-'}, "
        f"{time.strftime(DATE, time.gmtime(incident.opened_at))} → {closed}{note}"
    )


def messages(store: StoreView, found: Findings) -> list[dict[str, Any]]:
    """The history as smolagents messages for a reviewing agent (``ChatMessage.dict()`` each)."""
    incidents = [i for i in store.importance.incident_history(found.start) if i.opened_at >= found.start]
    task = populate_template(
        prompts()["task"],
        {
            "start": day(found.start),
            "end": day(found.end),
            "runs": found.runs,
            "facts": facts(found),
            "incidents": [incident_line(i) for i in incidents[-INCIDENT_LINES:]],
        },
    )
    return transcripts.messages([TaskStep(task=task)], prompts()["system_prompt"])


class Model(Protocol):
    def generate(self, messages: list[ChatMessage], **kwargs: Any) -> ChatMessage: ...


def by_model(model: Model, chat: list[dict[str, Any]]) -> str:
    """The review a model writes from the history's messages: one call, no tools."""
    reply = model.generate([ChatMessage.from_dict(dict(m)) for m in chat])
    return transcripts.text_of({"content": reply.content}).strip()
