"""People's word as evidence: "this was the same failure as #12", "suggestion #4 was wrong for this".

A person who resolved or looked at an incident says what it was, from the CLI (``monitor incidents resolve N
--same-as M``, ``confirm``), the incident page, MCP (``confirm_suggestion``) or an alert's link to that page. Each
word is a :class:`~monitor.core.incidents.Link`, written by the incident writer, for the incident's failing signal
(:func:`monitor.memory.signals.of_incident`): when that signal comes back, recall asserts a "same" and leaves out
a "not". :func:`link` reads the signal for the writer (which sits below memory), so every channel says it alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from monitor.core.incidents import Link, Verdict
from monitor.memory import signals

if TYPE_CHECKING:
    from monitor.incidents.writer import Writer
    from monitor.store.incidents import IncidentsReader


class LinkReader(Protocol):
    """What the links are read from: a store's incidents, or their reads."""

    @property
    def incidents(self) -> IncidentsReader: ...


def link(writer: Writer, incident_id: int, other_id: int, verdict: Verdict, *, actor: str, note: str | None = None) -> Link:
    """Write a person's word on ``incident_id`` and the past incident ``other_id`` through ``writer``, for
    ``incident_id``'s failing signal. LookupError names an incident that does not exist; ValueError the rest."""
    row = writer.incident(incident_id)
    return writer.link(incident_id, other_id, verdict, actor=actor, signal=signals.of_incident(row), note=note)


def conflict(same: Iterable[int], wrong: Iterable[int], incident_id: int) -> str | None:
    """Why a person's word on several past incidents at once cannot stand, or None: one named both the same
    failure and not it, or the incident named as its own past incident."""
    both = sorted(set(same) & set(wrong))
    if both:
        return f"#{both[0]} is named both as the same failure (--same-as) and as not it (--not): say one"
    if incident_id in {*same, *wrong}:
        return f"incident #{incident_id} cannot be linked to itself: name a past incident"
    return None


@dataclass(frozen=True)
class Heard:
    """What people said of some past incidents, for one failing signal."""

    same: frozenset[int] = frozenset()  # confirmed the same failure as this signal: offered, and asserted
    wrong: frozenset[int] = frozenset()  # said not to be this signal's failure: never offered for it again
    words: tuple[Link, ...] = ()  # every word on them, whatever the signal (families.kin reads them)


def heard(store: LinkReader, ids: Sequence[int], signal: str) -> Heard:
    """What people said of the past incidents ``ids`` (and those they named) for the failing signal ``signal``:
    a "same" said for it confirms both incidents; a "not" said for it rules the one named out."""
    said = tuple(store.incidents.incident_links(list(ids))) if ids else ()
    here = [w for w in said if w.signal == signal]
    wrong = frozenset(w.other for w in here if w.verdict == "not")
    same = frozenset(i for w in here if w.verdict == "same" for i in (w.incident, w.other)) - wrong
    return Heard(same, wrong, said)
