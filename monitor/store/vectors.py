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

import functools
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from monitor.store.base import Base

Vector = NDArray[np.float32]
EXACT_UP_TO = 20_000  # vectors searched exactly; above, sign bits choose candidates first (4 ms here at 100,000)
CANDIDATES = 40  # candidates per result asked, scored exactly: at least 400


def sign_bits(vectors: Vector, center: Vector) -> NDArray[np.uint64]:
    """Each row's signs around ``center``, packed 64 to a word: their Hamming distance ranks like the angle."""
    bits = np.packbits(vectors > center, axis=-1)
    pad = -bits.shape[-1] % 8
    if pad:
        bits = np.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, pad)])
    return np.ascontiguousarray(bits).view(np.uint64)


class Embedded(NamedTuple):
    """One incident's new vector: ``text_hash``, a digest of the text it was made from; ``version``, the
    ``embed_version`` :meth:`IncidentVectors.incidents_to_embed` gave (a change after it is embedded again)."""

    incident_id: int
    vector: Vector
    text_hash: str = ""
    version: int | None = None


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
        self.exact_up_to = EXACT_UP_TO
        self.center: Vector | None = None  # the mean the sign bits are taken around; None: no bits kept
        self.codes = np.zeros((0, 0), dtype=np.uint64)  # sign bits, one row per 64 dimensions, a column per vector
        self.centred_at = 0  # the size when the center was taken

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
        if self.center is not None:
            self.codes[:, where] = sign_bits(vector[None, :], self.center)[0]

    def _grow(self, needed: int) -> None:
        if needed <= len(self.ids):
            return
        capacity = max(needed, 2 * len(self.ids), 1024)
        self.ids = np.resize(self.ids, capacity)
        matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        matrix[: self.size] = self.matrix[: self.size]
        self.matrix = matrix
        if self.center is not None:
            codes = np.zeros((self.codes.shape[0], capacity), dtype=np.uint64)
            codes[:, : self.size] = self.codes[:, : self.size]
            self.codes = codes

    def forget(self, ids: set[int]) -> None:
        for incident_id in ids:
            self._drop(incident_id)

    def _drop(self, incident_id: int) -> None:
        where = self.position.pop(incident_id, None)
        if where is None:
            return
        last = self.size - 1
        if where != last:  # the last row takes the hole
            self.ids[where] = self.ids[last]
            self.matrix[where] = self.matrix[last]
            if self.center is not None:
                self.codes[:, where] = self.codes[:, last]
            self.position[int(self.ids[where])] = where
        self.size = last

    def nearest(self, query: Vector, k: int, exclude: int | None = None) -> list[tuple[int, float]]:
        """The ``k`` incidents whose vectors have the highest cosine with ``query`` (a unit vector)."""
        if self.size == 0 or k <= 0:
            return []
        if query.shape != (self.dim,):
            raise ValueError(f"a query of shape {query.shape} against {self.model}'s vectors of {self.dim} dimensions")
        query = query.astype(np.float32, copy=False)
        rows = self._candidates(query, k + 1)
        scores = self.matrix[rows] @ query if rows is not None else self.matrix[: self.size] @ query
        positions = rows if rows is not None else np.arange(self.size)
        if exclude is not None and exclude in self.position:
            scores[positions == self.position[exclude]] = -np.inf
        k = min(k, len(positions) - (exclude in self.position))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(positions) else np.arange(len(positions))
        top = top[np.argsort(-scores[top], kind="stable")][:k]
        return [(int(self.ids[positions[i]]), float(scores[i])) for i in top]

    def cosines(self, query: Vector, ids: Sequence[int]) -> dict[int, float]:
        """The cosine of ``query`` with the vectors of those of ``ids`` that have one."""
        rows = [(incident, self.position[incident]) for incident in ids if incident in self.position]
        if not rows or query.shape != (self.dim,):
            return {}
        scores = self.matrix[[where for _, where in rows]] @ query.astype(np.float32, copy=False)
        return {incident: float(score) for (incident, _), score in zip(rows, scores, strict=True)}

    def _candidates(self, query: Vector, wanted: int) -> NDArray[np.intp] | None:
        """Rows whose sign bits agree most with the query's, ``CANDIDATES`` per result wanted; None (every
        row) for an index small enough to search exactly. One matrix-vector product over 100,000 × 384
        float32 rows reads 150 MB and took 24 to 34 ms here; the bits are 4.8 MB."""
        if self.size <= max(self.exact_up_to, CANDIDATES * wanted, 400):
            return None
        if self.center is None or self.size > 2 * self.centred_at:
            self._centre()
        assert self.center is not None
        bits = sign_bits(query[None, :], self.center)[0]
        distance = np.bitwise_count(self.codes[0, : self.size] ^ bits[0])
        for word in range(1, len(bits)):  # a word at a time over contiguous columns: 5 times faster than by rows
            distance += np.bitwise_count(self.codes[word, : self.size] ^ bits[word])
        count = max(CANDIDATES * wanted, 400)
        return np.argpartition(distance, count)[:count]

    def _centre(self) -> None:
        """Take the mean of the rows as the center of their sign bits (again when the index has doubled):
        the vectors of one model share much of their direction, and bits around zero would say little."""
        self.center = self.matrix[: self.size].mean(axis=0)
        self.codes = np.zeros((-(-self.dim // 64), len(self.ids)), dtype=np.uint64)  # word by row
        self.codes[:, : self.size] = sign_bits(self.matrix[: self.size], self.center).T
        self.centred_at = self.size


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


class IncidentVectors(Base):
    """Incidents' vectors: written by whoever embeds them, searched by :meth:`nearest`."""

    @functools.cached_property
    def _vector_indexes(self) -> dict[str, VectorIndex]:
        return {}

    def vector_backend(self) -> str:
        """How :meth:`nearest` searches: ``numpy`` (see the module's docstring for why not sqlite-vec or pgvector)."""
        return "numpy"

    def save_vectors(self, model: str, rows: Sequence[Embedded | tuple[int, Vector] | tuple[int, Vector, str, int | None]]) -> int:
        """Store vectors ``model`` made, one per incident (a vector of another model is replaced); how many."""
        embedded = [Embedded(*row) for row in rows]
        if not embedded:
            return 0
        now = self.clock()
        with self.transaction() as db:
            self.engine.lock_table(db, "incident_vectors")  # seq is taken in commit order
            first = int(db.execute("SELECT coalesce(max(seq), 0) FROM incident_vectors").fetchone()[0]) + 1
            db.executemany(
                UPSERT,
                [
                    (row.incident_id, model, len(row.vector), np.asarray(row.vector, dtype="<f4").tobytes(), row.text_hash, now, first + i)
                    for i, row in enumerate(embedded)
                ],
            )
            db.executemany(DEQUEUE, [(row.incident_id, row.version) for row in embedded])
        return len(embedded)

    def keep_vectors(self, model: str, rows: Sequence[tuple[int, int | None]]) -> None:
        """Queued incidents (id, ``embed_version``) whose embedded text is unchanged: their vectors stay."""
        with self.transaction() as db:
            db.executemany(DEQUEUE, rows)

    def incidents_to_embed(self, model: str, limit: int = 64) -> list[dict[str, Any]]:
        """Incidents to embed with ``model``, newest first: new ones and those whose text changed (queued by
        triggers), and those embedded by another model. Each has ``embed_version`` (to give back with its
        vector) and ``embedded_hash``, the digest of the text its vector of ``model`` was made from, if any.
        Reads the queue and two ranges of the model index (ordered, so that PostgreSQL takes the index even
        with stale statistics; ``!=`` would scan it), never every incident: cheap when nothing changed."""
        return self._rows(
            TO_EMBED.format(
                ids=f"""
            SELECT incident_id FROM (SELECT incident_id FROM embed_queue ORDER BY incident_id DESC LIMIT ?) AS queued
            UNION {OTHER_MODELS}"""
            ),
            (model, limit, model, limit, model, limit, limit),
        )

    def claim_incidents_to_embed(self, model: str, limit: int = 64, *, lease: float = 60.0) -> list[dict[str, Any]]:
        """As :meth:`incidents_to_embed`, for this store's replica alone: up to ``limit`` queued incidents are
        claimed for ``lease`` seconds, newest first, passing over those another replica claimed and has not
        let lapse (a replica that stopped mid-way lets its claims lapse: another takes them then). Incidents
        embedded by another model are queued first, so they are claimed too."""
        now = self.clock()
        with self.transaction() as db:
            db.execute(REQUEUE, (model, limit, model, limit))
            db.execute(CLAIM.format(skip_locked=self.engine.skip_locked), (self.replica, now + lease, now, self.replica, limit))
        return self._rows(
            TO_EMBED.format(ids="SELECT incident_id FROM embed_queue WHERE claimed_by = ? AND claimed_until > ?"),
            (model, self.replica, now, limit),
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
        index = self._vector_index(model)
        with index.lock:
            self._refresh(index)
            while True:
                found = index.nearest(np.asarray(query, dtype=np.float32), k, exclude)
                gone = self._deleted([incident for incident, _ in found])
                if not gone:
                    return found
                index.forget(gone)

    def cosines(self, model: str, query: Vector, ids: Sequence[int]) -> dict[int, float]:
        """The cosine of ``query`` with the stored vectors of ``model`` of those of ``ids`` that have one:
        recall's candidates found by other means than :meth:`nearest`, without embedding them again."""
        index = self._vector_index(model)
        with index.lock:
            self._refresh(index)
            return index.cosines(np.asarray(query, dtype=np.float32), ids)

    def _deleted(self, ids: list[int]) -> set[int]:
        """Which of ``ids`` are no longer incidents: forgetting deleted them (and their vectors, which no
        ``seq`` announces), here or in another process."""
        if not ids:
            return set()
        left = self._rows(f"SELECT id FROM incidents WHERE id IN ({', '.join('?' * len(ids))})", ids)
        return set(ids) - {int(row["id"]) for row in left}

    def _vector_index(self, model: str) -> VectorIndex:
        with self._lock:
            return self._vector_indexes.setdefault(model, VectorIndex(model))

    def _refresh(self, index: VectorIndex) -> None:
        with self._lock:
            cursor = self.engine.execute(
                "SELECT incident_id, model, dim, vector, seq FROM incident_vectors WHERE seq > ? ORDER BY seq", (index.seq,)
            )
            rows = cursor.fetchall()
        index.apply(rows)
