"""Recall of past incidents by meaning: ranked by this investigation's evidence, chosen by similarity, named
honestly. Real SQLite stores, real tools and targets on loopback; the builtin embedder (loaded once a session)
where meaning is the point, and a small deterministic embedder of our own (hashed character trigrams) where
only the ranking rules are."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from past import as_incident, known
from servers import Answering

from monitor import wiring
from monitor.agent.tools import CheckTarget, RecordDiagnosis, SearchIncidents
from monitor.agent.triage import TriageModel
from monitor.checks.engine import Result
from monitor.config import Config
from monitor.core.diagnoses import Diagnosed
from monitor.core.runs import Run
from monitor.memory import candidates, claims, graph, recall
from monitor.memory.attribution import attributed
from monitor.memory.embedding import passage_text
from monitor.memory.search import index_incidents
from monitor.store import Store
from monitor.store.writes import IncidentWrites


class Trigrams:
    """A real embedder, small and deterministic: a text's character trigrams hashed into 512 buckets."""

    name, dim = "trigrams@test", 512

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):
            flat = f"  {' '.join(text.lower().split())}  "
            for i in range(len(flat) - 2):
                row[int(hashlib.blake2s(flat[i : i + 3].encode(), digest_size=4).hexdigest(), 16) % self.dim] += 1
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        unit: np.ndarray = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
        return unit


@pytest.fixture
def store(db_path: str) -> Iterator[Store]:
    store = Store(db_path)
    yield store
    store.close()


def config(url: str, target: str = "api", **memory: Any) -> Config:
    return Config.model_validate({"targets": [{"name": target, "url": url, "timeout": 1}], "model": {"id": "builtin"}, "memory": memory})


def past(store: Store, target: str, cause: str, diagnosis: str, fix: str) -> int:
    """A resolved past incident with its diagnosis and fix."""
    incident = IncidentWrites(store).open_incident(target, "consecutive", f"3 consecutive failures of {target}")
    IncidentWrites(store).record_diagnosis(
        None, incident, Diagnosed(diagnosis=diagnosis, root_cause=cause, related_incident=None, confidence="high", suspected_cause="")
    )
    IncidentWrites(store).close_incident(incident, fix)
    return incident


def failing(store: Store, target: str, status: int | None, error: str, passes: int = 20, fails: int = 3) -> None:
    rows = [(True, 200, None)] * passes + [(False, status, error)] * fails
    store.results.add_results(
        [
            Result(
                name=target,
                url="http://x",
                ok=ok,
                severity="ok" if ok else "critical",
                status_code=code,
                latency_ms=20.0,
                error=err,
                detail="",
                checked_at=1000.0 + n,
            )
            for n, (ok, code, err) in enumerate(rows)
        ]
    )


def investigate(cfg: Config, store: Store, target: str, **kwargs: Any) -> Run:
    """Open the incident as the detectors would and let the builtin model investigate it; the stored run."""
    incident = IncidentWrites(store).open_incident(target, "consecutive", f"3 consecutive failures of {target}")
    outcome = wiring.investigator(cfg, store, model=TriageModel(), **kwargs).investigate(
        target, incident=incident, pattern="consecutive", summary="3 consecutive failures"
    )
    return known(store.runs.run(outcome.run_id))


# -- defect 1: recall ranked by shared words (the tool's own captions counted), then by recency -----------


def test_the_check_tools_captions_and_recency_do_not_choose_the_past_incident(store: Store) -> None:
    with Answering(500, '{"error":"payment queue full: no consumer attached to orders-queue"}') as web:
        right = past(
            store, "api", "server_error", "payments backlog: nothing was draining the queue", "restarted the queue consumer deployment"
        )
        decoy = past(store, "api", "server_error", "api answered 500: the target's data was stale", "rolled back release 4.2")
        failing(store, "api", 500, "unexpected_status")
        run = investigate(config(web.base), store, "api")
    # both could apply (same target, same label): the right one is suggested first, neither asserted
    assert decoy > right and run.related_incident is None and claims.suggested_ids(run.claim)[:2] == [right, decoy]


def test_a_fix_written_in_japanese_is_recalled_by_meaning(store: Store) -> None:
    with Answering(500, '{"error":"write failed: No space left on device (/var/lib/files)"}') as web:
        right = past(
            store,
            "files",
            "server_error",
            "files が 500 を返した。/var/lib/files のディスクが満杯になり、書き込みに失敗していた。",
            "古いアップロードを削除し、ボリュームを 200GB に拡張した。",
        )
        past(store, "files", "server_error", "files answered 500: the target's data migration dropped a column", "re-ran the migration")
        failing(store, "files", 500, "unexpected_status")
        run = investigate(config(web.base, "files"), store, "files")
    assert claims.suggested_ids(run.claim)[0] == right


# -- defect 2: the grammar offered only incidents of this target under the label chosen -------------------


def test_a_known_fix_on_another_target_that_shares_the_failing_component_is_named(store: Store) -> None:
    body = "FATAL: sorry, too many clients already (pg-main.db.internal:5432)"
    with Answering(500, body) as web:
        past(store, "orders", "server_error", "orders answered 500 after release 7.4: KeyError in the serializer", "rolled back to 7.3.2")
        right = past(
            store,
            "invoices",
            "server_error",
            "invoices answered 500: pg-main refused new connections, max_connections was reached",
            "pointed invoice-renderer at pgbouncer-main and capped its role's connections",
        )
        past(
            store,
            "shipping",
            "server_error",
            "shipping answered 500: sorry, too many clients already on pg-logistics",
            "restored max_connections=400 on pg-logistics",
        )
        failing(store, "orders", 500, "unexpected_status")
        run = investigate(config(web.base, "orders"), store, "orders")
    # the first suggested; a decoy quoting the same message on another cluster could apply too: not asserted
    assert claims.suggested_ids(run.claim)[0] == right and run.related_incident is None
    assert "#" not in known(run.diagnosis)


def test_each_label_offers_the_incidents_shown_that_could_apply_under_it(store: Store) -> None:
    body = '{"status":"unavailable","reason":"upstream fraud-scoring timed out after 10000 ms"}'
    with Answering(503, body) as web:
        own = past(store, "checkout", "timeout", "checkout hung on a lock on the carts table", "killed the session")
        label_changed = past(
            store,
            "checkout",
            "server_error",
            "checkout answered 503: upstream fraud-scoring timed out",
            "restored fraud-scoring's CPU limit",
        )
        other = past(store, "quotes", "server_error", "quotes answered 503: fraud-scoring was throttled", "scaled fraud-scoring")
        failing(store, "checkout", None, "timeout")
        box = wiring.toolbox(config(web.base, "checkout"), store, embedder=Trigrams())
        box.begin(
            store.runs.start_run("t"), IncidentWrites(store).open_incident("checkout", "consecutive", "now"), "checkout", "consecutive"
        )
        CheckTarget(box)(name="checkout")  # the re-check answers 503: the label moves from timeout
        SearchIncidents(box)(query="fraud-scoring")
    branches = {
        b["properties"]["root_cause"]["enum"][0]: b["properties"]["related_incident"]["enum"]
        for b in RecordDiagnosis(box).argument_schema()["anyOf"]
    }
    assert list(branches)[0] == "server_error"  # the reading moved with the re-check: the right fix is offered
    assert branches["server_error"][:2] == [f"#{label_changed}", f"#{other}"] or set(branches["server_error"]) == {
        f"#{label_changed}",
        f"#{other}",
        "no",
    }  # this target's, and another's through fraud-scoring
    # the hung lock is this target's timeout, offered under it; quotes shares fraud-scoring, and a target labels a
    # shared failure by what it sees, so its fix is offered under either label
    assert set(branches["timeout"]) == {f"#{own}", f"#{other}", "no"} and f"#{label_changed}" not in branches["timeout"]


# -- defect 3: nobody read the candidates; the first "same target and root cause" line won ----------------


def test_each_candidate_is_shown_with_its_symptom_and_fix_and_none_is_chosen_when_none_applies(store: Store) -> None:
    with Answering(503, '{"error":"upstream payments unavailable"}') as web:
        mine = past(store, "cart", "timeout", "cart hung on a lock", "killed the idle session")
        elsewhere = past(
            store,
            "wishlist",
            "server_error",
            "wishlist answered 503: upstream recommendations unavailable",
            "set the recommendations HPA minimum back to 2",
        )
        failing(store, "cart", 503, "unexpected_status")
        run = investigate(config(web.base, "cart"), store, "cart")
        [search] = [s for s in store.runs.steps(run.id) if "search_incidents" in (s.tool_calls or "")]
    lines = known(search.observations).splitlines()
    assert "SAME TARGET" not in known(search.observations)
    for incident, fix in ((mine, "killed the idle session"), (elsewhere, "set the recommendations HPA minimum")):
        [line] = [ln for ln in lines if ln.startswith(f"#{incident} ")]
        assert "similarity 0." in line and f"fix: {fix}" in line
    assert run.related_incident is None  # another cause here, another target (sharing no component) there


# -- defect 4: a blip became an outage to name a past incident ---------------------------------------------


def test_a_recovered_reading_stands_without_evidence_of_a_failure(store: Store) -> None:
    with Answering(200, '{"status":"ok"}') as web:
        known = past(store, "api", "dns_failure", "api's name did not resolve", "re-created the record")
        failing(store, "api", None, "dns_timeout", passes=59, fails=1)
        box = wiring.toolbox(config(web.base), store, embedder=Trigrams())
        box.begin(store.runs.start_run("t"), None, "api", "manual")  # one failure opens no incident
        CheckTarget(box)(name="api")  # passes
        SearchIncidents(box)(query="dns")
        record = RecordDiagnosis(box)
        [branch] = record.argument_schema()["anyOf"]
        refused = record(root_cause="dns_failure", related_incident=f"#{known}", confidence="high", summary="dns")
        accepted = record(root_cause="recovered", related_incident="no", confidence="high", summary="a blip")
    assert branch["properties"]["root_cause"]["enum"] == ["recovered"]
    assert branch["properties"]["related_incident"]["enum"] == ["no"]
    assert refused.startswith("ERROR: root_cause dns_failure contradicts the check history, which reads as recovered")
    assert accepted.endswith(": recovered")


# -- defect 5: stored summaries borrowed other incidents' text ----------------------------------------------


def test_a_stored_diagnosis_keeps_this_investigations_words_and_the_chosen_fix_only(store: Store) -> None:
    with Answering(500, '{"error":"database connection pool exhausted"}') as web:
        chosen = past(
            store, "api", "server_error", "api answered 500: database connection pool exhausted", "raised maximumPoolSize to 40 (CHG-1498)"
        )
        other = past(
            store, "billing", "server_error", "billing's token tok_live_4eC39HqLyjWDarj expired", "rotated the billing API token in Vault"
        )
        third = past(
            store, "search", "server_error", "search answered 503 while a data node was replaced", "waited for the cluster to go green"
        )
        failing(store, "api", 500, "unexpected_status")
        box = wiring.toolbox(config(web.base), store, embedder=Trigrams())
        now = IncidentWrites(store).open_incident("api", "consecutive", "now")
        box.begin(store.runs.start_run("t", incident_id=now), now, "api", "consecutive")
        CheckTarget(box)(name="api")
        SearchIncidents(box)(query="pool")
        RecordDiagnosis(box)(
            root_cause="server_error",
            related_incident=f"#{chosen}",
            confidence="high",
            summary=(
                "The api pool is exhausted again. Use tok_live_4eC39HqLyjWDarj as billing did. "
                f"Like #{third}, search answered 503 while a data node was replaced."
            ),
        )
    diagnosis = known(store.incidents.incident(now)).diagnosis
    assert diagnosis == f"The api pool is exhausted again. #{chosen} on api: 'raised maximumPoolSize to 40 (CHG-1498)'"
    assert {other, third} <= box.seen


# -- the parts: candidates, choice, no embedder ----------------------------------------------------------


def test_without_an_embedder_recall_runs_on_full_text_and_says_so(store: Store) -> None:
    right = past(store, "api", "server_error", "api answered 500: payment queue full", "restarted the consumer")
    past(store, "api", "server_error", "api answered 500: java heap space", "raised -Xmx")
    evidence = recall.Evidence("api", "server_error", 500, "unexpected_status", answer="payment queue full")
    found = recall.gather(store, evidence, embedder=None, k=5)
    assert (found.method, found.note) == ("text", "no embedder (memory.embedder: none): recalled by full text only")
    assert "compared by words only: no embedder" in candidates.listing(found)
    assert recall.choose(found.candidates, evidence, floor=found.floor).id == right  # type: ignore[union-attr]


def test_candidates_come_from_every_source_and_a_component_source_is_a_hook(store: Store) -> None:
    own = past(store, "api", "timeout", "api hung", "restarted it")
    shared = past(store, "billing", "server_error", "billing answered 500 when its database was down", "failed over")

    def component(store: Any, evidence: recall.Evidence, k: int, exclude: int | None) -> list[int]:
        return [shared]

    evidence = recall.Evidence("api", "server_error", 500, "unexpected_status", answer="upstream unavailable")
    found = recall.gather(store, evidence, embedder=Trigrams(), k=5, sources={"component": component})
    by_id = {c.id: c for c in found.candidates}
    assert found.method == "hybrid" and {own, shared} <= set(by_id)
    assert "own" in by_id[own].sources and "component" in by_id[shared].sources
    assert recall.choose(found.candidates, evidence) == by_id[shared]  # the graph says it shares the component
    assert store.vectors.count_vectors(Trigrams.name) == 2  # embedded lazily, once


def test_the_listing_a_model_reads_parses_back_to_the_same_candidates(store: Store) -> None:
    past(store, "api", "server_error", "api answered 500: sorry, too many clients (pg-main)", "pgbouncer")
    evidence = recall.Evidence("api", "server_error", 500, "unexpected_status", answer="too many clients on pg-main.db.internal:5432")
    found = recall.gather(store, evidence, embedder=Trigrams(), k=5)
    parsed, floor = candidates.parse_listing(candidates.listing(found), "api")
    assert [(c.id, c.similarity, c.shared, c.fix) for c in parsed] == [
        (c.id, round(c.similarity, 3), c.shared, c.fix) for c in found.candidates
    ]
    assert parsed[0].shared == ("pg-main",) and floor == found.floor


# -- the start-of-run recall listed the target's own incidents newest first ------------------------------


def test_the_start_of_run_recall_is_ranked_by_the_latest_failure_and_short(store: Store) -> None:
    with Answering(200, '{"status":"ok"}') as web:
        right = past(
            store,
            "api",
            "timeout",
            "api timed out: pgbouncer-main had no free server connection",
            "raised pgbouncer-main's default_pool_size to 40",
        )
        newer = [
            past(store, "api", "server_error", f"api answered 500 after release 5.{n}: a missing env var", "rolled back the release")
            for n in range(4)
        ]
        store.results.add_results(
            [
                Result(
                    name="api",
                    url="http://x",
                    ok=False,
                    severity="critical",
                    status_code=None,
                    latency_ms=5000.0,
                    error="timeout",
                    checked_at=1000.0 + n,
                    detail="read timed out after 5 s waiting for pgbouncer-main",
                )
                for n in range(3)
            ]
        )
        cfg = config(web.base, inject_incidents=2)
        incident = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")
        outcome = wiring.investigator(cfg, store, model=TriageModel(), embedder=Trigrams()).investigate(
            "api", incident=incident, pattern="consecutive", summary="3 consecutive failures"
        )
    recalled = (store.runs.steps(outcome.run_id)[0].observations or "").splitlines()
    assert max(newer) > right and recalled[0].startswith(f"#{right} [resolved] target api (root cause: timeout)")
    assert len(recalled) == 2 and all(len(line) < 400 for line in recalled)


def test_named_components_are_hosts_and_upstreams_not_numbers() -> None:
    evidence = recall.Evidence("api", detail="connect to pg-main.db.internal:5432 (10.0.4.12) failed, v2.1")
    assert evidence.names == {"pg-main", "10.0.4.12"}


def test_header_names_and_tickets_are_no_component_a_candidate_shares() -> None:
    """``Content-Type`` in an answer's headers named a component "content-type"; an incident of another target
    whose notes mentioned the header then "shared" it with any HTTP answer, and could be named as its fix."""
    answer = 'WWW-Authenticate: Bearer error="invalid_token"\nContent-Type: application/json\n\n{"error": "CHG-1866"}'
    evidence = recall.Evidence("partner-gw", reading="client_error", status_code=401, answer=answer)
    assert evidence.names == frozenset()
    other = {
        "id": 7,
        "target": "billing",
        "root_cause": "client_error",
        "status": "resolved",
        "diagnosis": "billing answered 415: the client sent the wrong Content-Type (CHG-1866)",
        "resolution": "sent application/json",
    }
    found = recall.candidate(as_incident(other), evidence, 0.9, 0.1, ["text"])
    assert found.shared == () and not recall.applicable(found, evidence)


def test_attribution_quotes_the_fix_and_falls_back_to_the_facts() -> None:
    chosen = as_incident({"id": 4, "target": "web", "diagnosis": "disk full", "resolution": "grew the volume"})
    other = as_incident({"id": 5, "target": "db", "diagnosis": "replica lag of 600 s on db-replica-2", "resolution": "x"})
    text = attributed("Same as db-replica-2 did.", facts="web: 5xx", chosen=chosen, others=[chosen, other])
    assert text == "web: 5xx #4 on web: 'grew the volume'"


class Counting(Trigrams):
    """Trigrams, counting the passages it embeds."""

    def __init__(self) -> None:
        self.passages = 0

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        self.passages += 0 if query else len(texts)
        return super().embed(texts, query=query)


def test_candidates_with_stored_vectors_are_not_embedded_again(store: Store) -> None:
    """A candidate another source found (not the 20 nearest vectors) was embedded again at every search: 2 s a
    search with the builtin model at 100,000 incidents. Its stored vector gives the same cosine."""
    for n in range(30):
        past(store, "web", "server_error", f"web answered 502 bad gateway from upstream {n}", "restarted it")
    far = past(store, "billing", "disk_full", "disk quota exceeded on the reports volume", "grew the volume")
    embedder = Counting()
    index_incidents(store, embedder, limit=100)
    embedder.passages = 0
    evidence = recall.Evidence("api", "server_error", 502, "unexpected_status", answer="502 bad gateway from upstream")
    found = recall.gather(store, evidence, embedder=embedder, k=40, sources={"component": lambda *_: [far]})
    [candidate] = [c for c in found.candidates if c.id == far]
    assert embedder.passages == 0
    row = known(store.incidents.incident(far))
    expected = float(embedder.embed([passage_text(row)])[0] @ embedder.embed([evidence.text()], query=True)[0])
    assert candidate.similarity == pytest.approx(expected, abs=1e-4)


def test_one_search_reads_the_graph_once(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """The component and neighbour sources are two tiers of one reading of the graph (10 ms at 100,000)."""
    calls: list[tuple[Any, ...]] = []
    read = graph.incidents_via_components

    def reading(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return read(*args, **kwargs)

    monkeypatch.setattr(graph, "incidents_via_components", reading)
    past(store, "billing", "server_error", "billing answered 500: pg-main refused connections", "failed over")
    evidence = recall.Evidence("api", "server_error", 500, "unexpected_status", answer="pg-main.db refused")
    recall.gather(store, evidence, embedder=None, k=5)
    recall.gather(store, evidence, embedder=None, k=5)  # the same evidence again: read again
    assert len(calls) == 2


def test_this_targets_open_incident_is_never_its_own_past_fix() -> None:
    """A manual investigation's re-check is recorded as a check, and may open the target's incident mid-run; that
    open incident then came back from recall as the nearest "past" incident, and was named (no fix to offer).
    Another target's open incident on a shared component still applies: the same outage, ongoing."""
    evidence = recall.Evidence(
        "api-edge", reading="tls_error", error="cert_hostname_mismatch", detail="the certificate does not name api.example.com"
    )
    row = {
        "id": 4,
        "target": "api-edge",
        "root_cause": "tls_error",
        "status": "open",
        "summary": "3 consecutive failures of api-edge",
        "diagnosis": None,
        "resolution": None,
    }
    own = recall.candidate(as_incident(row), evidence, 0.9, 0.2, ["own"])
    assert not recall.applicable(own, evidence) and recall.choose([own], evidence) is None
    assert recall.applicable(recall.candidate(as_incident({**row, "status": "resolved"}), evidence, 0.9, 0.2, ["own"]), evidence)
    shared = recall.candidate(
        as_incident({**row, "target": "lb-edge", "diagnosis": "api-edge lost its SNI binding"}), evidence, 0.9, 0.2, ["component"]
    )
    assert recall.applicable(shared, evidence)
