"""Recall of past incidents by what they mean: full text and vectors, fused by reciprocal rank.

    fuse(*rankings)          reciprocal rank fusion of ranked id lists (pure)
    hybrid_search(...)       full-text search and nearest vectors, fused: a :class:`Recall`
    index_incidents(...)     embed the incidents that have no vector yet, or whose text changed

The store is whatever has the methods of :class:`SearchStore` (``monitor.store.Store`` does); this
module imports no store and no model.

>>> index_incidents(store, embedder)            # after incidents were written; cheap when none changed
>>> found = hybrid_search(store, embedder, evidence_text(status_code=502, body=excerpt), k=3, exclude=incident_id)
>>> found.method, found.ids()
('hybrid', [41, 7, 12])
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from monitor.memory.embedding import Embedder, EmbeddingError, passage_text, text_digest

if TYPE_CHECKING:
    from monitor.store.incidents import IncidentsReader
    from monitor.store.vectors import VectorsPart

log = logging.getLogger(__name__)

RRF_K = 60  # the constant of Cormack, Clarke and Büttcher (2009): ranks past ~60 weigh alike
DEPTH = 20  # candidates each ranking contributes, at least


class SearchStore(Protocol):
    """What search needs of a store: its incidents' search, and its vectors (written too, by the indexer)."""

    @property
    def incidents(self) -> IncidentsReader: ...
    @property
    def vectors(self) -> VectorsPart: ...


@dataclass(frozen=True)
class Hit:
    """One recalled incident: its fused score, and where each ranking put it (1 is first; None: absent)."""

    incident_id: int
    score: float
    text_rank: int | None = None
    vector_rank: int | None = None
    cosine: float | None = None


@dataclass(frozen=True)
class Recall:
    """What recall found, best first, and how: ``hybrid``, or ``text`` alone (``note`` says why)."""

    hits: list[Hit]
    method: Literal["hybrid", "text"]
    note: str = ""

    def ids(self) -> list[int]:
        return [hit.incident_id for hit in self.hits]


def fuse(*rankings: Sequence[int], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: each id scores the sum of ``1 / (k + rank)`` over the rankings that hold it
    (rank 1 is first); best first, ties in the order the ids first appear."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(dict.fromkeys(ranking), start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])


def hybrid_search(
    store: SearchStore,
    embedder: Embedder | None,
    query_text: str,
    k: int = 5,
    exclude: int | None = None,
    *,
    query_vector: NDArray[np.float32] | None = None,
) -> Recall:
    """The ``k`` past incidents nearest to ``query_text`` by full text and by meaning, fused.

    Without an embedder, or when it fails (a model server down), the full-text ranking alone, with a note
    saying so. ``query_vector``: ``query_text`` already embedded (as a query) by ``embedder``.
    """
    depth = max(DEPTH, 4 * k)
    text = [incident.id for incident in store.incidents.search_incidents(query_text, depth, exclude)]
    if embedder is None:
        return _text_only(text, k, "no embedder: recalled by full text only")
    try:
        vector = query_vector if query_vector is not None else embedder.embed([query_text], query=True)[0]
    except EmbeddingError as exc:
        log.warning("recall by full text only: %s", exc)
        return _text_only(text, k, f"recalled by full text only: {exc}")
    near = store.vectors.nearest(embedder.name, vector, depth, exclude)
    text_rank = {incident: rank for rank, incident in enumerate(text, start=1)}
    vector_rank = {incident: (rank, cosine) for rank, (incident, cosine) in enumerate(near, start=1)}
    hits = [
        Hit(incident, score, text_rank.get(incident), *vector_rank.get(incident, (None, None)))
        for incident, score in fuse(text, [incident for incident, _ in near])[:k]
    ]
    return Recall(hits, "hybrid")


def _text_only(ranking: list[int], k: int, note: str) -> Recall:
    return Recall([Hit(incident, score, rank) for rank, (incident, score) in enumerate(fuse(ranking)[:k], start=1)], "text", note)


def index_incidents(store: SearchStore, embedder: Embedder, *, limit: int = 64, batch: int = 16, claim: float | None = None) -> int:
    """Embed up to ``limit`` incidents that have no vector of ``embedder``'s, or whose text changed since
    theirs was made; returns how many were embedded. One whose embedded text is unchanged (another field
    changed) keeps its vector without a call to the model. ``claim``: take only incidents claimed for this
    replica for that many seconds, so that replicas sharing a database never embed the same one."""
    rows = (
        store.vectors.incidents_to_embed(embedder.name, limit)
        if claim is None
        else store.vectors.claim_incidents_to_embed(embedder.name, limit, lease=claim)
    )
    texts = {row.incident.id: passage_text(row.incident) for row in rows}
    unchanged = {row.incident.id for row in rows if row.embedded_hash == text_digest(texts[row.incident.id])}
    if unchanged:
        store.vectors.keep_vectors(embedder.name, [(row.incident.id, row.embed_version) for row in rows if row.incident.id in unchanged])
    fresh = [row for row in rows if row.incident.id not in unchanged]
    for start in range(0, len(fresh), batch):
        chunk = fresh[start : start + batch]
        vectors = embedder.embed([texts[row.incident.id] for row in chunk])
        store.vectors.save_vectors(
            embedder.name,
            [
                (row.incident.id, vector, text_digest(texts[row.incident.id]), row.embed_version)
                for row, vector in zip(chunk, vectors, strict=True)
            ],
        )
    return len(fresh)
