"""The outbox: notifications queued in the transaction that made them, delivered by their replica (or, once its
lease has ended, by the live replica that took them over). Every payload is stored, and so sent, redacted
(:func:`monitor.core.urls.redacted`): the one way out of every receiver."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from monitor.core.incidents import Incident
from monitor.core.outbox import Queued
from monitor.core.urls import redacted
from monitor.store.base import Part, Writing, inserted
from monitor.store.rows import many, maybe


class Notification(NamedTuple):
    """One message to queue: for ``receiver``, sent from ``due`` (default: now), replacing what is pending
    under ``key`` (default: the incident's own, ``incident:<id>``). ``outage``: the incidents a first message
    lists, the first one leading, recorded as one outage (see :meth:`Outbox.outage_of`). ``at``: when it fell
    due, if earlier than now (a reminder: the next counts from then), as :meth:`Outbox.last_sent` reads it."""

    receiver: str
    payload: dict[str, Any]
    due: float | None = None
    key: str | None = None
    outage: tuple[int, ...] = ()
    at: float | None = None


# What to queue for an incident as stored (None: gone).
Notifier = Callable[[Incident | None], Sequence[Notification]]


class OutboxReader(Part):
    """The outbox as the alerts' policy and the web UI read it."""

    def outage_of(self, incident_id: int) -> list[int]:
        """The incidents of the outage ``incident_id`` was sent in (the first one leading), or just it."""
        members = [
            int(row["incident_id"])
            for row in self._rows(
                """SELECT incident_id FROM outage_members WHERE leader =
               (SELECT leader FROM outage_members WHERE incident_id = ?) ORDER BY incident_id""",
                (incident_id,),
            )
        ]
        return members or [incident_id]

    def pending_under(self, key: str) -> list[Queued]:
        """The notifications still waiting under ``key``."""
        return many(
            Queued, self._rows("SELECT * FROM outbox WHERE key = ? AND delivered_at IS NULL AND dropped_at IS NULL ORDER BY id", (key,))
        )

    def held(self, receiver: str, now: float) -> list[Queued]:
        """``receiver``'s notifications waiting to be sent after ``now`` (held back on purpose)."""
        rows = self._rows(
            """SELECT * FROM outbox WHERE receiver = ? AND replica = ?
                             AND delivered_at IS NULL AND dropped_at IS NULL AND attempts = 0 AND next_attempt_at > ?
                             ORDER BY id""",
            (receiver, self._replica, now),
        )
        return many(Queued, rows)

    def told(self, incident_id: int) -> bool:
        """Whether a message about the incident was ever queued (sent, waiting or dropped): under its own key, or
        as a member of an outage's."""
        queued = self._one("SELECT 1 AS told FROM outbox WHERE key = ? LIMIT 1", (f"incident:{incident_id}",))
        return queued is not None or len(self.outage_of(incident_id)) > 1

    def last_sent(self, *keys: str) -> dict[str, float]:
        """Per receiver, when its newest notification under any of ``keys`` (delivered or waiting) was queued."""
        marks = ", ".join("?" * len(keys))
        return {
            row["receiver"]: row["at"]
            for row in self._rows(
                f"""SELECT receiver, max(created_at) AS at FROM outbox WHERE key IN ({marks}) AND
               (delivered_at IS NOT NULL OR dropped_at IS NULL) GROUP BY receiver""",
                keys,
            )
        }

    def due_notifications(self, now: float, limit: int = 50, receiver: str | None = None) -> list[Queued]:
        """This replica's notifications due at ``now``, oldest first; only ``receiver``'s when given."""
        mine = "replica = ? AND delivered_at IS NULL AND dropped_at IS NULL AND next_attempt_at <= ?"
        if receiver is None:
            return many(Queued, self._rows(f"SELECT * FROM outbox WHERE {mine} ORDER BY id LIMIT ?", (self._replica, now, limit)))
        return many(
            Queued,
            self._rows(f"SELECT * FROM outbox WHERE {mine} AND receiver = ? ORDER BY id LIMIT ?", (self._replica, now, receiver, limit)),
        )

    def due_receivers(self, now: float) -> list[str]:
        """The receivers with a notification of this replica due at ``now``."""
        return [
            row["receiver"]
            for row in self._rows(
                """SELECT DISTINCT receiver FROM outbox WHERE replica = ? AND delivered_at IS NULL AND dropped_at IS NULL
               AND next_attempt_at <= ? ORDER BY receiver""",
                (self._replica, now),
            )
        ]

    def pending_notifications(self) -> int:
        return int(
            self._scalar("SELECT count(*) FROM outbox WHERE replica = ? AND delivered_at IS NULL AND dropped_at IS NULL", (self._replica,))
        )

    def notifications_for(self, incident_id: int) -> list[Queued]:
        """What was queued for the incident, to whom, and what became of it (delivered, pending, dropped)."""
        return many(Queued, self._rows("SELECT * FROM outbox WHERE key = ? ORDER BY id", (f"incident:{incident_id}",)))


class OutboxPart(Writing, OutboxReader):
    """Notifications: queued by the incident writer and the follow-ups, delivered by the alerts' sender."""

    def enqueue(self, receiver: str, payload: dict[str, Any], key: str | None = None) -> int:
        """Queue a notification; one with a ``key`` replaces what is still pending for that receiver and key."""
        with self._transaction() as db:
            return self._enqueue(db, receiver, payload, key)

    def enqueue_follow_up(self, incident_id: int, build: Notifier) -> int:
        """Queue a follow-up (a reminder, an escalation, a firing alert sent again: what time makes, not a change
        to the incident): what ``build`` makes of the incident as it is now, read in the same transaction.

        Each (receiver, payload) replaces the receiver's pending one for this incident, so only the
        newest state waits, and no state read before a later change can be queued after it. What a change
        makes is queued with the change itself (the incident writer's ``notify``).
        """
        with self._transaction() as db:
            return self._enqueue_incident(db, incident_id, build)

    def _enqueue_incident(self, db: Any, incident_id: int, build: Notifier) -> int:
        items = build(maybe(Incident, self._one("SELECT * FROM incidents WHERE id = ?", (incident_id,))))
        for item in items:
            self._enqueue(db, item.receiver, item.payload, item.key or f"incident:{incident_id}", item.due, item.at)
            for member in item.outage if len(item.outage) > 1 else ():  # it belongs to the first outage listing it
                db.execute(
                    "INSERT INTO outage_members (incident_id, leader) VALUES (?, ?) ON CONFLICT (incident_id) DO NOTHING",
                    (member, item.outage[0]),
                )
        return len(items)

    def _enqueue(
        self, db: Any, receiver: str, payload: dict[str, Any], key: str | None, due: float | None = None, at: float | None = None
    ) -> int:
        now = self._clock()
        if key is not None:
            # a message held back on purpose and never tried (a first message waiting for its diagnosis) is a
            # draft: rewritten, not kept beside its new version as "dropped"; anything else waiting is superseded
            db.execute(
                """DELETE FROM outbox WHERE receiver = ? AND key = ? AND delivered_at IS NULL
                          AND dropped_at IS NULL AND attempts = 0 AND next_attempt_at > ?""",
                (receiver, key, now),
            )
            db.execute(
                """UPDATE outbox SET dropped_at = ?, last_error = 'superseded by a newer state'
                   WHERE receiver = ? AND key = ? AND delivered_at IS NULL AND dropped_at IS NULL""",
                (now, receiver, key),
            )
        cursor = db.execute(
            """INSERT INTO outbox (receiver, payload, key, next_attempt_at, created_at, replica)
               VALUES (?, ?, ?, ?, ?, ?) RETURNING id""",
            (receiver, json.dumps(redacted(payload)), key, now if due is None else due, now if at is None else min(at, now), self._replica),
        )
        return inserted(cursor) or 0

    def take_over_notifications(self) -> dict[int, int]:
        """Deliver from this replica the undelivered notifications of every replica that holds no live lease (it
        was killed, cut off or stopped, :mod:`monitor.store.members`); returns how many were taken, by replica.

        Each replica's rows move in one UPDATE that checks again that its lease is still over; a row another
        replica is taking over at the same moment is passed over (it is that one's), so each row has one new
        owner. Keys, attempts and the next attempt stay as they were, so a retry keeps its backoff and a held
        first message is released when it was due."""
        live = f"SELECT id FROM members WHERE expires_at > {self._engine.now}"
        pending = "delivered_at IS NULL AND dropped_at IS NULL"
        gone = [
            int(row["replica"])
            for row in self._rows(
                f"SELECT DISTINCT replica FROM outbox WHERE {pending} AND replica <> ? AND replica NOT IN ({live})", (self._replica,)
            )
        ]
        taken = {}
        for replica in gone:
            with self._transaction() as db:
                count = len(
                    db.execute(
                        f"""UPDATE outbox SET replica = ? WHERE id IN (SELECT id FROM outbox WHERE replica = ? AND {pending}
                        AND ? NOT IN ({live}){self._engine.skip_locked}) RETURNING id""",
                        (self._replica, replica, replica),
                    ).fetchall()
                )
            if count:
                taken[replica] = count
        return taken

    def mark_delivered(self, item_id: int) -> bool:
        """Record a delivery (whoever holds the row now: it was sent); False when another replica took it over."""
        with self._transaction() as db:
            owner = db.execute(
                "UPDATE outbox SET delivered_at = ?, attempts = attempts + 1 WHERE id = ? RETURNING replica", (self._clock(), item_id)
            ).fetchall()
        return not owner or owner[0][0] == self._replica

    def drop_notification(self, item_id: int, reason: str) -> None:
        """Give up on a notification: it stays in the outbox, marked, until retention prunes it."""
        with self._transaction() as db:
            db.execute("UPDATE outbox SET dropped_at = ?, last_error = ? WHERE id = ?", (self._clock(), reason[:500], item_id))

    def mark_failed(self, item_id: int, error: str, retry_at: float) -> bool:
        """Record a failed attempt and when to try again; False (nothing changed) when another replica took the
        notification over: its schedule is the new owner's."""
        with self._transaction() as db:
            return bool(
                db.execute(
                    """UPDATE outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ?
                   WHERE id = ? AND replica = ? RETURNING id""",
                    (error[:500], retry_at, item_id, self._replica),
                ).fetchall()
            )
