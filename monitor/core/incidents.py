"""Incidents as values: what a detector found (:class:`Pattern`), a change to one incident (:class:`Event`), which
its one writer publishes and alerts, the metrics and the log hear of, a change to many at once (:class:`Bulk`:
an import, forgetting), and a person's word that two incidents were, or were not, the same failure
(:class:`Link`). An incident itself travels as an :class:`Incident`, read from its store row in one place
(:mod:`monitor.store.rows`) and made JSON in one (:meth:`Incident.to_json`); the history a review reads, as an
:class:`Occurrence` each, and what a status page (:class:`PublicIncident`), forgetting (:class:`Forgettable`), the
embedder (:class:`ToEmbed`) and the fleet's graph (:class:`Opened`) read of one; the memory page's counts and
notes (:class:`IncidentCount`, :class:`ResolutionNote`), and a note for the public (:class:`PublicNote`). A
compare-and-set change names what it expects the incident still holds (:class:`Expected`)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Literal

from monitor.core.diagnoses import Told
from monitor.core.rows import Row

# opened, updated (pattern or severity), resolved, diagnosed: what receivers hear of; paged: an open incident's
# "opened" or "resolved" for receivers with thresholds of their own (Event.page); the rest is bookkeeping
EventKind = Literal["opened", "updated", "resolved", "diagnosed", "silenced", "acknowledged", "annotated", "linked", "paged"]
BulkKind = Literal["imported", "forgotten"]
Severity = Literal["warning", "critical"]  # an incident's; a result's may be "ok" too
Verdict = Literal["same", "not"]  # a person's word on a past incident: the same failure, or not this one
VERDICTS: tuple[Verdict, ...] = ("same", "not")


@dataclass(frozen=True)
class Pattern:
    """A failure pattern a detector found in one target's recent results."""

    name: str
    target: str
    summary: str
    severity: Severity = "critical"


@dataclass(frozen=True)
class Incident(Row):
    """One incident as stored: what failed where, since when, and what is known of it. Fields are the store's
    columns, in their order, so :meth:`to_json` is the row as the API, MCP, webhooks and exports have shown it."""

    id: int
    target: str
    pattern: str
    status: str  # "open" or "resolved"
    opened_at: float
    closed_at: float | None = None
    summary: str | None = None
    diagnosis: str | None = None  # the agent's diagnosis, in words
    resolution: str | None = None
    severity: str | None = None  # Severity; None only in rows older than the column
    updated_at: float | None = None
    suspected_cause: str | None = None
    notes: str | None = None
    agent_state: str | None = None
    silenced: int | None = None  # 1: no alerts (a person, or a maintenance window it opened in)
    root_cause: str | None = None
    related_incident: int | None = None
    confidence: str | None = None
    evidence: str | None = None  # what the alerts quote, as JSON (monitor.incidents.evidence)
    acknowledged_at: float | None = None
    claim: str | None = None  # what the memory claimed of it, as JSON (monitor.core.claims.Claim)


@dataclass(frozen=True)
class Occurrence:
    """An incident as the history reads it (``monitor review``): what failed where, when, and the fix noted."""

    id: int
    target: str
    pattern: str
    root_cause: str | None
    status: str
    opened_at: float
    closed_at: float | None
    resolution: str | None

    @property
    def cause(self) -> str:
        """What failed: its root cause, else its pattern."""
        return self.root_cause or self.pattern


@dataclass(frozen=True)
class PublicIncident:
    """An incident as a status page may show it: no summary, diagnosis, notes or agent state (they name hosts,
    versions and past fixes; a page shows the root cause in plain words)."""

    id: int
    target: str
    severity: str | None
    status: str
    opened_at: float
    closed_at: float | None
    root_cause: str | None


@dataclass(frozen=True)
class Forgettable:
    """An incident forgetting may remove (not open, not recalled lately), with what its value is computed from:
    when it opened and closed, whether it was resolved with a note, and its recall score as of ``scored_at``."""

    id: int
    target: str
    pattern: str
    root_cause: str  # "" for none
    opened_at: float
    closed_at: float | None
    noted: int  # 1: resolved with a note
    score: float | None
    scored_at: float | None
    recalls: int


@dataclass(frozen=True)
class ToEmbed:
    """An incident waiting for its vector: its ``embed_version`` in the queue (to give back with the vector), and
    ``embedded_hash``, the digest of the text its vector of the model asked for was made from, if it has one."""

    incident: Incident
    embed_version: int | None
    embedded_hash: str | None


@dataclass(frozen=True)
class Opened:
    """An incident as the fleet's graph reads a burst of them: which, of what target, and when it opened."""

    id: int
    target: str
    opened_at: float


@dataclass(frozen=True)
class IncidentCount(Row):
    """Incidents of one target and pattern: how many, how many open, how many resolved with a note."""

    target: str
    pattern: str
    incidents: int
    open: int
    resolved_with_note: int


@dataclass(frozen=True)
class ResolutionNote(Row):
    """A resolved incident's note on what fixed it, as recall puts it in front of the agent first."""

    id: int
    target: str
    pattern: str
    root_cause: str | None
    resolution: str
    closed_at: float | None


@dataclass(frozen=True)
class PublicNote:
    """A note on an incident written for the public, which status pages show under it. Fields are the
    ``public_notes`` columns, in their order."""

    id: int
    incident_id: int
    at: float
    text: str


class Unset(Enum):
    """A field a compare-and-set does not look at (:class:`Expected`)."""

    UNSET = "unset"


UNSET = Unset.UNSET


@dataclass(frozen=True)
class Expected:
    """What a change expects an incident still holds (a compare-and-set): each field given must hold the value it
    had when read, so of two writers making the same change only one does; a field left out is not compared."""

    pattern: str | Unset = UNSET
    severity: str | None | Unset = UNSET
    silenced: int | None | Unset = UNSET
    acknowledged_at: float | None | Unset = UNSET

    def compared(self) -> dict[str, Any]:
        """The fields given, by column."""
        return {f.name: value for f in fields(self) if (value := getattr(self, f.name)) is not UNSET}


@dataclass
class Event:
    """A change to an incident, published by its one writer (:class:`monitor.incidents.writer.Writer`)."""

    kind: EventKind
    incident: Incident  # the incident after the change
    patterns: list[Pattern] = field(default_factory=list)
    queued: bool = False  # its notifications were queued with the change itself, in one transaction
    diagnosis: Told | None = None  # diagnosed: the agent's, as its receivers are told it
    link: Link | None = None  # linked: what a person said of this incident and a past one
    # receivers with thresholds of their own (AlertPolicy.per_receiver), by rule name: those not told of this change
    quiet: frozenset[str] = frozenset()
    page: tuple[str, frozenset[str]] | None = None  # paged: the message kind ("opened", "resolved") and who hears it


@dataclass(frozen=True)
class Bulk:
    """A change to many incidents at once, named: an export imported, or incidents forgotten. It pages nobody:
    imported incidents are history, and forgotten ones were resolved long ago."""

    kind: BulkKind
    count: int  # incidents added or deleted
    ids: tuple[int, ...] = ()  # forgotten: which


@dataclass(frozen=True)
class Link:
    """A person's word on two incidents: ``incident`` (the one they resolved or looked at) was the same failure as
    ``other``, a past incident (``verdict`` "same"), or ``other``, suggested for it, was wrong ("not"). It holds
    for ``incident``'s failing signal (:func:`monitor.memory.signals.of_incident`): when that signal comes back, a
    "same" asserts ``other``'s fix and a "not" keeps ``other`` from being suggested. A later word on the same two
    incidents replaces an earlier one."""

    incident: int
    other: int
    verdict: Verdict
    signal: str  # the key of ``incident``'s failing signal
    actor: str  # who said it, by way of what: "cli", "web", "mcp", "import"
    note: str | None = None
    at: float = 0.0

    def said(self, here: int) -> str:
        """The link in words, seen from incident ``here`` (either end): "same failure as #12", "#12 is not this"."""
        if here == self.other:
            told = f"#{self.incident} was the same failure" if self.verdict == "same" else f"not the failure of #{self.incident}"
        else:
            told = f"same failure as #{self.other}" if self.verdict == "same" else f"not the same failure as #{self.other}"
        return f"{told} (said from {self.actor})" + (f": {self.note}" if self.note else "")
