"""How long recall takes over 100,000 past incidents: full text alone, beside hybrid (full text + vectors).

    python bench/recall.py                        # SQLite in a temp dir; PostgreSQL too when one is at hand
    python bench/recall.py --incidents 20000 --no-postgres

Builds the history through the store's own methods (``Store.load``, as an import does): incidents of a
dozen kinds of failure, in five languages, each with its own hosts, codes and numbers. Embedding 100,000
texts with the builtin model would take over an hour (about 20 passages a second), so ``--real`` of them
(200) get their real vectors and the rest random unit vectors of the model's dimension: the search does
the same work whatever the vectors hold.

Then, for the same queries (an investigation's evidence, in other words than the incidents'), it prints
p50 and p95 of, side by side:

    full text        store.search_incidents: what recall did before (the baseline)
    vectors          store.nearest, given the query's vector
    hybrid           monitor.recall.hybrid_search, given the query's vector: full text + vectors + fusion

and, apart, the time to embed a query with the builtin model (one thread), the first ``nearest`` (every
vector read into memory) and an indexing pass with nothing to embed. Targets: recall p95 within 20 ms on
SQLite and 50 ms on PostgreSQL (``$MONITOR_TEST_POSTGRES``, or a throwaway cluster from Debian's
postgresql binaries, as the tests start one).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import numpy as np  # noqa: E402

from monitor.embedding import Builtin, evidence_text  # noqa: E402
from monitor.recall import hybrid_search, index_incidents  # noqa: E402
from monitor.store import Store  # noqa: E402

TARGET_MS = {"sqlite": 20.0, "postgres": 50.0}
SERVICES = ["checkout", "payments", "search", "auth", "catalog", "cart", "inventory", "shipping", "api", "web",
            "images", "reports", "billing", "notify", "gateway", "profile", "orders", "ledger", "feeds", "admin"]
PATTERNS = ["consecutive", "window", "latency", "flapping"]
# kind: (root cause, diagnoses in several languages, resolutions); {h} a host, {n} a number, {c} a status code
KINDS: dict[str, tuple[str, list[str], list[str]]] = {
    "cert": ("tls_expired", ["the TLS certificate of {h} had expired {n} hours before", "证书已过期: {h}",
                             "証明書の有効期限が切れていた ({h})", "das TLS-Zertifikat von {h} war abgelaufen"],
             ["renewed the certificate with certbot and reloaded nginx", "rotated the cert on {h}"]),
    "pool": ("upstream_saturated", ["database connection pool exhausted on {h}: {n} waiting requests",
                                    "el pool de conexiones de {h} se agotó", "pool de connexions saturé sur {h}"],
             ["raised the pool size from {n} to {n}0", "killed the long-running queries on {h}"]),
    "dns": ("dns_failure", ["the resolver returned SERVFAIL for {h}", "DNS lookup of {h} timed out after {n} s",
                            "名前解決に失敗した: {h}"], ["pointed resolv.conf at the secondary resolver", "fixed the zone file"]),
    "disk": ("disk_full", ["no space left on device on {h} (/var/log at {n}%)", "das Log-Volume auf {h} war voll"],
             ["rotated the logs and added logrotate", "grew the volume by {n} GB"]),
    "deploy": ("bad_deploy", ["HTTP {c} after deploy {n} of {h}: missing environment variable",
                              "la version {n} déployée sur {h} renvoie {c}"], ["rolled back to the previous release"]),
    "oom": ("oom_killed", ["the worker on {h} was OOM-killed at {n} MB", "el proceso en {h} se quedó sin memoria"],
            ["raised the memory limit to {n}0 MB", "fixed the leak in the image resizer"]),
    "timeout": ("upstream_timeout", ["upstream {h} timed out after {n} ms (HTTP {c})", "上流の {h} がタイムアウトした"],
                ["raised the proxy timeout", "scaled {h} out to {n} replicas"]),
    "ratelimit": ("rate_limited", ["HTTP 429 from the partner API {h}: over {n} requests a minute"],
                  ["asked the partner for a higher quota", "added client-side backoff"]),
}


def incident_row(rng: random.Random, n: int, now: float) -> dict[str, Any]:
    kind = rng.choice(list(KINDS))
    root, diagnoses, resolutions = KINDS[kind]
    slots = {"h": f"{rng.choice(['db', 'cache', 'lb', 'api', 'mq'])}-{rng.randint(1, 40)}.internal",
             "n": rng.randint(2, 900), "c": rng.choice([500, 502, 503, 504])}
    opened = now - 86400 * 365 + n * 300.0
    return {"id": n + 1, "target": f"{rng.choice(SERVICES)}-{rng.choice(['eu', 'us', 'ap'])}", "pattern": rng.choice(PATTERNS),
            "status": "resolved", "opened_at": opened, "closed_at": opened + 1800, "updated_at": opened + 1800,
            "severity": "critical", "summary": f"{rng.randint(2, 9)} consecutive failures", "root_cause": root,
            "diagnosis": rng.choice(diagnoses).format(**slots),
            "resolution": rng.choice(resolutions).format(**slots) if rng.random() < 0.7 else None}


def build(store: Store, embedder: Builtin, count: int, real: int, rng: random.Random) -> list[dict[str, Any]]:
    """``count`` incidents, ``real`` of them (spread through) embedded for real, the rest random unit vectors."""
    started = time.perf_counter()
    now = time.time()
    rows = [incident_row(rng, n, now) for n in range(count)]
    store.load({"incidents": rows}, batch=5000)
    print(f"  {store.count_incidents():,} incidents in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    ids = [int(row["id"]) for row in store.incidents_to_embed(embedder.name, count)]
    chosen = set(rng.sample(ids, min(real, len(ids))))
    noise = rng_unit(np.random.default_rng(7), len(ids) - len(chosen), embedder.dim)
    bulk = [(incident, vector) for incident, vector in zip((i for i in ids if i not in chosen), noise, strict=True)]
    for start in range(0, len(bulk), 5000):
        store.save_vectors(embedder.name, bulk[start:start + 5000])
    print(f"  {len(bulk):,} random vectors stored in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    embedded = index_incidents(store, embedder, limit=count)
    print(f"  {embedded} incidents embedded for real in {time.perf_counter() - started:.1f} s", flush=True)
    return [row for row in rows if row["id"] in chosen]


def rng_unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    matrix = rng.standard_normal((n, dim)).astype(np.float32)
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit


def queries(rng: random.Random, real: list[dict[str, Any]], count: int) -> list[str]:
    """Evidence as an investigation would quote it: another phrasing, host and code than the incident's."""
    out = []
    for row in rng.sample(real, min(count, len(real))):
        kind = next(k for k, (root, _, _) in KINDS.items() if root == row["root_cause"])
        fresh = incident_row(rng, 0, 0.0)
        body = rng.choice(KINDS[kind][1]).format(h=f"db-{rng.randint(41, 80)}.internal", n=rng.randint(2, 900), c=503)
        out.append(evidence_text(status_code=rng.choice([None, 502, 503]), error="unexpected_status", body=body,
                                 hosts=[fresh["target"]]))
    return out


def percentiles(run: Callable[[], Any], repeat: int, budget: float = 30.0) -> tuple[float, float]:
    """p50 and p95 in ms of ``repeat`` runs, or of as many as ``budget`` seconds allow (at least 3)."""
    times: list[float] = []
    deadline = time.monotonic() + budget
    while len(times) < repeat and (len(times) < 3 or time.monotonic() < deadline):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]


def over(items: list[Any], run: Callable[[Any], Any]) -> Callable[[], None]:
    """A callable that runs ``run`` on the next item each call, round the list."""
    state = {"i": 0}

    def once() -> None:
        run(items[state["i"] % len(items)])
        state["i"] += 1
    return once


def measure(label: str, store: Store, embedder: Builtin, texts: list[str], vectors: np.ndarray,
            repeat: int) -> dict[str, tuple[float, float]]:
    started = time.perf_counter()
    store.nearest(embedder.name, vectors[0], 5)
    print(f"  [{label}] first nearest (every vector read into memory): {(time.perf_counter() - started) * 1000:.0f} ms")
    print(f"  [{label}] an indexing pass with nothing to embed: {percentiles(lambda: index_incidents(store, embedder), 5)[0]:.1f} ms")
    pairs = list(zip(texts, vectors, strict=True))
    return {
        "full text": percentiles(over(texts, lambda text: store.search_incidents(text, 5)), repeat),
        "vectors": percentiles(over(list(vectors), lambda v: store.nearest(embedder.name, v, 20)), repeat),
        "hybrid": percentiles(over(pairs, lambda p: hybrid_search(store, embedder, p[0], 5, query_vector=p[1])), repeat),
    }


@contextmanager
def postgres() -> Iterator[str | None]:
    """A database URL: $MONITOR_TEST_POSTGRES, a throwaway cluster, or None when there is no PostgreSQL."""
    from postgres import ENV, Cluster, Schemas, bindir

    if os.environ.get(ENV):
        yield Schemas(os.environ[ENV]).fresh()[1]
        return
    where = bindir()
    if where is None:
        yield None
        return
    with Cluster(where) as url:
        yield url


def run(label: str, location: str, args: argparse.Namespace, embedder: Builtin) -> dict[str, tuple[float, float]]:
    rng = random.Random(11)
    store = Store(location)
    print(f"building {label} ({location if label == 'sqlite' else 'PostgreSQL'}): {args.incidents:,} incidents", flush=True)
    real = build(store, embedder, args.incidents, args.real, rng)
    texts = queries(rng, real, args.queries)
    vectors = embedder.embed(texts, query=True)
    figures = measure(label, store, embedder, texts, vectors, args.repeat)
    store.close()
    report({label: figures}, args.incidents)
    return figures


def embed_time(embedder: Builtin, repeat: int) -> tuple[float, float]:
    texts = queries(random.Random(3), [incident_row(random.Random(n), n, 0.0) for n in range(50)], 50)
    return percentiles(over(texts, lambda text: embedder.embed([text], query=True)), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--incidents", type=int, default=100_000)
    parser.add_argument("--real", type=int, default=200, help="incidents embedded with the real model")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # a throwaway PostgreSQL cluster is stopped on the way out
    embedder = Builtin()
    with tempfile.TemporaryDirectory(prefix="recall-bench-") as where:  # 460 MB at 100,000 incidents
        results = {"sqlite": run("sqlite", str(Path(where) / "recall.db"), args, embedder)}
    if not args.no_postgres:
        with postgres() as url:
            if url is None:
                print("no PostgreSQL here (set $MONITOR_TEST_POSTGRES or apt-get install postgresql): skipped")
            else:
                results["postgres"] = run("postgres", url, args, embedder)
    if len(results) > 1:
        report(results, args.incidents)
    embedding = embed_time(embedder, 40)
    print(f"\nembedding a query (builtin, one thread): {embedding[0]:.1f} / {embedding[1]:.1f} ms (p50 / p95)")


def report(results: dict[str, dict[str, tuple[float, float]]], count: int) -> None:
    print(f"\nrecall over {count:,} incidents, ms (p50 / p95), given the query's vector; k = 5", flush=True)
    print(f"{'store':<10} {'full text (before)':>20} {'vectors':>16} {'hybrid':>16}   target p95")
    for label, figures in results.items():
        cells = " ".join(f"{figures[name][0]:7.1f} / {figures[name][1]:6.1f}" for name in ("full text", "vectors", "hybrid"))
        verdict = "ok" if figures["hybrid"][1] <= TARGET_MS[label] else "OVER"
        print(f"{label:<10}   {cells}   {TARGET_MS[label]:.0f} ms {verdict}", flush=True)


if __name__ == "__main__":
    main()
