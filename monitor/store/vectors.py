"""Incident vectors: stored beside the incidents, searched by brute force in this process's memory.

Each incident has at most one vector (``incident_vectors``), with the name of the model that made it and
a digest of the text it was made from. Triggers queue an incident to be embedded (``embed_queue``) when it
is written and when its embedded text changes (``schema.EMBEDDED_TEXT``), with a version that each change
raises: a vector saved for an older version leaves the incident queued.
Every write takes the next ``seq``, writers one at a time (SQLite's write lock, or a table lock on
PostgreSQL), so a reader that has read up to some ``seq`` has everything below it.

Search (:meth:`IncidentVectors.vector_backend`): **numpy**, on SQLite and PostgreSQL alike. Each model's
vectors are one float32 matrix in memory (150 MB per 100,000 of 384 dimensions), read whole once and then
only the rows written since (by ``seq``: one indexed query, nothing when nothing changed). Up to 20,000
vectors a query is one matrix-vector product (under 4 ms). Above, that product reads too much memory
(24 to 34 ms over 100,000 here), so the sign bits of each vector around the mean (48 bytes) choose 40
candidates per result asked, scored exactly: about 7 ms over 100,000, the same top 20 as exact search
on e5-like vectors (tests/test_vectors.py, bench/recall.py).
Not used, as measured here: sqlite-vec 0.1.9 (needs a ``sqlite3`` that loads extensions, which the
pyenv Python has not; in Debian's python3 its brute-force KNN over 100,000 × 384 took 240 ms a query),
and pgvector (Debian bookworm's server has no package for it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from monitor.core.incidents import ToEmbed
from monitor.store.base import Part, Writing
from monitor.store.rows import to_embed

if TYPE_CHECKING:  # numpy is imported where vectors are handled, not by every process that opens the store
    from monitor.store.index import Vector, VectorIndex


class Embedded(NamedTuple):
    """One incident's new vector: ``text_hash``, a digest of the text it was made from; ``version``, the
    ``embed_version`` :meth:`IncidentVectors.incidents_to_embed` gave (a change after it is embedded again)."""

    incident_id: int
    vector: Vector
    text_hash: str = ""
    version: int | None = None


UPSERT = """INSERT INTO incident_vectors (incident_id, model, dim, vector, text_hash, embedded_at, seq)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (incident_id) DO UPDATE SET model = excluded.model, dim = excluded.dim,
                vector = excluded.vector, text_hash = excluded.text_hash, embedded_at = excluded.embedded_at,
                seq = excluded.seq"""
# Incidents (the ids in ``{ids}``) with their queued version and the digest of their text's vector of the model.
TO_EMBED = """SELECT incidents.*, q.version AS embed_version, CASE WHEN v.model = ? THEN v.text_hash END AS embedded_hash
              FROM incidents LEFT JOIN embed_queue AS q ON q.incident_id = incidents.id
              LEFT JOIN incident_vectors AS v ON v.incident_id = incidents.id
              WHERE incidents.id IN ({ids}) ORDER BY incidents.id DESC LIMIT ?"""
# Incidents embedded by a model other than the first parameter's: two ranges of the model index.
OTHER_MODELS = """SELECT incident_id FROM (
                      SELECT incident_id FROM incident_vectors WHERE model < ? ORDER BY model DESC LIMIT ?) AS before
                  UNION SELECT incident_id FROM (
                      SELECT incident_id FROM incident_vectors WHERE model > ? ORDER BY model LIMIT ?) AS after"""
# Some of them queued (SQLite reads ``ON CONFLICT`` after a SELECT only with a WHERE before it).
REQUEUE = f"""INSERT INTO embed_queue (incident_id, version) SELECT incident_id, 1 FROM ({OTHER_MODELS}) AS other
              WHERE true ON CONFLICT (incident_id) DO NOTHING"""
# The newest queued incidents nobody holds (or this replica held), claimed by this replica until a time.
CLAIM = """UPDATE embed_queue SET claimed_by = ?, claimed_until = ? WHERE incident_id IN (
               SELECT incident_id FROM embed_queue WHERE claimed_until IS NULL OR claimed_until < ? OR claimed_by = ?
               ORDER BY incident_id DESC LIMIT ?{skip_locked})"""
# Done with a queued incident, unless its text changed again since it was read (a higher version).
DEQUEUE = "DELETE FROM embed_queue WHERE incident_id = ? AND version <= coalesce(?, version)"


class VectorIndexes(dict[str, "VectorIndex"]):
    """Each model's index in memory: one per database, which the vectors part and its read-only twin share."""


class VectorsReader(Part):
    """Incidents' vectors as recall by meaning reads them, searched by :meth:`nearest`."""

    @property
    def _vector_indexes(self) -> VectorIndexes:
        return self._state(VectorIndexes)

    def vector_backend(self) -> str:
        """How :meth:`nearest` searches: ``numpy`` (see the module's docstring for why not sqlite-vec or pgvector)."""
        return "numpy"

    def incidents_to_embed(self, model: str, limit: int = 64) -> list[ToEmbed]:
        """Incidents to embed with ``model``, newest first: new ones and those whose text changed (queued by
        triggers), and those embedded by another model. Each has ``embed_version`` (to give back with its
        vector) and ``embedded_hash``, the digest of the text its vector of ``model`` was made from, if any.
        Reads the queue and two ranges of the model index (ordered, so that PostgreSQL takes the index even
        with stale statistics; ``!=`` would scan it), never every incident: cheap when nothing changed."""
        return to_embed(
            self._rows(
                TO_EMBED.format(
                    ids=f"""
            SELECT incident_id FROM (SELECT incident_id FROM embed_queue ORDER BY incident_id DESC LIMIT ?) AS queued
            UNION {OTHER_MODELS}"""
                ),
                (model, limit, model, limit, model, limit, limit),
            )
        )

    def embed_pending(self, model: str) -> int:
        """Incidents waiting for a vector of ``model``: queued ones, and those embedded by another model."""
        return int(
            self._scalar(
                """SELECT (SELECT count(*) FROM embed_queue)
                      + (SELECT count(*) FROM incident_vectors WHERE model < ?)
                      + (SELECT count(*) FROM incident_vectors WHERE model > ?)""",
                (model, model),
            )
        )

    def count_vectors(self, model: str) -> int:
        return int(self._scalar("SELECT count(*) FROM incident_vectors WHERE model = ?", (model,)))

    def nearest(self, model: str, query: Vector, k: int = 5, exclude: int | None = None) -> list[tuple[int, float]]:
        """The ``k`` incidents nearest to ``query`` among ``model``'s vectors: (incident id, cosine), best first."""
        import numpy

        index = self._vector_index(model)
        with index.lock:
            self._refresh(index)
            while True:
                found = index.nearest(numpy.asarray(query, dtype=numpy.float32), k, exclude)
                gone = self._deleted([incident for incident, _ in found])
                if not gone:
                    return found
                index.forget(gone)

    def cosines(self, model: str, query: Vector, ids: Sequence[int]) -> dict[int, float]:
        """The cosine of ``query`` with the stored vectors of ``model`` of those of ``ids`` that have one:
        recall's candidates found by other means than :meth:`nearest`, without embedding them again."""
        import numpy

        index = self._vector_index(model)
        with index.lock:
            self._refresh(index)
            return index.cosines(numpy.asarray(query, dtype=numpy.float32), ids)

    def _deleted(self, ids: list[int]) -> set[int]:
        """Which of ``ids`` are no longer incidents: forgetting deleted them (and their vectors, which no
        ``seq`` announces), here or in another process."""
        if not ids:
            return set()
        left = self._rows(f"SELECT id FROM incidents WHERE id IN ({', '.join('?' * len(ids))})", ids)
        return set(ids) - {int(row["id"]) for row in left}

    def _vector_index(self, model: str) -> VectorIndex:
        with self._lock:
            from monitor.store.index import VectorIndex

            return self._vector_indexes.setdefault(model, VectorIndex(model))

    def _refresh(self, index: VectorIndex) -> None:
        with self._lock:
            cursor = self._engine.execute(
                "SELECT incident_id, model, dim, vector, seq FROM incident_vectors WHERE seq > ? ORDER BY seq", (index.seq,)
            )
            rows = cursor.fetchall()
        index.apply(rows)


class VectorsPart(Writing, VectorsReader):
    """Incidents' vectors, written by the indexer."""

    def save_vectors(self, model: str, rows: Sequence[Embedded | tuple[int, Vector] | tuple[int, Vector, str, int | None]]) -> int:
        """Store vectors ``model`` made, one per incident (a vector of another model is replaced); how many."""
        import numpy

        embedded = [Embedded(*row) for row in rows]
        if not embedded:
            return 0
        now = self._clock()
        with self._transaction() as db:
            self._engine.lock_table(db, "incident_vectors")  # seq is taken in commit order
            first = int(db.execute("SELECT coalesce(max(seq), 0) FROM incident_vectors").fetchone()[0]) + 1
            db.executemany(
                UPSERT,
                [
                    (
                        row.incident_id,
                        model,
                        len(row.vector),
                        numpy.asarray(row.vector, dtype="<f4").tobytes(),
                        row.text_hash,
                        now,
                        first + i,
                    )
                    for i, row in enumerate(embedded)
                ],
            )
            db.executemany(DEQUEUE, [(row.incident_id, row.version) for row in embedded])
        return len(embedded)

    def keep_vectors(self, model: str, rows: Sequence[tuple[int, int | None]]) -> None:
        """Queued incidents (id, ``embed_version``) whose embedded text is unchanged: their vectors stay."""
        with self._transaction() as db:
            db.executemany(DEQUEUE, rows)

    def claim_incidents_to_embed(self, model: str, limit: int = 64, *, lease: float = 60.0) -> list[ToEmbed]:
        """As :meth:`incidents_to_embed`, for this store's replica alone: up to ``limit`` queued incidents are
        claimed for ``lease`` seconds, newest first, passing over those another replica claimed and has not
        let lapse (a replica that stopped mid-way lets its claims lapse: another takes them then). Incidents
        embedded by another model are queued first, so they are claimed too."""
        now = self._clock()
        with self._transaction() as db:
            db.execute(REQUEUE, (model, limit, model, limit))
            db.execute(CLAIM.format(skip_locked=self._engine.skip_locked), (self._replica, now + lease, now, self._replica, limit))
        return to_embed(
            self._rows(
                TO_EMBED.format(ids="SELECT incident_id FROM embed_queue WHERE claimed_by = ? AND claimed_until > ?"),
                (model, self._replica, now, limit),
            )
        )
