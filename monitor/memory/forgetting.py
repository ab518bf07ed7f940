"""Forgetting: which incident memories are worth keeping, and pruning the rest when there are too many.

An incident's value follows a forgetting curve: every part of it halves each ``half_life``
(:func:`monitor.store.importance.decayed`). It is the sum of

* ``base``, from when it opened: every incident starts equal, and noise that nobody recalls fades;
* ``resolution_boost``, from when it closed, if it was resolved with a note (a confirmed fix);
* its recall score: each time it is put in front of the model it gains ``RECALL_BOOST``
  (``Store.mark_recalled``), so a fix that keeps being recalled keeps its value.

``memory.max_incidents`` bounds the store. Over it, :func:`prune` removes the least valuable incidents
down to nine tenths of the bound (so that it does not run again for every new incident), never an
open one nor one recalled within ``protect_recalled``; the store keeps a summary of what went, one row
per target, pattern and root cause, which :func:`describe` puts in words
("pruned 1,203 incidents of api (timeout, Mar–May 2026)").

Everything here is pure but :func:`prune`, which reads and writes through the store it is given.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from monitor.core.incidents import Forgettable
from monitor.store.importance import HALF_LIFE, decayed

if TYPE_CHECKING:
    from monitor.incidents.writer import Writer

DAY = 86400.0


@dataclass(frozen=True)
class Policy:
    """The forgetting curve's settings."""

    half_life: float = HALF_LIFE
    base: float = 1.0
    resolution_boost: float = 2.0
    protect_recalled: float = 14 * DAY  # an incident recalled this recently is never pruned


POLICY = Policy()


def value(row: Forgettable, now: float, policy: Policy = POLICY) -> float:
    """What an incident (one of ``Store.forgettable``) is worth at ``now``."""
    worth = decayed(policy.base, row.opened_at, now, policy.half_life)
    if row.noted:
        worth += decayed(policy.resolution_boost, row.closed_at or row.opened_at, now, policy.half_life)
    if row.score is not None and row.scored_at is not None:  # both, or neither: the incident's recall record
        worth += decayed(row.score, row.scored_at, now, policy.half_life)
    return worth


def low_water(max_incidents: int) -> int:
    """How many incidents a prune leaves: nine tenths of the bound."""
    return max_incidents - max_incidents // 10


def choose(rows: list[Forgettable], count: int, now: float, policy: Policy = POLICY) -> list[int]:
    """The ids of the ``count`` least valuable incidents among ``rows`` (the oldest first among equals)."""
    if count <= 0:
        return []
    return [row.id for row in heapq.nsmallest(count, rows, key=lambda row: (value(row, now, policy), row.opened_at, row.id))]


def prune(writer: Writer, max_incidents: int, *, policy: Policy = POLICY, clock: Callable[[], float] | None = None) -> int:
    """Over ``max_incidents``: forget the least valuable incidents down to :func:`low_water`, through the incident
    writer (a bulk change); returns how many went."""
    store = writer.reader
    total = store.incidents.count_incidents()
    if total <= max_incidents:
        return 0
    now = (clock or store.clock)()
    rows = store.importance.forgettable(now - policy.protect_recalled)
    return writer.forget(choose(rows, total - low_water(max_incidents), now, policy))


def month_range(first: float, last: float) -> str:
    """``Mar 2026``, ``Mar–May 2026`` or ``Dec 2025–Feb 2026``."""
    start, end = time.gmtime(first), time.gmtime(last)
    if (start.tm_year, start.tm_mon) == (end.tm_year, end.tm_mon):
        return time.strftime("%b %Y", start)
    if start.tm_year == end.tm_year:
        return f"{time.strftime('%b', start)}–{time.strftime('%b %Y', end)}"
    return f"{time.strftime('%b %Y', start)}–{time.strftime('%b %Y', end)}"


def describe(group: dict[str, Any]) -> str:
    """One row of ``Store.pruned`` in words: ``pruned 1,203 incidents of api (timeout, Mar–May 2026)``."""
    count = group["incidents"]
    what = group["root_cause"] or group["pattern"]
    noun = "incident" if count == 1 else "incidents"
    return (
        f"pruned {count:,} {group['pattern']} {noun} of {group['target']} "
        f"({what}, {month_range(group['first_opened'], group['last_opened'])})"
    )
