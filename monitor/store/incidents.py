"""Incidents as read: searched by their text, and what the web UI did to them (they are written by
:mod:`monitor.store.writes`: opened and resolved once, by constraints, not locks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from monitor.core.audit import WebAction
from monitor.core.incidents import Incident, IncidentCount, Link, ResolutionNote
from monitor.core.urls import redact_text
from monitor.store import words as search_words
from monitor.store.base import NO_ID, Writing, inserted
from monitor.store.importance import chunks
from monitor.store.rows import columns, many, maybe
from monitor.store.schema import WEB_INDEXES
from monitor.store.words import Words, fts_query, pg_tsquery, query_words, searched_words, tsquery

LINK_COLUMNS = ("incident_id", "other_id", "verdict", "signal", "actor", "note", "at")  # incident_links' (schema.LINKS_TABLE)


class IncidentsReader(Words):
    """Incidents as pages, alerts, recall and the CLI read them, and their full-text search."""

    @property
    def install_id(self) -> str:
        """A random id made when this database was created: no other database has it."""
        return str(self._scalar("SELECT value FROM meta WHERE key = 'install_id'"))

    def incident_key(self, incident_id: int) -> str:
        """The incident's identity outside this database (alerts, webhooks): ``<install id>-<id>``."""
        return f"{self.install_id}-{incident_id}"

    def incident(self, incident_id: int) -> Incident | None:
        return maybe(Incident, self._one("SELECT * FROM incidents WHERE id = ?", (incident_id,)))

    def last_resolved_incident(self, target: str) -> Incident | None:
        return maybe(
            Incident,
            self._one(
                """SELECT * FROM incidents WHERE target = ? AND status = 'resolved'
                            ORDER BY closed_at DESC NULLS LAST, id DESC LIMIT 1""",
                (target,),
            ),
        )  # NULL: as SQLite

    def count_open_incidents(self) -> int:
        return int(self._scalar("SELECT count(*) FROM incidents WHERE status = 'open'"))

    def open_incidents(self, target: str | None = None) -> list[Incident]:
        if target is None:
            return many(Incident, self._rows("SELECT * FROM incidents WHERE status = 'open' ORDER BY id"))
        return many(Incident, self._rows("SELECT * FROM incidents WHERE status = 'open' AND target = ? ORDER BY id", (target,)))

    def open_targets(self, targets: list[str]) -> set[str]:
        """Which of ``targets`` have an open incident: one statement, however many."""
        names, param = self._engine.names(targets)
        rows = self._rows(
            f"SELECT DISTINCT target FROM incidents WHERE status = 'open' AND target IN (SELECT value FROM {names})", (param,)
        )
        return {row["target"] for row in rows}

    def recent_incidents(self, status: str | None = None, limit: int = 50) -> list[Incident]:
        if status is None:
            return many(Incident, self._rows("SELECT * FROM incidents ORDER BY id DESC LIMIT ?", (limit,)))
        return many(Incident, self._rows("SELECT * FROM incidents WHERE status = ? ORDER BY id DESC LIMIT ?", (status, limit)))

    def count_incidents(self) -> int:
        return int(self._scalar("SELECT count(*) FROM incidents"))

    def search_incidents(self, query: str, k: int = 5, exclude: int | None = None) -> list[Incident]:
        """Full-text search over incident text by its rarest words, the newest ``WINDOW`` matches ranked
        (:mod:`monitor.store.words`): incidents with a resolution first, then by rank (lower is better:
        FTS5's bm25, or PostgreSQL's ts_rank negated)."""
        words = query_words(query)
        if not words:
            return []
        chosen, every = searched_words(words, *self.word_frequency(words))
        if self._shared:
            match = tsquery(chosen, every)
            return (
                many(
                    Incident,
                    self._rows(
                        f"""SELECT incidents.*, -ts_rank(newest.words, {pg_tsquery(match)}) AS rank FROM (
                        SELECT incident_id, words FROM incident_words WHERE words @@ {pg_tsquery(match)}
                        AND incident_id != ? ORDER BY incident_id DESC LIMIT ?) AS newest
                    JOIN incidents ON incidents.id = newest.incident_id
                    ORDER BY (resolution IS NOT NULL AND resolution != '') DESC, rank, id DESC LIMIT ?""",
                        (exclude or -1, search_words.WINDOW, k),
                    ),
                )
                if match
                else []
            )
        return many(
            Incident,
            self._rows(
                """SELECT incidents.*, newest.rank AS rank FROM (
                   SELECT rowid AS id, bm25(incidents_fts) AS rank FROM incidents_fts
                   WHERE incidents_fts MATCH ? AND rowid != ? ORDER BY rowid DESC LIMIT ?) AS newest
               JOIN incidents ON incidents.id = newest.id
               ORDER BY (incidents.resolution IS NOT NULL AND incidents.resolution != '') DESC, newest.rank LIMIT ?""",
                (fts_query(chosen, every), exclude or -1, search_words.WINDOW, k),
            ),
        )

    def similar_incidents(self, target: str, pattern: str, k: int = 3, exclude: int | None = None) -> list[Incident]:
        """Past incidents to recall: same target and pattern first, then same target, then text."""
        same = many(
            Incident,
            self._rows(
                """SELECT * FROM incidents WHERE target = ? AND id != ?
               ORDER BY (pattern = ?) DESC,
                        (resolution IS NOT NULL AND resolution != '') DESC, id DESC LIMIT ?""",
                (target, exclude or -1, pattern, k),
            ),
        )
        found = {incident.id for incident in same}
        if len(same) < k:
            for incident in self.search_incidents(f"{target} {pattern}", k, exclude):
                if incident.id not in found and len(same) < k:
                    same.append(incident)
                    found.add(incident.id)
        return same

    def incidents_page(
        self,
        *,
        target: str | None = None,
        status: str | None = None,
        limit: int = 50,
        before: int | None = None,
        since: float | None = None,
    ) -> list[Incident]:
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
        return many(Incident, self._rows(f"SELECT * FROM incidents WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?", (*params, limit)))

    def incidents_by_id(self, ids: list[int]) -> list[Incident]:
        if not ids:
            return []
        return many(Incident, self._rows(f"SELECT * FROM incidents WHERE id IN ({', '.join('?' * len(ids))}) ORDER BY id", ids))

    def incident_counts(self) -> list[IncidentCount]:
        """Incidents per target and pattern: how many, how many open, how many with a resolution note."""
        return many(
            IncidentCount,
            self._rows(
                """SELECT target, pattern, count(*) AS incidents, count(*) FILTER (WHERE status = 'open') AS open,
                          count(*) FILTER (WHERE resolution IS NOT NULL AND resolution != '') AS resolved_with_note
                   FROM incidents GROUP BY target, pattern ORDER BY incidents DESC, target, pattern"""
            ),
        )

    def resolution_notes(self, limit: int = 50) -> list[ResolutionNote]:
        """The newest incidents with a resolution note: what recall puts in front of the agent first."""
        return many(
            ResolutionNote,
            self._rows(
                f"""SELECT {", ".join(columns(ResolutionNote))} FROM incidents
                    WHERE resolution IS NOT NULL AND resolution != '' ORDER BY id DESC LIMIT ?""",
                (limit,),
            ),
        )

    def web_actions(self, incident_id: int) -> list[WebAction]:
        return many(WebAction, self._rows("SELECT * FROM web_actions WHERE incident_id = ? ORDER BY id", (incident_id,)))

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
            found += [as_link(row) for row in rows]
        unique = {(link.incident, link.other): link for link in found}  # a link with both ends in two batches
        return sorted(unique.values(), key=lambda link: (link.at, link.incident, link.other))


class IncidentsPart(Writing, IncidentsReader):
    """Incidents' part besides their changes: the web UI's audit of its actions on them, and the web's indexes.
    Incidents change only through the incident writer's part (:class:`monitor.store.writes.IncidentWrites`)."""

    def audit_web_action(
        self, incident_id: int | None, action: str, *, ok: bool, detail: str, note: str | None = None, client: str | None = None
    ) -> int:
        with self._transaction() as db:
            cursor = db.execute(
                """INSERT INTO web_actions (at, incident_id, action, note, ok, detail, client)
                   VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id""",
                (self._clock(), incident_id, action[:32], redact_text(note)[:2000] if note else None, int(ok), detail[:500], client),
            )
            return inserted(cursor) or 0

    def drop_web_indexes(self) -> None:
        """For bench/pages.py: the pages without the indexes migration 9 added."""
        with self._transaction() as db:
            for name in WEB_INDEXES:
                db.execute(f"DROP INDEX IF EXISTS {name}")

    def create_web_indexes(self) -> None:
        with self._transaction() as db:
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


def as_link(row: dict[str, Any]) -> Link:
    return Link(
        int(row["incident_id"]), int(row["other_id"]), row["verdict"], str(row["signal"]), str(row["actor"]), row["note"], float(row["at"])
    )
