"""A model's incident vectors in this process's memory, and their nearest neighbours (numpy).

The matrix and the search the store's :mod:`monitor.store.vectors` describes: exact up to ``EXACT_UP_TO``
vectors, above that sign bits choose candidates first. Only a process that searches imports it, and with it
numpy (15 MB): a checking worker never does.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

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
