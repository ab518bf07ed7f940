"""The fleet's graph: components named in answers, edges from config and from incidents that open together,
recall across targets through a shared component, and the agent's neighbours tool."""

from __future__ import annotations

import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from past import known

from monitor import wiring
from monitor.agent.tools import Neighbours, toolset
from monitor.checks.engine import Checker, Result
from monitor.config import Config, ConfigError, parse
from monitor.daemon import daemon_cycle
from monitor.memory import graph
from monitor.memory.components import canonical, extract
from monitor.memory.recall import evidence_of
from monitor.store import Store
from monitor.store.writes import IncidentWrites

PG_FULL = (
    'psycopg2.OperationalError: connection to server at "pg-main.db.internal" (10.0.4.12), port 5432 failed: '
    "FATAL:  sorry, too many clients already"
)


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def fleet(*targets: dict[str, Any], **extra: Any) -> Config:
    return Config.model_validate({"targets": list(targets), **extra})


# -- config --------------------------------------------------------------------------------------


def target_yaml(depends_on: str) -> str:
    return f"""
targets:
  - name: orders
    url: http://orders.example.com/health
    depends_on: {depends_on}
  - name: db
    url: tcp://pg-main.db.internal:5432
"""


@pytest.mark.parametrize(
    ("depends_on", "message"),
    [
        ("[orders]", "targets[0].depends_on[0]: target 'orders' depends on itself"),
        ("[pg-main, pg-main]", "targets[0].depends_on[1]: 'pg-main' is listed twice"),
        ("[DB]", "targets[0].depends_on[0]: no target named 'DB': did you mean 'db'?"),
        ('["pg main!"]', "targets[0].depends_on[0]: 'pg main!' is not a target or component name"),
        ("pg-main", "targets[0].depends_on: Input should be a valid list"),
    ],
)
def test_depends_on_is_validated_naming_the_problem(depends_on: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse(target_yaml(depends_on))
    assert message in str(raised.value)


def test_depends_on_takes_targets_and_free_components() -> None:
    config = parse(target_yaml("[db, pg-main, redis-sessions.cache.internal]"))
    assert config.targets[0].depends_on == ["db", "pg-main", "redis-sessions.cache.internal"]
    assert config.targets[1].depends_on == []
    with pytest.raises(ValueError, match="depends on itself"):  # built in code, not read from a file
        fleet({"name": "a", "url": "http://a.example.com/", "depends_on": ["a"]})


# -- components named in what targets answer ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (PG_FULL, ["pg-main", "10.0.4.12"]),
        (
            'could not connect to server: Connection refused\n\tIs the server running on host "pg-main" (10.0.4.12) and '
            "accepting\n\tTCP/IP connections on port 5432?",
            ["pg-main", "10.0.4.12"],
        ),
        ("FATAL: remaining connection slots are reserved for non-replication superuser connections (pg-main)", ["pg-main"]),
        (
            "2024/05/01 12:00:00 [error] 31#31: *1 connect() failed (111: Connection refused) while connecting to upstream, "
            'client: 10.1.2.3, server: shop.example.com, request: "GET /health HTTP/1.1", '
            'upstream: "http://orders_backend/health", host: "shop.example.com"',
            ["shop.example.com", "orders_backend"],
        ),
        ('no live upstreams while connecting to upstream "payments"', ["payments"]),
        ("no healthy upstream for cluster 'fraud-scoring'", ["fraud-scoring"]),
        ("Error 111 connecting to redis-sessions:6379. Connection refused.", ["redis-sessions"]),
        ("redis.exceptions.ConnectionError: Error -2 connecting to redis:6379. Name or service not known.", ["redis"]),
        ("Error: connect ECONNREFUSED 10.0.3.7:6379\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)", ["10.0.3.7"]),
        (
            '{"status":"fail","checks":{"kafka":"fail: produce to orders.v1 on kafka-main failed: NOT_ENOUGH_REPLICAS '
            '(min.insync.replicas=2, in-sync=1)"}}',
            ["kafka-main"],
        ),
        ("Connection to node 2 (kafka-main-2.kafka.svc.cluster.local/10.0.5.2:9092) could not be established.", ["kafka-main", "10.0.5.2"]),
        ("getaddrinfo ENOTFOUND payments.internal", ["payments.internal"]),
        ("Can't connect to MySQL server on 'mysql-primary.prod:3306' (111)", ["mysql-primary"]),
        ("Server be_orders/web1 is DOWN, reason: Layer4 connection problem", ["be_orders"]),
        ('{"error":"upstream timeout","host":"inventory-api"}', ["inventory-api"]),
        ('django.db.utils.OperationalError: could not translate host name "orders-db" to address', ["orders-db"]),
        ('{"error":"refusing to price: fx-rates feed is stale (last update 2024-11-14T02:00:00Z, max age 2h)"}', ["fx-rates"]),
        ("the pg-main cluster is read-only: cannot write to a read-only replica", ["pg-main"]),
    ],
)
def test_components_are_read_from_realistic_answers(text: str, expected: list[str]) -> None:
    assert extract(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "org.postgresql.util.PSQLException: FATAL at org.postgresql.core.v3.ConnectionFactoryImpl.tryConnect("
        "ConnectionFactoryImpl.java:693)",
        'Traceback (most recent call last):\n  File "/app/orders/db.py", line 12, in connect',
        "failed to re-connect; status:503 at 12:30:45; version 1.2.3; see config.yaml; non-blocking, e.g. this",
        '<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">'
        '<html xmlns="http://www.w3.org/1999/xhtml"><center>nginx/1.25.3</center></html>',
        "connect ECONNREFUSED 127.0.0.1:5432, localhost:6379 and http://[::1]:80/",
        "upstream connect error or disconnect/reset before headers. reset reason: connection failure",
        "mail ops@example.com",
        '{"status":"fail","checks":{"queue":"pass"},"last_event":"Worker (pid:4127) was sent SIGKILL!"}',
    ],
)
def test_words_files_code_and_loopback_name_no_component(text: str) -> None:
    assert extract(text) == []


def test_one_component_has_one_name_however_it_is_written() -> None:
    assert {canonical(n) for n in ("PG-Main.db.internal.:5432", "pg-main", "pg-main-0.pg.svc")} == {"pg-main"}
    assert canonical("api.example.com:443") == "api.example.com"  # 'api' is a word, not a service's name
    assert canonical("127.0.0.1:5432") is None and canonical("localhost") is None


# -- edges from config -----------------------------------------------------------------------------


def configured_fleet(**orders: Any) -> Config:
    return fleet(
        {"name": "orders", "url": "http://orders.example.com/health", **orders},
        {"name": "invoices", "url": "http://invoices.example.com/health", "depends_on": ["pg-main"]},
        {"name": "db", "url": "tcp://pg-main.db.internal:5432"},
        {"name": "checkout", "url": "http://checkout.example.com/", "depends_on": ["orders"]},
        {"name": "search", "url": "http://search.example.com/", "depends_on": ["es-logs"]},
    )


def test_config_edges_link_targets_sharing_a_component_and_follow_a_reload(db_path: str) -> None:
    store = Store(db_path)
    graph.sync_config(store, configured_fleet(depends_on=["pg-main"]))
    assert [(c.name, c.sources) for c in graph.components_of(store, "orders")] == [("pg-main", ("config",))]
    linked = {(n.target, n.component, n.relation) for n in graph.neighbours(store, "orders")}
    assert linked == {("db", "pg-main", "is"), ("invoices", "pg-main", "shares"), ("checkout", "orders", "depends")}
    graph.sync_config(store, configured_fleet())  # the reloaded config dropped the dependency
    assert graph.components_of(store, "orders") == []
    assert {n.target for n in graph.neighbours(store, "orders")} == {"checkout"}


# -- edges learned from incidents ------------------------------------------------------------------


def test_incidents_opening_together_repeatedly_link_their_targets(db_path: str) -> None:
    clock = Clock()
    store = Store(db_path, clock=clock)

    def together(*targets: str, apart: float = 30.0) -> None:
        for target in targets:
            incident = IncidentWrites(store).open_incident(target, "consecutive", "down")
            graph.learn_opened(store, known(store.incidents.incident(incident)), "")
            clock.now += apart
        for target in targets:
            IncidentWrites(store).close_incident(store.incidents.open_incidents(target)[-1].id)
        clock.now += 3600

    together("cart", "payments")
    assert graph.neighbours(store, "cart") == []  # once is a coincidence
    together("cart", "payments")
    assert [(n.target, n.relation, n.source) for n in graph.neighbours(store, "cart")] == [("payments", "is", "co-occurred")]
    assert [(c.name, c.weight) for c in graph.components_of(store, "payments")] == [("cart", 2)]
    together("cart", "mail", apart=graph.TOGETHER + 1)  # too far apart
    together("cart", "mail", apart=graph.TOGETHER + 1)
    assert "mail" not in {n.target for n in graph.neighbours(store, "cart")}
    burst = [f"site-{i}" for i in range(graph.BURST + 2)]  # the network, not a shared component
    together(*burst, apart=1.0)
    together(*burst, apart=1.0)
    assert graph.neighbours(store, burst[-1]) == []


def test_an_incident_learns_the_components_its_answer_named(db_path: str) -> None:
    store = Store(db_path)
    graph.sync_config(store, configured_fleet())
    incident = known(store.incidents.incident(IncidentWrites(store).open_incident("invoices", "consecutive", "3 consecutive failures")))
    assert graph.learn_opened(store, incident, "unexpected_status: status 500 " + PG_FULL) == ["pg-main", "10.0.4.12"]
    assert ("pg-main", ("config", "answered"), 2) in [(c.name, c.sources, c.weight) for c in graph.components_of(store, "invoices")]
    assert [r.incident.id for r in graph.incidents_via_components(store, "orders", PG_FULL)] == [incident.id]
    IncidentWrites(store).close_incident(incident.id)
    assert IncidentWrites(store).forget_incidents([incident.id]) == 1  # its mentions go with it
    assert graph.incidents_via_components(store, "orders", PG_FULL) == []


# -- recall across targets through a shared component ----------------------------------------------


def past(store: Store, target: str, diagnosis: str, resolution: str) -> int:
    incident = IncidentWrites(store).open_incident(target, "consecutive", f"3 consecutive failures of {target}")
    IncidentWrites(store).update_incident(incident, diagnosis=diagnosis, root_cause="server_error")
    IncidentWrites(store).close_incident(incident, resolution)
    return incident


def test_a_fix_on_another_target_sharing_the_failing_component_is_recalled(db_path: str) -> None:
    """The defect: one PostgreSQL behind several services, the body names it; the other service's fix was
    never recalled (recall looked at the same target, and at words)."""
    store = Store(db_path)
    own = past(store, "orders", "orders answered 500 after release 7.4", "rolled back to 7.3.2")
    invoices = past(
        store,
        "invoices",
        "invoices answered 500: pg-main refused new connections, max_connections reached",
        "pointed invoice-renderer at pgbouncer-main",
    )
    past(
        store,
        "shipping",
        "shipping answered 500: FATAL sorry, too many clients already on pg-logistics",
        "restored max_connections=400 on pg-logistics",
    )
    past(store, "api", "api answered 503: redis-sessions was out of memory", "raised maxmemory")
    now = IncidentWrites(store).open_incident("orders", "consecutive", "3 consecutive failures of orders")
    found = graph.incidents_via_components(store, "orders", PG_FULL, k=5, exclude=now)
    assert [(r.incident.id, r.component, r.how) for r in found] == [(invoices, "pg-main", "named")]
    assert found[0].mark() == "via shared component pg-main: its text names it"
    assert own not in {r.incident.id for r in found}  # the target's own past is recall's other source
    assert graph.incidents_via_components(store, "api", "unexpected_status: status 500", exclude=now) == []


def test_incidents_are_found_through_what_answered_and_through_neighbours(db_path: str) -> None:
    store = Store(db_path)
    graph.sync_config(store, configured_fleet(depends_on=["pg-main"]))
    silent = IncidentWrites(store).open_incident("invoices", "consecutive", "3 consecutive failures of invoices")
    graph.learn_opened(store, known(store.incidents.incident(silent)), PG_FULL)  # its text never names pg-main
    IncidentWrites(store).close_incident(silent, "terminated idle sessions")
    checkout = past(store, "checkout", "checkout answered 502: orders was down", "restarted orders")
    search = past(store, "search", "es-logs was read-only", "freed disk on es-logs")
    found = graph.incidents_via_components(store, "orders", "", k=5)
    assert [(r.incident.id, r.component, r.how) for r in found] == [(silent, "pg-main", "answered"), (checkout, "orders", "neighbour")]
    assert search not in {r.incident.id for r in found}


def test_the_daemon_learns_from_real_checks_when_incidents_open(db_path: str) -> None:
    with pg_refusing() as base:
        clock = Clock()
        store = Store(db_path, clock=clock)
        config = fleet(
            {"name": "invoices", "url": f"{base}/invoices"},
            {"name": "orders", "url": f"{base}/orders"},
            {"name": "api", "url": f"{base}/api"},
            detectors={"consecutive": 1},
        )
        cycle = daemon_cycle(config, store, clock=clock)

        def checked(targets: Any) -> Any:  # checked now by the test's clock (an older result is not judged)
            return [replace(r, checked_at=clock.now) for r in Checker().run(targets)]

        opened = cycle.after_checks(checked(config.targets[:1]))
        IncidentWrites(store).close_incident(opened[0].incident.id, "routed invoice-renderer through pgbouncer-main")
        for _ in range(3):  # incidents open once: later failing checks of an open incident teach nothing more
            clock.now += 3600
            cycle.after_checks(checked(config.targets[1:]))
    found = graph.incidents_via_components(store, "orders", "", k=3)
    assert [(r.incident.target, r.component, r.how) for r in found] == [("invoices", "pg-main", "answered")]
    assert [(c.name, c.weight) for c in graph.components_of(store, "orders")] == [("pg-main", 1), ("10.0.4.12", 1)]
    assert graph.components_of(store, "api") == []


class PgRefusing(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = (PG_FULL if self.path != "/api" else "internal error").encode()
        self.send_response(500)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class pg_refusing:  # noqa: N801 - used as a context manager, like a function
    def __enter__(self) -> str:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), PgRefusing)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


# -- the agent's tool ------------------------------------------------------------------------------


def result(name: str, ok: bool, at: float, error: str | None = None, detail: str = "") -> Result:
    return Result(
        name=name,
        url="",
        ok=ok,
        severity="ok" if ok else "critical",
        status_code=None,
        latency_ms=3.0,
        error=error,
        detail=detail,
        checked_at=at,
    )


def test_the_neighbours_tool_shows_a_failing_shared_component(db_path: str) -> None:
    clock = Clock()
    store = Store(db_path, clock=clock)
    config = configured_fleet(depends_on=["pg-main", "kafka-main"])
    graph.sync_config(store, config)
    store.results.add_results(
        [
            result("db", False, clock.now - 20, "connection_refused", "connect to pg-main.db.internal:5432 refused"),
            result("invoices", True, clock.now - 5),
            result("search", False, clock.now),
        ]
    )
    db_incident = IncidentWrites(store).open_incident("db", "consecutive", "3 consecutive failures of db")
    fix = past(store, "invoices", "invoices answered 500: pg-main refused connections", "raised max_connections")
    box = wiring.toolbox(config, store)
    assert "neighbours" in [tool.name for tool in toolset(box)]
    text = Neighbours(box)(name="orders")
    assert text.startswith("orders depends on 2 known component(s):")
    assert (
        f"- pg-main (config, seen 1x): its own check is target db: (FAILING connection_refused: connect to "
        f"pg-main.db.internal:5432 refused, checked 20 s ago, open incident #{db_incident})"
    ) in text
    assert "  also used by: invoices (OK, checked 5 s ago)" in text
    assert "- kafka-main (config, seen 1x): no target checks it\n  also used by: no other target" in text
    assert "targets that depend on orders or share its host: checkout (no check result yet)" in text
    assert f"#{fix} [resolved] target invoices" in text and "via shared component pg-main: its text names it" in text
    assert "search" not in text  # unrelated: es-logs is not orders'
    assert fix in box.seen  # the model may name it in its diagnosis
    assert Neighbours(box)(name="nope").startswith("ERROR: no target named 'nope'")


def test_the_tool_reads_the_focus_targets_latest_answer(db_path: str) -> None:
    store = Store(db_path)
    config = configured_fleet()
    graph.sync_config(store, config)
    box = wiring.toolbox(config, store)
    box.begin(store.runs.start_run("t", target="orders"), None, "orders")
    assert Neighbours(box)(name="orders").startswith("orders depends on 0 known component(s) (none configured")
    box.evidence = evidence_of("orders", 500, "unexpected_status", "status 500 not in expected codes", PG_FULL)
    text = Neighbours(box)(name="orders")
    assert "- pg-main (evidence, seen 1x): its own check is target db: (no check result yet)" in text
