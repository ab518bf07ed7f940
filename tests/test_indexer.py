"""The daemon embeds incident memories in the background: real stores, real checks, the builtin model."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import numpy as np
import pytest
from prometheus_client import CollectorRegistry
from servers import Misbehaving, wait_for

from monitor.config import Config
from monitor.core.incidents import ToEmbed
from monitor.daemon import Daemon
from monitor.daemon.indexer import Indexer
from monitor.memory.embedding import Builtin, EmbeddingError, passage_text, text_digest
from monitor.memory.recall import shared_embedder
from monitor.metrics import Metrics
from monitor.store import Store
from monitor.store.writes import IncidentWrites

BUILTIN = Builtin().name


class Failing:
    """An embedder that fails its first ``failures`` calls (all, with None), then embeds texts as their length."""

    name, dim = "failing@1", 4

    def __init__(self, failures: int | None = None) -> None:
        self.failures, self.calls = failures, 0
        self.lock = threading.Lock()

    def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
        with self.lock:
            self.calls += 1
            if self.failures is None or self.calls <= self.failures:
                raise EmbeddingError("the model server at 127.0.0.1:9 refused the connection")
        return np.array([[len(t), 1.0, 0.0, 0.0] for t in texts], dtype=np.float32) / 100


def daemon_config(db_path: str, url: str, embedder: str = "builtin") -> Config:
    return Config.model_validate(
        {
            "database": db_path,
            "agent": {"mode": "off"},
            "memory": {"embedder": embedder},
            "targets": [{"name": f"api{i}", "url": url, "interval": "200ms", "timeout": "1s"} for i in range(3)],
            "detectors": {"consecutive": 2, "recover_after": 2},
            "metrics": {"port": 0},
        }
    )


def value(daemon: Daemon, name: str) -> float | None:
    return daemon.metrics.registry.get_sample_value(name)


def test_incidents_the_checks_open_get_vectors_without_any_search(db_path: str) -> None:
    with Misbehaving() as web:
        daemon = Daemon(daemon_config(db_path, web.url("/state")), registry=CollectorRegistry())
        daemon.start(serve_metrics=False)
        try:
            web.state = "error"
            opened = wait_for(lambda: found if len(found := daemon.store.incidents.open_incidents()) == 3 else None)
            wait_for(lambda: daemon.store.vectors.count_vectors(BUILTIN) == 3, timeout=60)
            # each check of a failing target counts its failures in the summary: not a new meaning
            checked = daemon.store.results.count_results("api0")
            wait_for(lambda: daemon.store.results.count_results("api0") > checked + 5)
            passes = daemon.indexer.passes
            daemon.housekeeping()
            wait_for(lambda: daemon.indexer.passes > passes)
            assert value(daemon, "monitor_memory_embedded_total") == 3
            # a note changes what the incident says: embedded again, after the writer's event alone
            daemon.incidents.annotate(opened[0].id, "the pool was exhausted by a leaking batch client")
            wait_for(lambda: value(daemon, "monitor_memory_embedded_total") == 4, timeout=30)
        finally:
            daemon.stop()
    assert daemon.indexer.thread is not None and not daemon.indexer.thread.is_alive()
    store = Store(db_path)
    noted = store.incidents.incident(opened[0].id)
    assert noted is not None and "leaking batch client" in (noted.notes or "")
    fresh = {
        row.incident.id
        for row in store.vectors.incidents_to_embed(BUILTIN, 10)
        if row.embedded_hash != text_digest(passage_text(row.incident))
    }
    assert fresh == set()  # every vector is of its incident's words as they stand
    embedder = shared_embedder("builtin")
    assert embedder is not None
    query = embedder.embed(["the pool was exhausted by a leaking client"], query=True)[0]
    assert store.vectors.nearest(BUILTIN, query, k=1)[0][0] == opened[0].id
    assert {i for i, _ in store.vectors.nearest(BUILTIN, query, k=5)} == {incident.id for incident in opened}


def test_with_no_embedder_nothing_is_embedded_and_no_thread_runs(db_path: str) -> None:
    with Misbehaving() as web:
        daemon = Daemon(daemon_config(db_path, web.url("/state"), "none"), registry=CollectorRegistry())
        daemon.start(serve_metrics=False)
        try:
            web.state = "error"
            wait_for(lambda: len(daemon.store.incidents.open_incidents()) == 3)
            daemon.housekeeping()
            assert daemon.indexer.thread is None
        finally:
            daemon.stop()
    store = Store(db_path)
    assert store.vectors.embed_pending(BUILTIN) == 3 and store.vectors.count_vectors(BUILTIN) == 0


def test_a_failing_embedder_is_logged_once_and_the_daemon_goes_on(db_path: str, caplog: pytest.LogCaptureFixture) -> None:
    failing = Failing()
    with Misbehaving() as web, caplog.at_level(logging.WARNING, logger="monitor.daemon"):
        daemon = Daemon(
            daemon_config(db_path, web.url("/state"), "ollama/embed"),
            registry=CollectorRegistry(),
            embedders=lambda spec, api_base: failing,
        )
        daemon.start(serve_metrics=False)
        try:
            web.state = "error"
            wait_for(lambda: len(daemon.store.incidents.open_incidents()) == 3)
            wait_for(lambda: failing.calls >= 1, timeout=20)
            for _ in range(5):  # events and housekeeping wake it; it waits a minute before trying again
                daemon.housekeeping()
            checked = daemon.store.results.count_results("api0")
            wait_for(lambda: daemon.store.results.count_results("api0") > checked + 5)
            assert daemon.indexer.thread is not None and daemon.indexer.thread.is_alive()
        finally:
            daemon.stop()
    said = [r for r in caplog.records if "not embedded" in r.getMessage()]
    assert len(said) == 1 and "refused the connection" in said[0].getMessage()
    assert failing.calls == 1 and Store(db_path).vectors.count_vectors("failing@1") == 0
    assert not daemon.indexer.thread.is_alive()


def open_incidents(store: Store, n: int) -> list[int]:
    return [IncidentWrites(store).open_incident(f"t{i}", "consecutive", f"target {i} down") for i in range(n)]


def test_a_failure_is_tried_again_after_the_retry_delay(db_path: str) -> None:
    store = Store(db_path)
    ids = open_incidents(store, 5)
    failing, metrics = Failing(failures=1), Metrics(CollectorRegistry())
    config = daemon_config(db_path, "http://127.0.0.1:9/", "ollama/embed")
    indexer = Indexer(store, lambda: config, metrics=metrics, load=lambda *_: failing, retry=0.3)
    indexer.start()
    try:
        indexer.wake()
        wait_for(lambda: failing.calls == 1)
        wait_for(lambda: store.vectors.count_vectors("failing@1") == 5, timeout=10)  # no wake-up needed: the retry
    finally:
        indexer.stop()
    assert metrics.registry.get_sample_value("monitor_memory_embedded_total") == 5
    assert metrics.registry.get_sample_value("monitor_memory_embed_pending") == 0
    assert sorted(i for i, _ in store.vectors.nearest("failing@1", np.array([1, 0, 0, 0], np.float32), k=9)) == ids


def test_replicas_claim_what_they_embed_and_take_over_a_lapsed_claim(db_path: str) -> None:
    clock = [1000.0]
    first = Store(db_path, replica=0, clock=lambda: clock[0])
    second = Store(db_path, replica=1, clock=lambda: clock[0])
    ids = open_incidents(first, 5)
    mine = first.vectors.claim_incidents_to_embed("m@1", 3, lease=60)
    theirs = second.vectors.claim_incidents_to_embed("m@1", 3, lease=60)
    assert [r.incident.id for r in mine] == ids[:1:-1] and [r.incident.id for r in theirs] == ids[1::-1]
    assert second.vectors.claim_incidents_to_embed("m@1", 3, lease=60) == theirs  # its own claim, again
    assert all(r.embed_version == 1 and r.embedded_hash is None for r in mine + theirs)
    clock[0] += 61  # the first replica stopped: its claims lapse
    assert {r.incident.id for r in second.vectors.claim_incidents_to_embed("m@1", 9, lease=60)} == set(ids)


def test_concurrent_replicas_embed_each_incident_once(db_path: str) -> None:
    seed = Store(db_path)
    ids = open_incidents(seed, 40)
    seen: list[str] = []

    class Recording(Failing):
        def embed(self, texts: Sequence[str], *, query: bool = False) -> np.ndarray:
            seen.extend(texts)
            return np.ones((len(texts), 4), dtype=np.float32) / 2

    config = daemon_config(db_path, "http://127.0.0.1:9/", "ollama/embed")
    indexers = [Indexer(Store(db_path, replica=r), lambda: config, load=lambda *_: Recording(0)) for r in (0, 1)]
    threads = [threading.Thread(target=ix.index, args=(ix.store,)) for ix in indexers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert seed.vectors.count_vectors("failing@1") == len(ids) == len(seen) == len(set(seen))
    assert seed.vectors.embed_pending("failing@1") == 0


def test_vectors_of_another_model_are_claimed_and_embedded_again(db_path: str) -> None:
    store = Store(db_path)
    ids = open_incidents(store, 4)
    store.vectors.save_vectors("old@1", [(i, np.full(4, 0.5, dtype=np.float32)) for i in ids])
    assert store.vectors.embed_pending("failing@1") == 4
    claimed: list[ToEmbed] = store.vectors.claim_incidents_to_embed("failing@1", 10)
    assert sorted(r.incident.id for r in claimed) == ids
    config = daemon_config(db_path, "http://127.0.0.1:9/", "ollama/embed")
    assert Indexer(store, lambda: config, load=lambda *_: Failing(0)).index(store) == 4
    assert store.vectors.count_vectors("failing@1") == 4 and store.vectors.embed_pending("failing@1") == 0
