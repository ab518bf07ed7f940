"""Incident vectors in the store (SQLite files, or PostgreSQL with --store=postgres), and hybrid recall."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from embedder_server import FakeEmbedder

from monitor.memory.embedding import INCIDENT_FIELDS, PASSAGE_FIELDS, Builtin, ModelServer, evidence_text, passage_text
from monitor.memory.search import fuse, hybrid_search, index_incidents
from monitor.store import SCHEMA_VERSION, Embedded, Store, schema
from monitor.store.index import VectorIndex
from monitor.store.writes import IncidentWrites

MODEL = "test-model@1"


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


@pytest.fixture(scope="module")
def builtin() -> Iterator[Builtin]:
    yield Builtin()


class Counting:
    """The builtin embedder, counting the texts it was asked to embed."""

    def __init__(self, inner: Builtin) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts, query=query)


def incidents(store: Store, n: int) -> list[int]:
    return [IncidentWrites(store).open_incident(f"t{i}", "consecutive", f"target {i} down") for i in range(n)]


def test_the_vectors_table_comes_with_the_migration(db_path: str) -> None:
    store = Store(db_path)
    assert store.version == SCHEMA_VERSION
    assert "vector" in store.engine.columns("incident_vectors") and store.vectors.vector_backend() == "numpy"


def test_nearest_ranks_by_cosine_and_leaves_out_the_excluded(db_path: str) -> None:
    store = Store(db_path)
    a, b, c = incidents(store, 3)
    store.vectors.save_vectors(MODEL, [(a, unit(1, 0, 0)), (b, unit(1, 1, 0)), (c, unit(0, 0, 1))])
    found = store.vectors.nearest(MODEL, unit(1, 0.1, 0), k=2)
    assert [incident for incident, _ in found] == [a, b]
    assert found[0][1] == pytest.approx(float(unit(1, 0, 0) @ unit(1, 0.1, 0)), abs=1e-6)
    assert [incident for incident, _ in store.vectors.nearest(MODEL, unit(1, 0.1, 0), k=5, exclude=a)] == [b, c]
    assert store.vectors.nearest("another-model", unit(1, 0, 0), k=5) == []
    with pytest.raises(ValueError, match="3 dimensions"):
        store.vectors.nearest(MODEL, unit(1, 0), k=1)


def test_a_reader_sees_what_another_connection_wrote_since_and_a_model_change(db_path: str) -> None:
    reader, writer = Store(db_path), Store(db_path)
    a, b = incidents(writer, 2)
    writer.vectors.save_vectors(MODEL, [(a, unit(1, 0))])
    assert [i for i, _ in reader.vectors.nearest(MODEL, unit(0, 1), k=5)] == [a]
    writer.vectors.save_vectors(MODEL, [(b, unit(0, 1))])
    assert [i for i, _ in reader.vectors.nearest(MODEL, unit(0, 1), k=5)] == [b, a]
    writer.vectors.save_vectors("other@2", [(b, unit(1, 0, 0))])  # b is now embedded by another model only
    assert [i for i, _ in reader.vectors.nearest(MODEL, unit(0, 1), k=5)] == [a]
    assert [i for i, _ in reader.vectors.nearest("other@2", unit(1, 0, 0), k=5)] == [b]


def test_incidents_to_embed_are_the_new_and_the_changed_newest_first(db_path: str) -> None:
    store = Store(db_path)
    a, b = incidents(store, 2)
    rows = {row.incident.id: row for row in store.vectors.incidents_to_embed(MODEL, 10)}
    assert list(rows) == [b, a] and rows[a].embedded_hash is None
    store.vectors.save_vectors(MODEL, [Embedded(a, unit(1, 0), "hash-a", rows[a].embed_version)])
    assert [row.incident.id for row in store.vectors.incidents_to_embed(MODEL, 10)] == [b]
    IncidentWrites(store).update_incident(a, agent_state="investigating")  # not embedded text: stays done
    assert [row.incident.id for row in store.vectors.incidents_to_embed(MODEL, 10)] == [b]
    IncidentWrites(store).update_incident(a, diagnosis="the certificate expired")
    changed = {row.incident.id: row for row in store.vectors.incidents_to_embed(MODEL, 10)}
    assert set(changed) == {a, b} and changed[a].embedded_hash == "hash-a" and changed[b].embedded_hash is None
    store.vectors.keep_vectors(MODEL, [(a, changed[a].embed_version)])
    assert [row.incident.id for row in store.vectors.incidents_to_embed(MODEL, 10)] == [b]
    assert [row.incident.id for row in store.vectors.incidents_to_embed("other@2", 10)] == [b, a]  # a's vector is another model's
    assert [row.incident.id for row in store.vectors.incidents_to_embed(MODEL, 1)] == [b]


def test_a_change_while_an_incident_was_being_embedded_leaves_it_queued(db_path: str) -> None:
    store = Store(db_path)
    (a,) = incidents(store, 1)
    read = store.vectors.incidents_to_embed(MODEL, 10)[0]
    IncidentWrites(store).close_incident(a, "renewed the certificate")  # meanwhile: the vector below is of the older text
    store.vectors.save_vectors(MODEL, [Embedded(a, unit(1, 0), "old", read.embed_version)])
    again = store.vectors.incidents_to_embed(MODEL, 10)
    assert [row.incident.id for row in again] == [a] and again[0].incident.resolution == "renewed the certificate"


def test_the_triggers_watch_what_is_embedded() -> None:
    assert list(INCIDENT_FIELDS) == schema.EMBEDDED_TEXT


def test_fuse_adds_reciprocal_ranks() -> None:
    fused = fuse([1, 2, 3], [3, 1, 4], k=60)
    assert [item for item, _ in fused] == [1, 3, 2, 4]
    assert dict(fused)[1] == pytest.approx(1 / 61 + 1 / 62) and dict(fused)[4] == pytest.approx(1 / 63)
    assert fuse() == [] and fuse([5, 5, 6]) == [(5, 1 / 61), (6, 1 / 62)]  # a repeated id counts once
    assert [item for item, _ in fuse([1, 2], [2, 1])] == [1, 2]  # a tie: first seen first


def test_without_an_embedder_recall_is_the_full_text_ranking_and_says_so(db_path: str) -> None:
    store = Store(db_path)
    pool = IncidentWrites(store).open_incident("api", "consecutive", "connection pool exhausted")
    IncidentWrites(store).open_incident("web", "consecutive", "certificate expired")
    found = hybrid_search(store, None, "pool exhausted", k=3)
    assert found.method == "text" and found.ids() == [pool] and "full text only" in found.note


def test_a_failing_model_server_falls_back_to_full_text(db_path: str) -> None:
    store = Store(db_path)
    pool = IncidentWrites(store).open_incident("api", "consecutive", "connection pool exhausted")
    with FakeEmbedder(status=503) as server:
        found = hybrid_search(store, ModelServer("openai/x", api_base=server.url, timeout=5), "pool exhausted")
    assert found.method == "text" and found.ids() == [pool] and "did not embed" in found.note


def past(store: Store) -> dict[str, int]:
    made = {}
    for target, diagnosis, resolution in [
        ("shop", "the TLS certificate had run out", "renewed it with certbot and reloaded nginx"),
        ("api", "database connection pool exhausted under load", "raised the pool size from 10 to 50"),
        ("dns", "resolver returned SERVFAIL for the upstream zone", "pointed resolv.conf at the secondary resolver"),
        ("disk", "the log volume filled up", "rotated the logs and added logrotate"),
    ]:
        made[target] = IncidentWrites(store).open_incident(target, "consecutive", f"{target} down")
        IncidentWrites(store).update_incident(made[target], diagnosis=diagnosis)
        IncidentWrites(store).close_incident(made[target], resolution)
    return made


def test_a_japanese_query_recalls_the_english_incident_full_text_cannot_find(db_path: str, builtin: Builtin) -> None:
    store = Store(db_path)
    made = past(store)
    assert index_incidents(store, builtin) == 4
    query = evidence_text(status_code=495, body="証明書の有効期限が切れていた")
    assert hybrid_search(store, None, query).ids() == []
    found = hybrid_search(store, builtin, query, k=2)
    assert found.method == "hybrid" and found.ids()[0] == made["shop"]
    assert found.hits[0].vector_rank == 1 and found.hits[0].text_rank is None


def test_both_rankings_agreeing_put_an_incident_first(db_path: str, builtin: Builtin) -> None:
    store = Store(db_path)
    made = past(store)
    index_incidents(store, builtin)
    found = hybrid_search(store, builtin, "connection pool exhausted, requests waited for a connection", k=4)
    assert found.ids()[0] == made["api"] and found.hits[0].text_rank == 1 and found.hits[0].vector_rank == 1
    assert made["api"] not in hybrid_search(store, builtin, "pool exhausted", k=4, exclude=made["api"]).ids()


def test_indexing_embeds_again_only_what_changed_in_the_embedded_text(db_path: str, builtin: Builtin) -> None:
    store = Store(db_path)
    made = past(store)
    counting = Counting(builtin)
    assert index_incidents(store, counting) == 4 and index_incidents(store, counting) == 0
    IncidentWrites(store).update_incident(made["dns"], agent_state="idle")  # not embedded text: not even queued
    IncidentWrites(store).update_incident(made["api"], summary="api down")  # the same text: queued, kept without the model
    IncidentWrites(store).update_incident(made["disk"], resolution="moved the logs to a bigger volume")  # a fix: not embedded
    IncidentWrites(store).update_incident(made["shop"], diagnosis="the certificate of www had run out")
    counting.texts.clear()
    assert index_incidents(store, counting) == 1
    assert len(counting.texts) == 1 and "run out" in counting.texts[0]
    assert store.vectors.incidents_to_embed(counting.name, 10) == [] and store.vectors.count_vectors(counting.name) == 4


def test_a_vector_is_made_of_the_failure_not_of_the_fix_nor_the_labels() -> None:
    row = {
        "target": "api",
        "pattern": "consecutive",
        "root_cause": "server_error",
        "summary": "api down",
        "diagnosis": "pool exhausted",
        "suspected_cause": "a batch job",
        "resolution": "raised the pool",
        "notes": "a leaking client",
    }
    assert passage_text(row) == "api down\npool exhausted\na batch job\na leaking client"
    assert passage_text({"target": "api", "resolution": "restarted"}) == "api\nrestarted"  # nothing else to embed
    assert set(PASSAGE_FIELDS) <= set(schema.EMBEDDED_TEXT)


@pytest.mark.sqlite_only("a SQLite file of schema version 20")
def test_migration_21_queues_every_incident_to_be_embedded_again(db_path: str) -> None:
    store = Store(db_path)
    a, b = incidents(store, 2)
    rows = store.vectors.incidents_to_embed(MODEL, 10)
    store.vectors.save_vectors(MODEL, [Embedded(row.incident.id, unit(1, 0), "old-text", row.embed_version) for row in rows])
    assert store.vectors.incidents_to_embed(MODEL, 10) == []
    store.engine.execute("PRAGMA user_version = 20")
    store.close()
    again = Store(db_path)
    assert again.version == SCHEMA_VERSION
    queued = {row.incident.id: row.embedded_hash for row in again.vectors.incidents_to_embed(MODEL, 10)}
    assert queued == {a: "old-text", b: "old-text"}  # re-embedded from their new passage; the old vector serves
    assert {i for i, _ in again.vectors.nearest(MODEL, unit(1, 0), k=5)} == {a, b}


def test_a_large_index_finds_by_sign_bits_what_exact_search_finds() -> None:
    rng = np.random.default_rng(5)
    n, dim = 5000, 384
    shared, topics = rng.standard_normal(dim), rng.standard_normal((50, dim))
    vectors = 2 * shared / np.linalg.norm(shared) + 0.8 * topics[rng.integers(0, 50, n)] / np.sqrt(dim)
    vectors = (vectors + 0.6 * rng.standard_normal((n, dim)) / np.sqrt(dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)  # like e5's: most cosines near 0.8
    exact, approximate = VectorIndex(MODEL), VectorIndex(MODEL)
    approximate.exact_up_to = 0
    for index in (exact, approximate):
        index.apply([(i + 1, MODEL, dim, vectors[i].tobytes(), i + 1) for i in range(n)])
    queries = vectors[rng.integers(0, n, 20)] + 0.3 * rng.standard_normal((20, dim)).astype(np.float32) / np.sqrt(dim)
    agree = [len({i for i, _ in exact.nearest(q, 10)} & {i for i, _ in approximate.nearest(q, 10)}) for q in queries]
    assert approximate.center is not None and sum(agree) >= 0.95 * 200
    approximate.apply([(3, "other@2", dim, vectors[0].tobytes(), n + 1), (1, MODEL, dim, vectors[7].tobytes(), n + 2)])
    found = dict(approximate.nearest(vectors[7], 3))
    assert 3 not in found and found[1] == pytest.approx(1.0) and found[8] == pytest.approx(1.0)


def test_an_incident_forgotten_elsewhere_is_not_recalled(db_path: str) -> None:
    reader, writer = Store(db_path), Store(db_path)
    a, b = incidents(writer, 2)
    for incident in (a, b):
        IncidentWrites(writer).close_incident(incident, "fixed")
    writer.vectors.save_vectors(MODEL, [(a, unit(1, 0)), (b, unit(1, 1))])
    assert [i for i, _ in reader.vectors.nearest(MODEL, unit(1, 0), k=5)] == [a, b]
    assert IncidentWrites(writer).forget_incidents([a]) == 1  # its vector goes with it, and no seq says so
    assert [i for i, _ in reader.vectors.nearest(MODEL, unit(1, 0), k=5)] == [b]
    assert writer.vectors.count_vectors(MODEL) == 1
