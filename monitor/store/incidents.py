"""Incidents: opened and resolved once (constraints, not locks), searched by their text, and what the web UI did to them."""

from __future__ import annotations

import re
from typing import Any

from monitor.core.urls import redact_text
from monitor.store import schema
from monitor.store.base import NO_ID, inserted
from monitor.store.outbox import Notifier, Outbox
from monitor.store.schema import WEB_INDEXES

# Full-text search looks for the rarest words of a query. A word held by more than COMMON_SHARE of the
# incidents (and by more than COMMON_MIN) says little of which one is meant, and matching it made the
# engine rank most of the table: over 100,000 incidents 225-330 ms on SQLite and 10 s on PostgreSQL a
# search (bench/recall.py), where bm25 weighed such words near zero anyway.
COMMON_SHARE = 0.05
COMMON_MIN = 500
MAX_WORDS = 12  # the rarest words of a query searched for (an evidence text has 20 to 60)
ALL_OF = 3  # when every word is common: incidents holding all of the rarest few
WINDOW = 200  # the best ranked matches, among which those with a resolution come first


def query_words(text: str) -> list[str]:
    """The words of free text, lower case, once each (``\\w``: données and 超时 are words too)."""
    return list(dict.fromkeys(re.findall(r"\w{2,}", text.lower())))


def searched_words(words: list[str], frequency: dict[str, int], total: int) -> tuple[list[str], bool]:
    """The words a search looks for, rarest first, and whether an incident must hold all of them: the
    ``MAX_WORDS`` rarest that are not common; when every word is common, the ``ALL_OF`` rarest, together.
    ``frequency``: incidents holding each word (absent: none, or not known to be common)."""
    common = max(COMMON_SHARE * total, COMMON_MIN)
    rarest = sorted(words, key=lambda word: frequency.get(word, 0))
    rare = [word for word in rarest if frequency.get(word, 0) <= common]
    return (rare[:MAX_WORDS], False) if rare else (rarest[:ALL_OF], True)


def fts_query(words: list[str], every: bool = False) -> str:
    """A safe FTS5 query: any (or ``every``) of ``words``, each quoted (FTS5 reads a quoted ``job_missing``
    as the phrase "job missing")."""
    return (" AND " if every else " OR ").join(f'"{w}"' for w in words)


def tsquery(words: list[str], every: bool = False) -> str:
    """The same as a PostgreSQL ``tsquery``; ``_`` separates words, as punctuation does in the index
    (``schema_pg.PG_TEXT_OF``), so ``job_missing`` is the phrase job <-> missing."""
    terms = [" <-> ".join(f"'{part}'" for part in tokens(word)) for word in words]
    return (" & " if every else " | ").join(f"({term})" for term in terms if term)


def tokens(word: str) -> list[str]:
    """The index's words in a query word (``job_missing``: job, missing)."""
    return re.findall(r"[^\W_]+", word)


class Incidents(Outbox):
    """Incidents, their full-text search, and the web UI's actions on them."""

    def open_incident(self, target: str, pattern: str, summary: str, severity: str = "critical",
                      silenced: bool = False, root_cause: str | None = None) -> int:
        """A new open incident; ``root_cause`` is the detectors' literal reading until a diagnosis replaces it."""
        now = self.clock()
        with self.transaction() as db:
            cursor = db.execute(
                """INSERT INTO incidents (target, pattern, severity, status, opened_at, updated_at,
                   summary, silenced, root_cause) VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?) RETURNING id""",
                (target, pattern, severity, now, now, summary, int(silenced), root_cause),
            )
            return inserted(cursor) or 0

    def open_incident_unless_open(self, target: str, pattern: str, summary: str, severity: str = "critical",
                                  silenced: bool = False, root_cause: str | None = None,
                                  notify: Notifier | None = None) -> int | None:
        """Like :meth:`open_incident`, but None (and nothing written) when the target has an open incident.

        ``notify`` makes the first notifications of the new incident, queued in the same transaction:
        a crash never leaves an incident that nobody was told about.
        """
        now = self.clock()
        with self.transaction() as db:
            cursor = db.execute(
                """INSERT INTO incidents (target, pattern, severity, status, opened_at, updated_at,
                   summary, silenced, root_cause) VALUES (?, ?, ?, 'open', ?, ?, ?, ?, ?)
                   ON CONFLICT (target) WHERE status = 'open' DO NOTHING RETURNING id""",
                (target, pattern, severity, now, now, summary, int(silenced), root_cause),
            )
            incident_id = inserted(cursor)
            if incident_id is None:
                return None
            if notify is not None:
                self._enqueue_incident(db, incident_id, notify)
            return incident_id

    def update_incident(self, incident_id: int, *, only_open: bool = False, expect: dict[str, Any] | None = None,
                        notify: Notifier | None = None, **fields: Any) -> bool:
        """Set fields; True when a row changed. ``only_open`` and ``expect`` (field values the row must
        still have) make it a compare-and-set, so of two writers making the same change only one does.
        ``notify`` queues the notifications of a change that was made, in the same transaction."""
        allowed = {"pattern", "severity", "summary", "diagnosis", "suspected_cause", "resolution",
                   "notes", "agent_state", "silenced", "root_cause", "related_incident", "confidence"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"cannot update incident fields {sorted(unknown)}")
        fields["updated_at"] = self.clock()
        assignments = ", ".join(f"{name} = ?" for name in fields)
        expect = expect or {}
        if set(expect) - allowed:
            raise ValueError(f"cannot compare incident fields {sorted(set(expect) - allowed)}")
        where = " AND ".join(["id = ?", *(["status = 'open'"] if only_open else []), *(f"{n} IS NOT DISTINCT FROM ?" for n in expect)])
        with self.transaction() as db:
            cursor = db.execute(f"UPDATE incidents SET {assignments} WHERE {where}",
                                (*fields.values(), incident_id, *expect.values()))
            changed = bool(cursor.rowcount == 1)
            if changed and notify is not None:
                self._enqueue_incident(db, incident_id, notify)
            return changed

    def append_incident_note(self, incident_id: int, note: str) -> None:
        with self.transaction() as db:
            db.execute(
                """UPDATE incidents SET notes = trim(coalesce(notes, '') || ? || ?),
                   updated_at = ? WHERE id = ?""",
                ("\n", redact_text(note), self.clock(), incident_id),
            )

    def close_incident(self, incident_id: int, resolution: str | None = None, *,
                       notify: Notifier | None = None) -> bool:
        """Resolve the incident; True when it was open, so that this call is the transition. ``notify`` queues
        the notifications of that transition in the same transaction."""
        now = self.clock()
        note = redact_text(resolution) if resolution else resolution
        with self.transaction() as db:
            closed = inserted(db.execute(
                """UPDATE incidents SET status = 'resolved', closed_at = ?, updated_at = ?,
                   resolution = coalesce(?, resolution) WHERE id = ? AND status = 'open' RETURNING id""",
                (now, now, note, incident_id)))
            if closed is None:  # resolved already: only a new resolution note changes it
                db.execute("UPDATE incidents SET updated_at = ?, resolution = coalesce(?, resolution) WHERE id = ?",
                           (now, note, incident_id))
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
        return self._one("""SELECT * FROM incidents WHERE target = ? AND status = 'resolved'
                            ORDER BY closed_at DESC NULLS LAST, id DESC LIMIT 1""", (target,))  # NULL: as SQLite

    def count_open_incidents(self) -> int:
        return int(self._scalar("SELECT count(*) FROM incidents WHERE status = 'open'"))

    def open_incidents(self, target: str | None = None) -> list[dict[str, Any]]:
        if target is None:
            return self._rows("SELECT * FROM incidents WHERE status = 'open' ORDER BY id")
        return self._rows("SELECT * FROM incidents WHERE status = 'open' AND target = ? ORDER BY id", (target,))

    def incidents(self, status: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        if status is None:
            return self._rows("SELECT * FROM incidents ORDER BY id DESC LIMIT ?", (limit,))
        return self._rows("SELECT * FROM incidents WHERE status = ? ORDER BY id DESC LIMIT ?", (status, limit))

    def count_incidents(self) -> int:
        return int(self._scalar("SELECT count(*) FROM incidents"))

    def search_incidents(self, query: str, k: int = 5, exclude: int | None = None) -> list[dict[str, Any]]:
        """Full-text search over incident text, by its rarest words (:func:`searched_words`): among the
        ``WINDOW`` best ranked, incidents with a resolution first, then by rank (lower is better: FTS5's
        bm25, or PostgreSQL's ts_rank negated)."""
        words = query_words(query)
        if not words:
            return []
        chosen, every = searched_words(words, *self._word_frequency(words))
        if self.shared:
            match = tsquery(chosen, every)
            return self._rows(
                """SELECT incidents.*, -top.score AS rank FROM (
                       SELECT incident_id, ts_rank(words, q) AS score FROM incident_words, to_tsquery('simple', ?) AS q
                       WHERE words @@ q AND incident_id != ? ORDER BY score DESC, incident_id DESC LIMIT ?) AS top
                   JOIN incidents ON incidents.id = top.incident_id
                   ORDER BY (resolution IS NOT NULL AND resolution != '') DESC, rank, id DESC LIMIT ?""",
                (match, exclude or -1, WINDOW, k)) if match else []
        return self._rows(
            """SELECT incidents.*, top.rank AS rank FROM (
                   SELECT rowid AS id, rank FROM incidents_fts WHERE incidents_fts MATCH ? AND rowid != ?
                   ORDER BY rank LIMIT ?) AS top
               JOIN incidents ON incidents.id = top.id
               ORDER BY (incidents.resolution IS NOT NULL AND incidents.resolution != '') DESC, top.rank LIMIT ?""",
            (fts_query(chosen, every), exclude or -1, WINDOW, k))

    def _word_frequency(self, words: list[str]) -> tuple[dict[str, int], int]:
        """How many incidents hold each of ``words`` (a phrase: its rarest word), and how many there are.
        SQLite counts exactly (FTS5's vocabulary); PostgreSQL estimates from the statistics ANALYZE keeps
        of the words' column (``pg_stats``: the most common words and their shares), where a word not
        listed is rare."""
        parts = sorted({part for word in words for part in tokens(word)})
        names, param = self.engine.names(parts)
        if self.shared:
            total = float(self._scalar("SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = to_regclass('incident_words')") or 0)
            shares = self._rows(
                f"""SELECT word, share FROM pg_stats, unnest(most_common_elems::text::text[], most_common_elem_freqs)
                        AS common(word, share)
                    WHERE schemaname = current_schema() AND tablename = 'incident_words' AND attname = 'words'
                    AND word IN (SELECT value FROM {names})""", (param,))
            held = {row["word"]: round(float(row["share"]) * total) for row in shares}
        else:
            total = int(self._scalar("SELECT coalesce(max(id) - min(id) + 1, 0) FROM incidents"))
            held = {row["term"]: int(row["doc"]) for row in self._rows(
                f"SELECT term, doc FROM {schema.FTS_VOCABULARY} WHERE term IN (SELECT value FROM {names})", (param,))}
        return {word: min((held.get(part, 0) for part in tokens(word)), default=0) for word in words}, int(total)

    def similar_incidents(self, target: str, pattern: str, k: int = 3,
                          exclude: int | None = None) -> list[dict[str, Any]]:
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

    def incidents_page(self, *, target: str | None = None, status: str | None = None, limit: int = 50,
                       before: int | None = None, since: float | None = None) -> list[dict[str, Any]]:
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
        return self._rows(f"SELECT * FROM incidents WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?",
                          (*params, limit))

    def incidents_by_id(self, ids: list[int]) -> list[dict[str, Any]]:
        if not ids:
            return []
        return self._rows(f"SELECT * FROM incidents WHERE id IN ({', '.join('?' * len(ids))}) ORDER BY id", ids)

    def incident_counts(self) -> list[dict[str, Any]]:
        """Incidents per target and pattern: how many, how many open, how many with a resolution note."""
        return self._rows(
            """SELECT target, pattern, count(*) AS incidents, count(*) FILTER (WHERE status = 'open') AS open,
                      count(*) FILTER (WHERE resolution IS NOT NULL AND resolution != '') AS resolved_with_note
               FROM incidents GROUP BY target, pattern ORDER BY incidents DESC, target, pattern""")

    def resolution_notes(self, limit: int = 50) -> list[dict[str, Any]]:
        """The newest incidents with a resolution note: what recall puts in front of the agent first."""
        return self._rows(
            """SELECT id, target, pattern, root_cause, resolution, closed_at FROM incidents
               WHERE resolution IS NOT NULL AND resolution != '' ORDER BY id DESC LIMIT ?""", (limit,))

    def audit_web_action(self, incident_id: int | None, action: str, *, ok: bool, detail: str,
                         note: str | None = None, client: str | None = None) -> int:
        with self.transaction() as db:
            cursor = db.execute(
                """INSERT INTO web_actions (at, incident_id, action, note, ok, detail, client)
                   VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id""",
                (self.clock(), incident_id, action[:32], redact_text(note)[:2000] if note else None, int(ok),
                 detail[:500], client))
            return inserted(cursor) or 0

    def web_actions(self, incident_id: int) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM web_actions WHERE incident_id = ? ORDER BY id", (incident_id,))

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
    if row.get("status", "open") != "open" or db.execute(
            "SELECT 1 FROM incidents WHERE target = ? AND status = 'open'", (row["target"],)).fetchone() is None:
        return row
    note = "imported as resolved: this target already had an open incident"
    return {**row, "status": "resolved", "closed_at": row.get("updated_at") or row["opened_at"],
            "notes": "\n".join(n for n in (row.get("notes"), note) if n)}
