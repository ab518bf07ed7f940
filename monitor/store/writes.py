"""The incident-writing part: every write that changes incidents, in one class, handed only to the incident writer.

:class:`IncidentWrites` is made in one place, the composition root (:mod:`monitor.wiring`), for the one
:class:`~monitor.incidents.writer.Writer` of a process; nothing else holds an object with these methods. It is made
over the store itself, which no reader holds (a reader's parts stand on a read-only handle: ``TypeError``); nothing
outside the store, the root and the writer may name it (``tests/test_one_writer.py``), and no other part has any of
its methods (``tests/test_store_parts.py``)::

    open_incident · open_incident_unless_open · update_incident · close_incident · append_incident_note
    add_incident_link · record_diagnosis · mark_interrupted_runs · add_public_note · forget_incidents · load_dump

Each is one transaction; a change that tells someone queues its notifications in that transaction (``notify``).
The constraints back the one writer: an open incident per target (a partial unique index), and a transition
made once (a close or an update counts only if the incident was open).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from monitor.core.diagnoses import Diagnosed
from monitor.core.incidents import Expected, Link
from monitor.core.urls import redact_text
from monitor.store.base import Base, Writing, inserted
from monitor.store.importance import chunks
from monitor.store.incidents import LINK_COLUMNS, as_link
from monitor.store.memory import IMPORT_BATCH, MemoryImport
from monitor.store.outbox import Notifier, OutboxPart

# What a writer may set on an incident (status, times and ids change only with their transitions).
CHANGEABLE = frozenset(
    {
        "pattern",
        "severity",
        "summary",
        "diagnosis",
        "suspected_cause",
        "resolution",
        "notes",
        "agent_state",
        "silenced",
        "root_cause",
        "related_incident",
        "confidence",
        "claim",
        "evidence",
        "acknowledged_at",
    }
)


class IncidentWrites(Writing):
    """Incidents opened, changed, linked, diagnosed, noted in public, forgotten and imported: the incident writer's."""

    def __init__(self, db: Base) -> None:
        super().__init__(db)
        self._outbox = OutboxPart(db)  # a change's notifications, queued in its transaction

    def open_incident(
        self, target: str, pattern: str, summary: str, severity: str = "critical", silenced: bool = False, root_cause: str | None = None
    ) -> int:
        """A new open incident; ``root_cause`` is the detectors' literal reading until a diagnosis replaces it."""
        now = self._clock()
        with self._transaction() as db:
            cursor = db.execute(
                """INSERT INTO incidents (target, pattern, severity, status, opened_at, updated_at,
                   summary, silenced, root_cause) VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?) RETURNING id""",
                (target, pattern, severity, now, now, summary, int(silenced), root_cause),
            )
            return inserted(cursor) or 0

    def open_incident_unless_open(
        self,
        target: str,
        pattern: str,
        summary: str,
        severity: str = "critical",
        silenced: bool = False,
        root_cause: str | None = None,
        notify: Notifier | None = None,
        evidence: str | None = None,
    ) -> int | None:
        """Like :meth:`open_incident`, but None (and nothing written) when the target has an open incident.

        ``notify`` makes the first notifications of the new incident, queued in the same transaction:
        a crash never leaves an incident that nobody was told about. ``evidence``: what the alerts quote (JSON).
        """
        now = self._clock()
        with self._transaction() as db:
            cursor = db.execute(
                """INSERT INTO incidents (target, pattern, severity, status, opened_at, updated_at,
                   summary, silenced, root_cause, evidence) VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (target) WHERE status = 'open' DO NOTHING RETURNING id""",
                (target, pattern, severity, now, now, summary, int(silenced), root_cause, evidence),
            )
            incident_id = inserted(cursor)
            if incident_id is None:
                return None
            if notify is not None:
                self._outbox._enqueue_incident(db, incident_id, notify)
            return incident_id

    def update_incident(
        self, incident_id: int, *, only_open: bool = False, expect: Expected | None = None, notify: Notifier | None = None, **fields: Any
    ) -> bool:
        """Set fields; True when a row changed. ``only_open`` and ``expect`` (field values the row must
        still have) make it a compare-and-set, so of two writers making the same change only one does.
        ``notify`` queues the notifications of a change that was made, in the same transaction."""
        seen = expect.compared() if expect else {}
        for verb, names in (("update", fields), ("compare", seen)):
            if set(names) - CHANGEABLE:
                raise ValueError(f"cannot {verb} incident fields {sorted(set(names) - CHANGEABLE)}")
        fields["updated_at"] = self._clock()
        assignments = ", ".join(f"{name} = ?" for name in fields)
        where = " AND ".join(["id = ?", *(["status = 'open'"] if only_open else []), *(f"{n} IS NOT DISTINCT FROM ?" for n in seen)])
        with self._transaction() as db:
            cursor = db.execute(f"UPDATE incidents SET {assignments} WHERE {where}", (*fields.values(), incident_id, *seen.values()))
            changed = bool(cursor.rowcount == 1)
            if changed and notify is not None:
                self._outbox._enqueue_incident(db, incident_id, notify)
            return changed

    def append_incident_note(self, incident_id: int, note: str) -> None:
        with self._transaction() as db:
            db.execute(
                """UPDATE incidents SET notes = CASE WHEN coalesce(notes, '') = '' THEN ? ELSE notes || ? || ? END,
                   updated_at = ? WHERE id = ?""",  # trim() takes spaces only: the first note began with a newline
                (redact_text(note).strip(), "\n", redact_text(note).strip(), self._clock(), incident_id),
            )

    def close_incident(self, incident_id: int, resolution: str | None = None, *, notify: Notifier | None = None) -> bool:
        """Resolve the incident; True when it was open, so that this call is the transition. ``notify`` queues
        the notifications of that transition in the same transaction."""
        now = self._clock()
        note = redact_text(resolution) if resolution else resolution
        with self._transaction() as db:
            closed = inserted(
                db.execute(
                    """UPDATE incidents SET status = 'resolved', closed_at = ?, updated_at = ?,
                   resolution = coalesce(?, resolution) WHERE id = ? AND status = 'open' RETURNING id""",
                    (now, now, note, incident_id),
                )
            )
            if closed is None:  # resolved already: only a new resolution note changes it
                db.execute(
                    "UPDATE incidents SET updated_at = ?, resolution = coalesce(?, resolution) WHERE id = ?", (now, note, incident_id)
                )
            elif notify is not None:
                self._outbox._enqueue_incident(db, incident_id, notify)
            return closed is not None

    def add_incident_link(self, link: Link) -> Link:
        """Store a person's word on two incidents, replacing an earlier word on the same two; the link as stored
        (its note redacted)."""
        with self._transaction() as db:
            row = db.execute(
                f"""INSERT INTO incident_links ({", ".join(LINK_COLUMNS)})
                   VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (incident_id, other_id) DO UPDATE SET verdict = excluded.verdict,
                   signal = excluded.signal, actor = excluded.actor, note = excluded.note, at = excluded.at
                   RETURNING {", ".join(LINK_COLUMNS)}""",
                (link.incident, link.other, link.verdict, link.signal, link.actor, redact_text(link.note) if link.note else None, link.at),
            ).fetchone()
            return as_link(dict(zip(LINK_COLUMNS, row, strict=True)))

    def record_diagnosis(self, run_id: int | None, incident_id: int | None, said: Diagnosed, *, notify: Notifier | None = None) -> None:
        """A structured diagnosis, on the run and (when there is one) its incident, in one transaction, with
        the notifications ``notify`` makes of it."""
        now = self._clock()
        with self._transaction() as db:
            if run_id is not None:
                db.execute(
                    """UPDATE agent_runs SET diagnosis = ?, root_cause = ?, related_incident = ?, confidence = ?,
                       claim = ? WHERE id = ?""",
                    (said.diagnosis, said.root_cause, said.related_incident, said.confidence, said.claim, run_id),
                )
            if incident_id is not None:
                db.execute(
                    """UPDATE incidents SET diagnosis = ?, root_cause = ?, related_incident = ?, confidence = ?,
                       suspected_cause = ?, claim = ?, updated_at = ? WHERE id = ?""",
                    (
                        said.diagnosis,
                        said.root_cause,
                        said.related_incident,
                        said.confidence,
                        said.suspected_cause,
                        said.claim,
                        now,
                        incident_id,
                    ),
                )
                if notify is not None:
                    self._outbox._enqueue_incident(db, incident_id, notify)

    def mark_interrupted_runs(self) -> int:
        """Runs this replica left 'running' by a crash end as 'interrupted' (their saved steps stay), and their
        incidents say so. Other replicas' runs are theirs: they may be running now."""
        now = self._clock()
        with self._transaction() as db:
            db.execute(
                """UPDATE incidents SET agent_state = 'interrupted', updated_at = ?,
                   notes = trim(coalesce(notes, '') || ? || 'agent run #' || r.id ||
                       ' was cut short (the process stopped or crashed); the detection stands')
                   FROM (SELECT id, incident_id FROM agent_runs WHERE state = 'running' AND replica = ?) AS r
                   WHERE incidents.id = r.incident_id""",
                (now, "\n", self._replica),
            )
            return int(
                db.execute(
                    "UPDATE agent_runs SET state = 'interrupted', ended_at = ? WHERE state = 'running' AND replica = ?",
                    (now, self._replica),
                ).rowcount
            )

    def add_public_note(self, incident_id: int, text: str) -> int:
        """A note for the public under an incident (status pages show it); its id."""
        with self._transaction() as db:
            return (
                inserted(
                    db.execute(
                        "INSERT INTO public_notes (incident_id, at, text) VALUES (?, ?, ?) RETURNING id", (incident_id, self._clock(), text)
                    )
                )
                or 0
            )

    def forget_incidents(self, ids: Iterable[int]) -> int:
        """Delete these incidents (never an open one), their agent runs, steps and recalls, in batches; each
        batch adds what it deleted to the summary (one row per target, pattern and root cause). Returns how many went."""
        gone = 0
        for batch in chunks(ids):
            marks = ", ".join("?" * len(batch))
            with self._transaction() as db:
                runs = f"SELECT id FROM agent_runs WHERE incident_id IN ({marks})"
                db.execute(f"DELETE FROM agent_steps WHERE run_id IN ({runs})", batch)
                db.execute(f"DELETE FROM agent_runs WHERE incident_id IN ({marks})", batch)
                db.execute(f"DELETE FROM incident_recalls WHERE incident_id IN ({marks})", batch)
                db.execute(f"DELETE FROM web_actions WHERE incident_id IN ({marks})", batch)
                deleted = db.execute(
                    f"""DELETE FROM incidents WHERE id IN ({marks}) AND status != 'open'
                        RETURNING target, pattern, coalesce(root_cause, ''), opened_at""",
                    batch,
                ).fetchall()
                self._summarize(db, deleted)
            gone += len(deleted)
        return gone

    def _summarize(self, db: Any, deleted: list[Any]) -> None:
        groups: dict[tuple[str, str, str], list[float]] = {}
        for target, pattern, cause, opened_at in deleted:
            groups.setdefault((target, pattern, cause), []).append(opened_at)
        now = self._clock()
        for (target, pattern, cause), opened in groups.items():
            db.execute(
                """INSERT INTO pruned_incidents (target, pattern, root_cause, incidents, first_opened, last_opened,
                       pruned_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                   ON CONFLICT (target, pattern, root_cause) DO UPDATE SET
                       incidents = pruned_incidents.incidents + excluded.incidents, pruned_at = excluded.pruned_at,
                       first_opened = CASE WHEN excluded.first_opened < pruned_incidents.first_opened
                                      THEN excluded.first_opened ELSE pruned_incidents.first_opened END,
                       last_opened = CASE WHEN excluded.last_opened > pruned_incidents.last_opened
                                     THEN excluded.last_opened ELSE pruned_incidents.last_opened END""",
                (target, pattern, cause, len(opened), min(opened), max(opened), now),
            )

    def load_dump(
        self, data: dict[str, list[dict[str, Any]]], *, batch: int = IMPORT_BATCH, progress: Callable[[dict[str, int]], None] | None = None
    ) -> dict[str, int]:
        """Add an export's rows (:meth:`monitor.store.memory.MemoryImport.load_dump`); how many of each table were new."""
        return MemoryImport(self._database).load_dump(data, batch=batch, progress=progress)
