"""The one writer of incident state.

Every change to an incident goes through a :class:`Writer`, whoever makes it: the detectors (through the
:class:`~monitor.incidents.tracker.Tracker`), the agent (its notes and its diagnosis), a person (resolve,
silence, acknowledge, from the web UI or ``monitor incidents``), the daemon (interrupted runs, targets
removed from the config), the eval and the demo (past incidents), and memory (an import of an export, and
forgetting: bulk operations, each one :class:`~monitor.core.incidents.Bulk` event)::

    open ─▶ update (pattern, severity) ─▶ resolve        diagnose · silence · acknowledge · annotate · public note
                                                         link (a person's word: same failure as #M, or not)
                                                         import_dump · forget (bulk)

Each change is committed with the notifications it makes (``messages``: what the alerts queue for it, read
in the same transaction), so a crash never leaves a change that nobody was told about; then it is published
as one :class:`~monitor.incidents.events.Event`. A resolve by hand is a resolve like a recovery: every
receiver hears of it.

The store backs the writer with constraints, so even a second writer cannot open a second incident for a
target (a partial unique index) or make a transition twice (a close or update counts only if the incident
was open). Writers are made in one place, :mod:`monitor.wiring`, each with the alerts' ``messages``;
``tests/test_one_writer.py`` holds that no other module changes incidents.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from monitor.core.claims import suggestions
from monitor.core.diagnoses import Diagnosed, Told
from monitor.core.incidents import VERDICTS, Bulk, Event, EventKind, Expected, Incident, Link, Pattern, Verdict
from monitor.incidents.diagnosis import Diagnosis
from monitor.incidents.events import Publisher
from monitor.incidents.maintenance import Maintenance
from monitor.store import Notification, Notifier, StoreView
from monitor.store.memory import MemoryPart
from monitor.store.writes import IncidentWrites

MAX_LINK_NOTE = 2000  # characters of a note on a link
MAX_ACTOR = 32  # characters naming who said it ("cli", "web", "mcp", "import")

# What the alerts queue for an event, given the incident as stored in the change's transaction.
Messages = Callable[[Event, Incident | None], Sequence[Notification]]


class Writer:
    """Writes incidents, queues what each change makes for the alerts (``messages``), and publishes it."""

    def __init__(
        self,
        writes: IncidentWrites,
        reader: StoreView,
        *,
        memory: MemoryPart,
        messages: Messages,
        publisher: Publisher,
        maintenance: Maintenance,
    ) -> None:
        self._writes = writes  # the incident-writing part, which the composition root hands to the writer alone
        self._store = reader  # what it reads; lent as :attr:`reader`
        self._memory = memory  # working memory an import brings
        self.publisher = publisher  # who hears of each change
        self.messages = messages
        self.maintenance = maintenance  # which targets are in a maintenance window
        self._lock = threading.RLock()

    def open(
        self,
        target: str,
        pattern: str,
        summary: str,
        severity: str = "critical",
        *,
        root_cause: str | None = None,
        found: Sequence[Pattern] = (),
        evidence: str | None = None,
        quiet: frozenset[str] = frozenset(),
    ) -> Event | None:
        """Open an incident for ``target``, silenced when it opens in a maintenance window; its "opened" event,
        or None when the target has an open incident already (then nothing is written). ``evidence``: see
        :mod:`monitor.incidents.evidence`; ``quiet``: receivers (by rule name) not told of it yet."""
        with self._lock:
            notify = self._notifier("opened", found, quiet=quiet)
            incident_id = self._writes.open_incident_unless_open(
                target, pattern, summary, severity, self.maintenance.covers(target), root_cause=root_cause, notify=notify, evidence=evidence
            )
            return None if incident_id is None else self._publish("opened", incident_id, found, notify, quiet=quiet)

    def update(
        self,
        incident: Incident,
        *,
        summary: str,
        severity: str,
        pattern: str,
        found: Sequence[Pattern] = (),
        quiet: frozenset[str] = frozenset(),
    ) -> Event | None:
        """Bring an open incident (as read) up to date: an "updated" event when its leading pattern or its
        severity changed; a new summary alone is written silently. None when another writer changed it first."""
        with self._lock:
            changed = (incident.severity, incident.pattern) != (severity, pattern)
            notify = self._notifier("updated", found, quiet=quiet) if changed else None
            seen = Expected(severity=incident.severity, pattern=incident.pattern)
            updated = self._writes.update_incident(
                incident.id, only_open=True, expect=seen, notify=notify, summary=summary, severity=severity, pattern=pattern
            )
            return self._publish("updated", incident.id, found, notify, quiet=quiet) if updated and changed else None

    def page(self, incident: Incident, kind: str, receivers: frozenset[str], *, summary: str) -> Event | None:
        """Tell ``receivers`` (rule names, each with thresholds of its own) that the open incident ``kind``
        ("opened" or "resolved") for them, with its summary now; None when it is no longer open."""
        with self._lock:
            notify = self._notifier("paged", page=(kind, receivers))
            if not self._writes.update_incident(incident.id, only_open=True, notify=notify, summary=summary):
                return None
            return self._publish("paged", incident.id, (), notify, page=(kind, receivers))

    def resolve(
        self, incident_id: int, resolution: str | None = None, *, note: str | None = None, quiet: frozenset[str] = frozenset()
    ) -> Event | None:
        """Resolve the incident, with what fixed it (``resolution``) and a ``note``; its "resolved" event, or
        None when it was resolved already: then it only gets the new resolution (it keeps the time it closed,
        and pages nobody again). ``quiet``: receivers (by rule name) not told (never told it opened, or told it
        resolved already)."""
        with self._lock:
            notify = self._notifier("resolved", quiet=quiet)
            if not self._writes.close_incident(incident_id, resolution, notify=notify):
                return None
            if note:
                self._writes.append_incident_note(incident_id, note)
            return self._publish("resolved", incident_id, (), notify, quiet=quiet)

    def silence(self, incident_id: int, note: str) -> None:
        """No more alerts for this incident (see :mod:`monitor.incidents.maintenance`)."""
        with self._lock:
            self._writes.update_incident(incident_id, silenced=1)
            self._writes.append_incident_note(incident_id, note)
            self._publish("silenced", incident_id)

    def release(self, incident: Incident) -> Event | None:
        """An incident maintenance held back (it opened in a window) whose window is over while its target still
        fails: its alerts go out now, as an "opened", once (``silenced`` is compared and set). None when it is not
        held so: a window covers it still, a person silenced it, or its receivers have heard of it already."""
        with self._lock:
            incident_id = incident.id
            if not incident.silenced or self.maintenance.covers(incident.target):
                return None
            if self._store.outbox.told(incident_id) or any(
                a.action == "silence" and a.ok for a in self._store.incidents.web_actions(incident_id)
            ):
                return None
            notify = self._notifier("opened")
            if not self._writes.update_incident(
                incident_id, only_open=True, notify=notify, silenced=0, expect=Expected(silenced=incident.silenced)
            ):
                return None
            self._writes.append_incident_note(incident_id, "maintenance is over and the failure remains: alerts go out")
            return self._publish("annotated", incident_id, (), notify)

    def acknowledge(self, incident_id: int, note: str) -> None:
        """Someone is on it: its reminders and escalation stop (the first acknowledgement's time is kept)."""
        with self._lock:
            self._writes.update_incident(incident_id, expect=Expected(acknowledged_at=None), acknowledged_at=self._store.clock())
            self._writes.append_incident_note(incident_id, note)
            self._publish("acknowledged", incident_id)

    def annotate(self, incident_id: int, note: str | None = None, **fields: Any) -> None:
        """Set fields of an incident (``agent_state``, ...) and append a note, open or resolved. An investigation
        that ended (``agent_state``) lets out the first message it held back (:mod:`monitor.alerts.outages`)."""
        with self._lock:
            notify = self._notifier("annotated") if "agent_state" in fields else None
            if fields:
                self._writes.update_incident(incident_id, notify=notify, **fields)
            if note:
                self._writes.append_incident_note(incident_id, note)
            self._publish("annotated", incident_id, (), notify)

    def post_public_note(self, incident_id: int, text: str) -> None:
        """A note for the public, shown under the incident on status pages (its own notes are not)."""
        with self._lock:
            self._get(incident_id)
            self._writes.add_public_note(incident_id, text)
            self._publish("annotated", incident_id)

    def link(self, incident_id: int, other_id: int, verdict: Verdict, *, actor: str, signal: str, note: str | None = None) -> Link:
        """A person's word: ``incident_id`` was the same failure as the past incident ``other_id`` (``verdict``
        "same"), or ``other_id`` was wrong for it ("not"), for ``signal``, the key of ``incident_id``'s failing
        signal (:func:`monitor.memory.signals.of_incident`, which :func:`monitor.memory.links.link` reads for the
        caller). A later word on the same two replaces this one; a "linked" event. Raises ValueError or LookupError
        naming what is wrong (an incident that does not exist, one linked to itself, an unknown verdict)."""
        if verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {str(verdict)[:16]!r}: one of {', '.join(VERDICTS)}")
        if incident_id == other_id:
            raise ValueError(f"incident #{incident_id} cannot be linked to itself: name a past incident")
        if not actor or len(actor) > MAX_ACTOR or len(note or "") > MAX_LINK_NOTE:
            raise ValueError(f"a link names who said it (at most {MAX_ACTOR} characters) and a note of at most {MAX_LINK_NOTE:,}")
        with self._lock:
            self._get(incident_id)
            self._get(other_id)
            note = (note or "").strip() or None
            made = self._writes.add_incident_link(Link(incident_id, other_id, verdict, signal, actor, note, self._store.clock()))
            event = Event("linked", self._get(incident_id), link=made)
            self.publisher.publish(event)
            return made

    def diagnose(self, run_id: int | None, incident_id: int | None, said: Diagnosed) -> None:
        """Record a diagnosis on the agent run and on its incident, if it has one: a "diagnosed" event,
        with the fix of the past incident it asserts and the ones it suggests (``said.claim``:
        :meth:`monitor.core.claims.Claim.to_json`)."""
        with self._lock:
            past = self._store.incidents.incident(said.related_incident) if said.related_incident else None
            made = Diagnosis(
                said.root_cause, said.related_incident, said.confidence, said.diagnosis, past.resolution if past else None, said.claim
            )
            told, again = made.told(), incident_id is not None and self._said_before(incident_id, made)
            # the same diagnosis recorded twice (a retried tool call, a second run) is news to nobody
            notify = self._notifier("diagnosed", diagnosis=told) if incident_id is not None and not again else None
            self._writes.record_diagnosis(run_id, incident_id, said, notify=notify)
            if incident_id is not None:
                self._publish("annotated" if again else "diagnosed", incident_id, (), notify, diagnosis=told)

    def _said_before(self, incident_id: int, made: Diagnosis) -> bool:
        """Whether the incident holds this diagnosis already (what it tells people, not the figures behind it)."""
        known = self._store.incidents.incident(incident_id)
        return known is not None and (known.root_cause, known.related_incident, known.confidence, known.diagnosis, _ids(known.claim)) == (
            made.root_cause,
            made.related_incident,
            made.confidence,
            made.summary,
            _ids(made.claim),
        )

    def interrupted_runs(self) -> int:
        """End the agent runs a previous process of this replica left running (it crashed or was killed) as
        interrupted; their incidents say so. Returns how many runs."""
        with self._lock:
            incidents = self._store.runs.running_incidents()
            count = self._writes.mark_interrupted_runs()
            for incident_id in incidents:  # its investigation is over: what it held back goes out
                notify = self._notifier("annotated")
                self._writes.update_incident(incident_id, notify=notify)
                self._publish("annotated", incident_id, (), notify)
            return count

    def import_dump(self, data: dict[str, list[dict[str, Any]]], **options: Any) -> dict[str, int]:
        """Add an export's rows (checked by :mod:`monitor.memory.exports`; ``options``: ``batch``, ``progress``):
        incidents come in as history, so they page nobody; one "imported" :class:`Bulk` event. Returns how many
        rows of each table were new."""
        with self._lock:
            added = self._writes.load_dump(data, **options)
            self.publisher.publish_bulk(Bulk("imported", added.get("incidents", 0)))
            return added

    def save_working_memory(self, key: str, steps: list[dict[str, Any]]) -> None:
        """Working memory an import brings (a smolagents transcript's messages), saved as this replica's."""
        with self._lock:
            self._memory.save_memory(key, steps)

    def forget(self, ids: Sequence[int]) -> int:
        """Delete these incidents, with their runs and vectors, keeping a summary of them
        (:meth:`monitor.store.writes.IncidentWrites.forget_incidents`); one "forgotten" :class:`Bulk` event."""
        with self._lock:
            gone = self._writes.forget_incidents(ids)
            self.publisher.publish_bulk(Bulk("forgotten", gone, tuple(ids)))
            return gone

    def close_unconfigured(self, configured: set[str]) -> list[Event]:
        """Resolve, with a note, the open incidents of targets not in ``configured`` (removed by a reload,
        imported, or opened by ``monitor investigate URL``): nothing would ever check them again."""
        with self._lock:
            closed = [
                self.resolve(incident.id, note="closed: its target is no longer configured")
                for incident in self._store.incidents.open_incidents()
                if incident.target not in configured
            ]
        return [event for event in closed if event is not None]

    def _notifier(
        self,
        kind: EventKind,
        found: Sequence[Pattern] = (),
        *,
        diagnosis: Told | None = None,
        quiet: frozenset[str] = frozenset(),
        page: tuple[str, frozenset[str]] | None = None,
    ) -> Notifier:
        """What queues the change's notifications in its own transaction, from the incident as written."""
        messages = self.messages
        return lambda row: [] if row is None else messages(Event(kind, row, list(found), diagnosis=diagnosis, quiet=quiet, page=page), row)

    def _publish(
        self,
        kind: EventKind,
        incident_id: int,
        found: Sequence[Pattern] = (),
        notify: Notifier | None = None,
        *,
        diagnosis: Told | None = None,
        quiet: frozenset[str] = frozenset(),
        page: tuple[str, frozenset[str]] | None = None,
    ) -> Event:
        incident = self._get(incident_id)
        event = Event(kind, incident, list(found), queued=notify is not None, diagnosis=diagnosis, quiet=quiet, page=page)
        self.publisher.publish(event)
        return event

    @property
    def reader(self) -> StoreView:
        """What this writer writes, read-only (forgetting's choice, an import's merge of working memory)."""
        return self._store

    def incident(self, incident_id: int) -> Incident:
        """Incident ``incident_id`` as stored; LookupError if there is none."""
        return self._get(incident_id)

    def _get(self, incident_id: int) -> Incident:
        incident = self._store.incidents.incident(incident_id)
        if incident is None:
            raise LookupError(f"no incident #{incident_id}")
        return incident


def _ids(claim: str | None) -> list[int]:
    """What a stored claim tells people (the ids suggested), not the figures behind it."""
    return [s.id for s in suggestions(claim)]
