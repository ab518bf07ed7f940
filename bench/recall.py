"""How long recall takes over 100,000 past incidents: full text (before and now), vectors, hybrid, and the whole recall.

    python bench/recall.py                        # SQLite in a temp dir; PostgreSQL too when one is at hand
    python bench/recall.py --incidents 20000 --no-postgres

Builds the history through the store's own methods (``Store.load``, as an import does): incidents of a
dozen kinds of failure, in five languages, each with its own hosts, codes and numbers. Embedding 100,000
texts with the builtin model would take over an hour (about 20 passages a second), so ``--real`` of them
(200) get their real vectors and the rest random unit vectors of the model's dimension: the search does
the same work whatever the vectors hold.

The graph: every target depends on pg-main, and each incident named its host. Then, for the same
queries (an investigation's evidence, in other words than the incidents', naming a host or pg-main), it prints
p50 and p95 of, side by side:

    text before      the full-text query of migration 14's store (every word of the evidence, any of
                     them, every match ranked), kept here as the baseline
    full text        store.search_incidents: the query's rarest words, the best ranked matches
    vectors          store.nearest, given the query's vector
    hybrid           monitor.memory.search.hybrid_search, given the query's vector: full text + vectors + fusion
    recall           monitor.memory.recall.gather, given the query's vector: what the agent's
                     search_incidents tool does (its own target's incidents, full text, the graph's
                     sources, vectors, fusion, the candidates' rows, similarity and words)

and, apart, the time to embed a query with the builtin model (one thread), the first ``nearest`` (every
vector read into memory) and an indexing pass with nothing to embed. On PostgreSQL the statistics are
taken first (``ANALYZE``, as autovacuum does within a minute of a bulk load): full-text search reads the
words' frequencies from them. Targets: recall p95 within 20 ms on
SQLite and 50 ms on PostgreSQL (``$MONITOR_TEST_POSTGRES``, or a throwaway cluster from Debian's
postgresql binaries, as the tests start one).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import numpy as np  # noqa: E402

from monitor.core.incidents import Incident
from monitor.memory.embedding import Builtin, Vectors  # noqa: E402
from monitor.memory.recall import Evidence, gather  # noqa: E402
from monitor.memory.search import hybrid_search, index_incidents  # noqa: E402
from monitor.store import Store  # noqa: E402
from monitor.store.rows import many
from monitor.store.schema_pg import PG_TEXT_OF  # noqa: E402
from monitor.store.writes import IncidentWrites

TARGET_MS = {"sqlite": 20.0, "postgres": 50.0}
QUALITY = 12  # queries recall's quality is measured on (the old query takes 8 s a query on PostgreSQL)
SERVICES = [
    "checkout",
    "payments",
    "search",
    "auth",
    "catalog",
    "cart",
    "inventory",
    "shipping",
    "api",
    "web",
    "images",
    "reports",
    "billing",
    "notify",
    "gateway",
    "profile",
    "orders",
    "ledger",
    "feeds",
    "admin",
]
PATTERNS = ["consecutive", "window", "latency", "flapping"]
# kind: (root cause, diagnoses in several languages, resolutions); {h} a host, {n} a number, {c} a status code
KINDS: dict[str, tuple[str, list[str], list[str]]] = {
    "cert": (
        "tls_expired",
        [
            "the TLS certificate of {h} had expired {n} hours before",
            "证书已过期: {h}",
            "証明書の有効期限が切れていた ({h})",
            "das TLS-Zertifikat von {h} war abgelaufen",
        ],
        ["renewed the certificate with certbot and reloaded nginx", "rotated the cert on {h}"],
    ),
    "pool": (
        "upstream_saturated",
        [
            "database connection pool exhausted on {h}: {n} waiting requests",
            "el pool de conexiones de {h} se agotó",
            "pool de connexions saturé sur {h}",
        ],
        ["raised the pool size from {n} to {n}0", "killed the long-running queries on {h}"],
    ),
    "dns": (
        "dns_failure",
        ["the resolver returned SERVFAIL for {h}", "DNS lookup of {h} timed out after {n} s", "名前解決に失敗した: {h}"],
        ["pointed resolv.conf at the secondary resolver", "fixed the zone file"],
    ),
    "disk": (
        "disk_full",
        ["no space left on device on {h} (/var/log at {n}%)", "das Log-Volume auf {h} war voll"],
        ["rotated the logs and added logrotate", "grew the volume by {n} GB"],
    ),
    "deploy": (
        "bad_deploy",
        ["HTTP {c} after deploy {n} of {h}: missing environment variable", "la version {n} déployée sur {h} renvoie {c}"],
        ["rolled back to the previous release"],
    ),
    "oom": (
        "oom_killed",
        ["the worker on {h} was OOM-killed at {n} MB", "el proceso en {h} se quedó sin memoria"],
        ["raised the memory limit to {n}0 MB", "fixed the leak in the image resizer"],
    ),
    "timeout": (
        "upstream_timeout",
        ["upstream {h} timed out after {n} ms (HTTP {c})", "上流の {h} がタイムアウトした"],
        ["raised the proxy timeout", "scaled {h} out to {n} replicas"],
    ),
    "ratelimit": (
        "rate_limited",
        ["HTTP 429 from the partner API {h}: over {n} requests a minute"],
        ["asked the partner for a higher quota", "added client-side backoff"],
    ),
}


def incident_row(rng: random.Random, n: int, now: float) -> dict[str, Any]:
    kind = rng.choice(list(KINDS))
    root, diagnoses, resolutions = KINDS[kind]
    slots = {
        "h": f"{rng.choice(['db', 'cache', 'lb', 'api', 'mq'])}-{rng.randint(1, 40)}.internal",
        "n": rng.randint(2, 900),
        "c": rng.choice([500, 502, 503, 504]),
    }
    opened = now - 86400 * 365 + n * 300.0
    return {
        "id": n + 1,
        "target": f"{rng.choice(SERVICES)}-{rng.choice(['eu', 'us', 'ap'])}",
        "pattern": rng.choice(PATTERNS),
        "status": "resolved",
        "opened_at": opened,
        "closed_at": opened + 1800,
        "updated_at": opened + 1800,
        "severity": "critical",
        "summary": f"{rng.randint(2, 9)} consecutive failures",
        "root_cause": root,
        "diagnosis": rng.choice(diagnoses).format(**slots),
        "resolution": rng.choice(resolutions).format(**slots) if rng.random() < 0.7 else None,
    }


def build(store: Store, embedder: Builtin, count: int, real: int, rng: random.Random) -> list[dict[str, Any]]:
    """``count`` incidents, ``real`` of them (spread through) embedded for real, the rest random unit vectors."""
    started = time.perf_counter()
    now = time.time()
    rows = [incident_row(rng, n, now) for n in range(count)]
    IncidentWrites(store).load_dump({"incidents": rows}, batch=5000)
    print(f"  {store.incidents.count_incidents():,} incidents in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    ids = [row.incident.id for row in store.vectors.incidents_to_embed(embedder.name, count)]
    chosen = set(rng.sample(ids, min(real, len(ids))))
    noise = rng_unit(np.random.default_rng(7), len(ids) - len(chosen), embedder.dim)
    bulk = [(incident, vector) for incident, vector in zip((i for i in ids if i not in chosen), noise, strict=True)]
    for start in range(0, len(bulk), 5000):
        store.vectors.save_vectors(embedder.name, bulk[start : start + 5000])
    print(f"  {len(bulk):,} random vectors stored in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    embedded = index_incidents(store, embedder, limit=count)
    print(f"  {embedded} incidents embedded for real in {time.perf_counter() - started:.1f} s", flush=True)
    started = time.perf_counter()
    seed_graph(store, rows)
    print(f"  the graph (every target on pg-main, each incident naming its host) in {time.perf_counter() - started:.1f} s")
    return [row for row in rows if row["id"] in chosen]


def seed_graph(store: Store, rows: list[dict[str, Any]]) -> None:
    """Every target depends on pg-main (so every other target is a neighbour), and each incident's evidence
    named its host (``db-12``), as :func:`monitor.memory.graph.learn_opened` records it."""
    targets = sorted({row["target"] for row in rows})
    store.graph.replace_configured_edges([edge for t in targets for edge in ((t, t, "address"), (t, "pg-main", "config"))])
    mentions = [(row["id"], found.group(1)) for row in rows if (found := re.search(r"(\w+-\d+)\.internal", row["diagnosis"]))]
    for start in range(0, len(mentions), 10_000):
        with store.transaction() as db:
            db.executemany("INSERT INTO graph_mentions (incident_id, component) VALUES (?, ?)", mentions[start : start + 10_000])


def rng_unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    matrix = rng.standard_normal((n, dim)).astype(np.float32)
    unit: np.ndarray = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit


def queries(rng: random.Random, real: list[dict[str, Any]], count: int) -> list[Evidence]:
    """Evidence as an investigation would see it: another phrasing, host and code than the incident's."""
    out = []
    for row in rng.sample(real, min(count, len(real))):
        kind = next(k for k, (root, _, _) in KINDS.items() if root == row["root_cause"])
        fresh = incident_row(rng, 0, 0.0)
        body = rng.choice(KINDS[kind][1]).format(h=f"db-{rng.randint(1, 80)}.internal", n=rng.randint(2, 900), c=503)
        upstream = rng.choice([f"via {fresh['target']}.internal", 'connection to server at "pg-main.db.internal" failed'])
        out.append(
            Evidence(fresh["target"], row["root_cause"], rng.choice([None, 502, 503]), "unexpected_status", answer=f"{body}\n{upstream}")
        )
    return out


class Given:
    """The builtin embedder, but a query it was given the vector of is not embedded again: recall is timed
    given the query's vector (embedding one is timed apart); passages are embedded for real."""

    def __init__(self, embedder: Builtin, texts: list[str], vectors: Vectors) -> None:
        self.embedder, self.vectors = embedder, dict(zip(texts, vectors, strict=True))
        self.name, self.dim = embedder.name, embedder.dim

    def embed(self, texts: Sequence[str], *, query: bool = False) -> Vectors:
        if query and all(text in self.vectors for text in texts):
            return np.stack([self.vectors[text] for text in texts])
        return self.embedder.embed(texts, query=query)


def text_before(store: Store, query: str, k: int) -> list[Incident]:
    """The full-text search of migration 14's store: any word of ``query``, every match ranked."""
    words = list(dict.fromkeys(re.findall(r"\w{2,}", query.lower())))
    if store.shared:
        match = " | ".join(f"'{w}'" for w in dict.fromkeys(re.findall(r"[^\W_]{2,}", query.lower())))
        text = PG_TEXT_OF.format(row="")
        return many(
            Incident,
            store._rows(
                f"""SELECT incidents.*, -ts_rank({text}, q) AS rank FROM incidents, to_tsquery('simple', ?) AS q
                WHERE {text} @@ q ORDER BY (resolution IS NOT NULL AND resolution != '') DESC, rank, id DESC
                LIMIT ?""",
                (match, k),
            ),
        )
    return many(
        Incident,
        store._rows(
            """SELECT incidents.*, incidents_fts.rank AS rank FROM incidents_fts
           JOIN incidents ON incidents.id = incidents_fts.rowid WHERE incidents_fts MATCH ?
           ORDER BY (incidents.resolution IS NOT NULL AND incidents.resolution != '') DESC, incidents_fts.rank
           LIMIT ?""",
            (" OR ".join(f'"{w}"' for w in words), k),
        ),
    )


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


def measure(
    label: str, store: Store, embedder: Builtin, evidence: list[Evidence], vectors: Vectors, repeat: int
) -> dict[str, tuple[float, float]]:
    started = time.perf_counter()
    store.vectors.nearest(embedder.name, vectors[0], 5)
    print(f"  [{label}] first nearest (every vector read into memory): {(time.perf_counter() - started) * 1000:.0f} ms")
    print(f"  [{label}] an indexing pass with nothing to embed: {percentiles(lambda: index_incidents(store, embedder), 5)[0]:.1f} ms")
    texts = [e.text() for e in evidence]
    for name, search in (
        ("text before", lambda text: text_before(store, text, 20)),
        ("full text", lambda text: store.incidents.search_incidents(text, 20)),
    ):
        print(
            f"  [{label}] {name}: {same_cause(evidence[:QUALITY], search):.2f} of the 20 best have the evidence's "
            f"root cause ({QUALITY} queries)"
        )
    given = Given(embedder, texts, vectors)
    pairs = list(zip(texts, vectors, strict=True))
    return {
        "text before": percentiles(over(texts, lambda text: text_before(store, text, 20)), repeat, budget=15.0),
        "full text": percentiles(over(texts, lambda text: store.incidents.search_incidents(text, 20)), repeat),
        "vectors": percentiles(over(list(vectors), lambda v: store.vectors.nearest(embedder.name, v, 20)), repeat),
        "hybrid": percentiles(over(pairs, lambda p: hybrid_search(store, embedder, p[0], 5, query_vector=p[1])), repeat),
        "recall": percentiles(over(evidence, lambda e: gather(store, e, embedder=given, k=5)), repeat),
    }


def same_cause(evidence: list[Evidence], search: Callable[[str], list[Incident]]) -> float:
    """How often the incidents a search finds have the root cause of the evidence's own (recall's quality)."""
    shares = []
    for one in evidence:
        found = search(one.text())
        shares.append(sum(incident.root_cause == one.reading for incident in found) / max(len(found), 1))
    return float(statistics.mean(shares))


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
    if store.shared:
        store.engine.execute("ANALYZE")
    evidence = queries(rng, real, args.queries)
    vectors = embedder.embed([e.text() for e in evidence], query=True)
    figures = measure(label, store, embedder, evidence, vectors, args.repeat)
    store.close()
    report({label: figures}, args.incidents)
    return figures


def embed_time(embedder: Builtin, repeat: int) -> tuple[float, float]:
    texts = [e.text() for e in queries(random.Random(3), [incident_row(random.Random(n), n, 0.0) for n in range(50)], 50)]
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


COLUMNS = ("text before", "full text", "vectors", "hybrid", "recall")


def report(results: dict[str, dict[str, tuple[float, float]]], count: int) -> None:
    load = " / ".join(f"{n:.2f}" for n in os.getloadavg())
    print(f"\nrecall over {count:,} incidents, ms (p50 / p95), given the query's vector; load average {load}", flush=True)
    print(f"{'store':<10}" + "".join(f"{name:>18}" for name in COLUMNS) + "   target p95 (recall)")
    for label, figures in results.items():
        cells = "".join(f"{figures[name][0]:8.1f} /{figures[name][1]:7.1f}" for name in COLUMNS)
        verdict = "ok" if figures["recall"][1] <= TARGET_MS[label] else "OVER"
        print(f"{label:<10}{cells}   {TARGET_MS[label]:.0f} ms {verdict}", flush=True)


if __name__ == "__main__":
    main()
