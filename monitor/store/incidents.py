"""Incidents: opened and resolved once (constraints, not locks), searched by their text, and what the web UI did to them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from monitor.core.incidents import Link
from monitor.core.urls import redact_text
from monitor.store import words as search_words
from monitor.store.base import NO_ID, inserted
from monitor.store.importance import chunks
from monitor.store.outbox import Notifier, Outbox
from monitor.store.schema import WEB_INDEXES
from monitor.store.words import Words, fts_query, pg_tsquery, query_words, searched_words, tsquery

LINK_COLUMNS = ("incident_id", "other_id", "verdict", "signal", "actor", "note", "at")  # incident_links' (schema.LINKS_TABLE)

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


class Incidents(Outbox, Words):
    """Incidents, their full-text search, and the web UI's actions on them."""

    def open_incident(
        self, target: str, pattern: str, summary: str, severity: str = "critical", silenced: bool = False, root_cause: str | None = None
    ) -> int:
        """A new open incident; ``root_cause`` is the detectors' literal reading until a diagnosis replaces it."""
        now = self.clock()
        with self.transaction() as db:
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
        now = self.clock()
        with self.transaction() as db:
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
                self._enqueue_incident(db, incident_id, notify)
            return incident_id

    def update_incident(
        self,
        incident_id: int,
        *,
        only_open: bool = False,
        expect: dict[str, Any] | None = None,
        notify: Notifier | None = None,
        **fields: Any,
    ) -> bool:
        """Set fields; True when a row changed. ``only_open`` and ``expect`` (field values the row must
        still have) make it a compare-and-set, so of two writers making the same change only one does.
        ``notify`` queues the notifications of a change that was made, in the same transaction."""
        expect = expect or {}
        for verb, names in (("update", fields), ("compare", expect)):
            if set(names) - CHANGEABLE:
                raise ValueError(f"cannot {verb} incident fields {sorted(set(names) - CHANGEABLE)}")
        fields["updated_at"] = self.clock()
        assignments = ", ".join(f"{name} = ?" for name in fields)
        where = " AND ".join(["id = ?", *(["status = 'open'"] if only_open else []), *(f"{n} IS NOT DISTINCT FROM ?" for n in expect)])
        with self.transaction() as db:
            cursor = db.execute(f"UPDATE incidents SET {assignments} WHERE {where}", (*fields.values(), incident_id, *expect.values()))
            changed = bool(cursor.rowcount == 1)
            if changed and notify is not None:
                self._enqueue_incident(db, incident_id, notify)
            return changed

    def append_incident_note(self, incident_id: int, note: str) -> None:
        with self.transaction() as db:
            db.execute(
                """UPDATE incidents SET notes = CASE WHEN coalesce(notes, '') = '' THEN ? ELSE notes || ? || ? END,
                   updated_at = ? WHERE id = ?""",  # trim() takes spaces only: the first note began with a newline
                (redact_text(note).strip(), "\n", redact_text(note).strip(), self.clock(), incident_id),
            )

    def close_incident(self, incident_id: int, resolution: str | None = None, *, notify: Notifier | None = None) -> bool:
        """Resolve the incident; True when it was open, so that this call is the transition. ``notify`` queues
        the notifications of that transition in the same transaction."""
        now = self.clock()
        note = redact_text(resolution) if resolution else resolution
        with self.transaction() as db:
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
                self._enqueue_incident(db, incident_id, notify)
            return closed is not None

    @property
    def install_id(self) -> str:
        """A random id made when this database was created: no other database has it."""
        return str(self._scalar("SELECT value FROM meta WHERE key = 'install_id'"))

    def incident_key(self, incident_id: int) -> str:
        """The incident's identity outside this database (alerts, webhooks): ``<install id>-<id>``."""
        return f"{self.install_id}-{incident_id}"

    def incident(self, incident_id: int) -> dict[str, Any] | None:
        return self._one("SELECT * FROM incidents WHERE id = ?", (incident_id,))

    def last_resolved_incident(self, target: str) -> dict[str, Any] | None:
        return self._one(
            """SELECT * FROM incidents WHERE target = ? AND status = 'resolved'
                            ORDER BY closed_at DESC NULLS LAST, id DESC LIMIT 1""",
            (target,),
        )  # NULL: as SQLite

    def count_open_incidents(self) -> int:
        return int(self._scalar("SELECT count(*) FROM incidents WHERE status = 'open'"))

    def open_incidents(self, target: str | None = None) -> list[dict[str, Any]]:
        if target is None:
            return self._rows("SELECT * FROM incidents WHERE status = 'open' ORDER BY id")
        return self._rows("SELECT * FROM incidents WHERE status = 'open' AND target = ? ORDER BY id", (target,))

    def open_targets(self, targets: list[str]) -> set[str]:
        """Which of ``targets`` have an open incident: one statement, however many."""
        names, param = self.engine.names(targets)
        rows = self._rows(
            f"SELECT DISTINCT target FROM incidents WHERE status = 'open' AND target IN (SELECT value FROM {names})", (param,)
        )
        return {row["target"] for row in rows}

    def recent_incidents(self, status: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        if status is None:
            return self._rows("SELECT * FROM incidents ORDER BY id DESC LIMIT ?", (limit,))
        return self._rows("SELECT * FROM incidents WHERE status = ? ORDER BY id DESC LIMIT ?", (status, limit))

    def count_incidents(self) -> int:
        return int(self._scalar("SELECT count(*) FROM incidents"))

    def search_incidents(self, query: str, k: int = 5, exclude: int | None = None) -> list[dict[str, Any]]:
        """Full-text search over incident text by its rarest words, the newest ``WINDOW`` matches ranked
        (:mod:`monitor.store.words`): incidents with a resolution first, then by rank (lower is better:
        FTS5's bm25, or PostgreSQL's ts_rank negated)."""
        words = query_words(query)
        if not words:
            return []
        chosen, every = searched_words(words, *self.word_frequency(words))
        if self.shared:
            match = tsquery(chosen, every)
            return (
                self._rows(
                    f"""SELECT incidents.*, -ts_rank(newest.words, {pg_tsquery(match)}) AS rank FROM (
                        SELECT incident_id, words FROM incident_words WHERE words @@ {pg_tsquery(match)}
                        AND incident_id != ? ORDER BY incident_id DESC LIMIT ?) AS newest
                    JOIN incidents ON incidents.id = newest.incident_id
                    ORDER BY (resolution IS NOT NULL AND resolution != '') DESC, rank, id DESC LIMIT ?""",
                    (exclude or -1, search_words.WINDOW, k),
                )
                if match
                else []
            )
        return self._rows(
            """SELECT incidents.*, newest.rank AS rank FROM (
                   SELECT rowid AS id, bm25(incidents_fts) AS rank FROM incidents_fts
                   WHERE incidents_fts MATCH ? AND rowid != ? ORDER BY rowid DESC LIMIT ?) AS newest
               JOIN incidents ON incidents.id = newest.id
               ORDER BY (incidents.resolution IS NOT NULL AND incidents.resolution != '') DESC, newest.rank LIMIT ?""",
            (fts_query(chosen, every), exclude or -1, search_words.WINDOW, k),
        )

    def similar_incidents(self, target: str, pattern: str, k: int = 3, exclude: int | None = None) -> list[dict[str, Any]]:
        """Past incidents to recall: same target and pattern first, then same target, then text."""
        same = self._rows(
            """SELECT * FROM incidents WHERE target = ? AND id != ?
               ORDER BY (pattern = ?) DESC,
                        (resolution IS NOT NULL AND resolution != '') DESC, id DESC LIMIT ?""",
            (target, exclude or -1, pattern, k),
        )
        found = {row["id"] for row in same}
        if len(same) < k:
            for row in self.search_incidents(f"{target} {pattern}", k, exclude):
                if row["id"] not in found and len(same) < k:
                    same.append(row)
                    found.add(row["id"])
        return same

    def incidents_page(
        self,
        *,
        target: str | None = None,
        status: str | None = None,
        limit: int = 50,
        before: int | None = None,
        since: float | None = None,
    ) -> list[dict[str, Any]]:
        """Incidents newest first, with ids below ``before``; only ``target``'s or ``status``'s when given."""
        where = ["id < ?"]
        params: list[Any] = [before or NO_ID]
        for column, value in (("target", target), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            where.append("(closed_at IS NULL OR closed_at >= ?)")
            params.append(since)
        return self._rows(f"SELECT * FROM incidents WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?", (*params, limit))

    def incidents_by_id(self, ids: list[int]) -> list[dict[str, Any]]:
        if not ids:
            return []
        return self._rows(f"SELECT * FROM incidents WHERE id IN ({', '.join('?' * len(ids))}) ORDER BY id", ids)

    def incident_counts(self) -> list[dict[str, Any]]:
        """Incidents per target and pattern: how many, how many open, how many with a resolution note."""
        return self._rows(
            """SELECT target, pattern, count(*) AS incidents, count(*) FILTER (WHERE status = 'open') AS open,
                      count(*) FILTER (WHERE resolution IS NOT NULL AND resolution != '') AS resolved_with_note
               FROM incidents GROUP BY target, pattern ORDER BY incidents DESC, target, pattern"""
        )

    def resolution_notes(self, limit: int = 50) -> list[dict[str, Any]]:
        """The newest incidents with a resolution note: what recall puts in front of the agent first."""
        return self._rows(
            """SELECT id, target, pattern, root_cause, resolution, closed_at FROM incidents
               WHERE resolution IS NOT NULL AND resolution != '' ORDER BY id DESC LIMIT ?""",
            (limit,),
        )

    def audit_web_action(
        self, incident_id: int | None, action: str, *, ok: bool, detail: str, note: str | None = None, client: str | None = None
    ) -> int:
        with self.transaction() as db:
            cursor = db.execute(
                """INSERT INTO web_actions (at, incident_id, action, note, ok, detail, client)
                   VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id""",
                (self.clock(), incident_id, action[:32], redact_text(note)[:2000] if note else None, int(ok), detail[:500], client),
            )
            return inserted(cursor) or 0

    def web_actions(self, incident_id: int) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM web_actions WHERE incident_id = ? ORDER BY id", (incident_id,))

    def add_incident_link(self, link: Link) -> Link:
        """Store a person's word on two incidents, replacing an earlier word on the same two; the link as stored
        (its note redacted)."""
        with self.transaction() as db:
            row = db.execute(
                f"""INSERT INTO incident_links ({", ".join(LINK_COLUMNS)})
                   VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (incident_id, other_id) DO UPDATE SET verdict = excluded.verdict,
                   signal = excluded.signal, actor = excluded.actor, note = excluded.note, at = excluded.at
                   RETURNING {", ".join(LINK_COLUMNS)}""",
                (link.incident, link.other, link.verdict, link.signal, link.actor, redact_text(link.note) if link.note else None, link.at),
            ).fetchone()
            return _link(dict(zip(LINK_COLUMNS, row, strict=True)))

    def incident_links(self, ids: Sequence[int]) -> list[Link]:
        """Every link either end of which is one of ``ids``, oldest word first."""
        found: list[Link] = []
        for batch in chunks(sorted(set(ids))):
            marks = ", ".join("?" * len(batch))
            rows = self._rows(
                f"""SELECT {", ".join(LINK_COLUMNS)} FROM incident_links
                    WHERE incident_id IN ({marks}) OR other_id IN ({marks})""",
                (*batch, *batch),
            )
            found += [_link(row) for row in rows]
        unique = {(link.incident, link.other): link for link in found}  # a link with both ends in two batches
        return sorted(unique.values(), key=lambda link: (link.at, link.incident, link.other))

    def drop_web_indexes(self) -> None:
        """For bench/pages.py: the pages without the indexes migration 9 added."""
        with self.transaction() as db:
            for name in WEB_INDEXES:
                db.execute(f"DROP INDEX IF EXISTS {name}")

    def create_web_indexes(self) -> None:
        with self.transaction() as db:
            for name, sql in WEB_INDEXES.items():
                db.execute(f"CREATE INDEX IF NOT EXISTS {name} ON {sql}")
            db.execute("ANALYZE")


def one_open(db: Any, row: dict[str, Any]) -> dict[str, Any]:
    """An imported open incident of a target that has one open already comes in resolved, and says so."""
    if (
        row.get("status", "open") != "open"
        or db.execute("SELECT 1 FROM incidents WHERE target = ? AND status = 'open'", (row["target"],)).fetchone() is None
    ):
        return row
    note = "imported as resolved: this target already had an open incident"
    return {
        **row,
        "status": "resolved",
        "closed_at": row.get("updated_at") or row["opened_at"],
        "notes": "\n".join(n for n in (row.get("notes"), note) if n),
    }


def _link(row: dict[str, Any]) -> Link:
    return Link(
        int(row["incident_id"]), int(row["other_id"]), row["verdict"], str(row["signal"]), str(row["actor"]), row["note"], float(row["at"])
    )
