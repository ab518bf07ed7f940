"""Incident vectors: stored beside the incidents, searched by brute force in this process's memory.

Each incident has at most one vector (``incident_vectors``), with the name of the model that made it, a
digest of the text it was made from, and the incident's ``updated_at`` as it was then: an incident whose
diagnosis or resolution changed since is handed out again by :meth:`IncidentVectors.incidents_to_embed`.
Every write takes the next ``seq``, writers one at a time (SQLite's write lock, or a table lock on
PostgreSQL), so a reader that has read up to some ``seq`` has everything below it.

Search (:meth:`IncidentVectors.vector_backend`): **numpy**, on SQLite and PostgreSQL alike. Each model's
vectors are one float32 matrix in memory, read whole once and then only the rows written since (by
``seq``: one indexed query, nothing when nothing changed), so a query is one matrix-vector product:
about 8 ms over 100,000 × 384 on one core here (bench/recall.py), 150 MB of memory per 100,000.
Not used, as measured here: sqlite-vec 0.1.9 (needs a ``sqlite3`` that loads extensions, which the
pyenv Python has not; in Debian's python3 its brute-force KNN over 100,000 × 384 took 240 ms a query),
and pgvector (Debian bookworm's server has no package for it).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from monitor.store.base import Base

Vector = NDArray[np.float32]


class Embedded(NamedTuple):
    """One incident's new vector; ``text_hash`` and ``updated_at`` say which text it was made from (the
    incident's ``updated_at`` when it was read: a change after that is embedded again)."""

    incident_id: int
    vector: Vector
    text_hash: str = ""
    updated_at: float | None = None


class VectorIndex:
    """One model's vectors in memory: incident ids, a float32 matrix, and the last ``seq`` read."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.seq = 0
        self.dim = 0
        self.ids = np.zeros(0, dtype=np.int64)
        self.matrix = np.zeros((0, 0), dtype=np.float32)
        self.size = 0
        self.position: dict[int, int] = {}
        self.lock = threading.Lock()

    def apply(self, rows: Sequence[tuple[int, str, int, bytes, int]]) -> None:
        """Rows written since the last read (incident id, model, dim, vector, seq), in ``seq`` order: this
        model's are added or replaced; an incident now embedded by another model leaves."""
        for incident_id, model, dim, blob, seq in rows:
            self.seq = max(self.seq, int(seq))
            if model == self.model and (self.dim in (0, dim)):
                self._put(int(incident_id), np.frombuffer(blob, dtype="<f4", count=dim))
            else:
                self._drop(int(incident_id))

    def _put(self, incident_id: int, vector: Vector) -> None:
        if self.dim == 0:
            self.dim = len(vector)
            self.matrix = np.zeros((0, self.dim), dtype=np.float32)
        where = self.position.get(incident_id)
        if where is None:
            where = self.size
            self._grow(where + 1)
            self.position[incident_id] = where
            self.ids[where] = incident_id
            self.size += 1
        self.matrix[where] = vector

    def _grow(self, needed: int) -> None:
        if needed <= len(self.ids):
            return
        capacity = max(needed, 2 * len(self.ids), 1024)
        self.ids = np.resize(self.ids, capacity)
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[:self.size] = self.matrix[:self.size]
        self.matrix = matrix

    def _drop(self, incident_id: int) -> None:
        where = self.position.pop(incident_id, None)
        if where is None:
            return
        last = self.size - 1
        if where != last:  # the last row takes the hole
            self.ids[where] = self.ids[last]
            self.matrix[where] = self.matrix[last]
            self.position[int(self.ids[where])] = where
        self.size = last

    def nearest(self, query: Vector, k: int, exclude: int | None = None) -> list[tuple[int, float]]:
        """The ``k`` incidents whose vectors have the highest cosine with ``query`` (a unit vector)."""
        if self.size == 0 or k <= 0:
            return []
        if query.shape != (self.dim,):
            raise ValueError(f"a query of shape {query.shape} against {self.model}'s vectors of {self.dim} dimensions")
        scores = self.matrix[:self.size] @ query.astype(np.float32, copy=False)
        if exclude is not None and exclude in self.position:
            scores[self.position[exclude]] = -np.inf
        k = min(k, self.size - (exclude in self.position))
        top = np.argpartition(-scores, k - 1)[:k] if k < self.size else np.arange(self.size)
        top = top[np.argsort(-scores[top], kind="stable")][:k]
        return [(int(self.ids[i]), float(scores[i])) for i in top]


UPSERT = """INSERT INTO incident_vectors (incident_id, model, dim, vector, text_hash, updated_at, embedded_at, seq)
            VALUES (?, ?, ?, ?, ?, coalesce(?, (SELECT updated_at FROM incidents WHERE id = ?)), ?, ?)
            ON CONFLICT (incident_id) DO UPDATE SET model = excluded.model, dim = excluded.dim,
                vector = excluded.vector, text_hash = excluded.text_hash, updated_at = excluded.updated_at,
                embedded_at = excluded.embedded_at, seq = excluded.seq"""


class IncidentVectors(Base):
    """Incidents' vectors: written by whoever embeds them, searched by :meth:`nearest`."""

    @functools.cached_property
    def _vector_indexes(self) -> dict[str, VectorIndex]:
        return {}

    def vector_backend(self) -> str:
        """How :meth:`nearest` searches: ``numpy`` (see the module's docstring for why not sqlite-vec or pgvector)."""
        return "numpy"

    def save_vectors(self, model: str, rows: Sequence[Embedded | tuple[int, Vector] | tuple[int, Vector, str, float | None]]) -> int:
        """Store vectors ``model`` made, one per incident (a vector of another model is replaced); how many."""
        embedded = [Embedded(*row) for row in rows]
        if not embedded:
            return 0
        now = self.clock()
        with self.transaction() as db:
            self.engine.lock_table(db, "incident_vectors")  # seq is taken in commit order
            first = int(db.execute("SELECT coalesce(max(seq), 0) FROM incident_vectors").fetchone()[0]) + 1
            db.executemany(UPSERT, [
                (row.incident_id, model, len(row.vector), np.asarray(row.vector, dtype="<f4").tobytes(), row.text_hash,
                 row.updated_at, row.incident_id, now, first + i) for i, row in enumerate(embedded)])
        return len(embedded)

    def keep_vectors(self, model: str, rows: Sequence[tuple[int, float | None]]) -> None:
        """Incidents (id, ``updated_at`` as read) changed in nothing that is embedded: their vectors stay."""
        with self.transaction() as db:
            db.executemany("UPDATE incident_vectors SET updated_at = ?, embedded_at = ? WHERE incident_id = ? AND model = ?",
                           [(updated_at, self.clock(), incident_id, model) for incident_id, updated_at in rows])

    def incidents_to_embed(self, model: str, limit: int = 64) -> list[dict[str, Any]]:
        """Incidents, newest first, with no vector of ``model`` or changed since theirs was made; each with
        ``embedded_hash``, the digest of the text its vector of ``model`` was made from (None without one)."""
        return self._rows(
            """SELECT incidents.*, CASE WHEN v.model = ? THEN v.text_hash END AS embedded_hash
               FROM incidents LEFT JOIN incident_vectors AS v ON v.incident_id = incidents.id
               WHERE v.incident_id IS NULL OR v.model != ? OR coalesce(incidents.updated_at, 0) > coalesce(v.updated_at, 0)
               ORDER BY incidents.id DESC LIMIT ?""", (model, model, limit))

    def count_vectors(self, model: str) -> int:
        return int(self._scalar("SELECT count(*) FROM incident_vectors WHERE model = ?", (model,)))

    def nearest(self, model: str, query: Vector, k: int = 5, exclude: int | None = None) -> list[tuple[int, float]]:
        """The ``k`` incidents nearest to ``query`` among ``model``'s vectors: (incident id, cosine), best first."""
        index = self._vector_index(model)
        with index.lock:
            self._refresh(index)
            return index.nearest(np.asarray(query, dtype=np.float32), k, exclude)

    def _vector_index(self, model: str) -> VectorIndex:
        with self._lock:
            return self._vector_indexes.setdefault(model, VectorIndex(model))

    def _refresh(self, index: VectorIndex) -> None:
        with self._lock:
            cursor = self.engine.execute(
                "SELECT incident_id, model, dim, vector, seq FROM incident_vectors WHERE seq > ? ORDER BY seq", (index.seq,))
            rows = cursor.fetchall()
        index.apply(rows)
