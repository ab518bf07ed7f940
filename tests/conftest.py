from __future__ import annotations

import asyncio
import gc
import os
import shutil
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from outbox import Stop  # noqa: E402
from postgres import ENV, INSTALL, Cluster, Redirect, Schemas, bindir, own_database, tables_locked  # noqa: E402
from servers import Answering, Misbehaving, openssl  # noqa: E402

import monitor.config.values as values  # noqa: E402
from monitor.alerts.delivery import Alerts  # noqa: E402
from monitor.config.values import cores as machine_cores  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store",
        choices=("sqlite", "postgres"),
        default="sqlite",
        help="the store the suite runs on; postgres puts each SQLite path a test opens in a PostgreSQL "
        f"schema of its own (${ENV}, or a private cluster)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("store") == "postgres" and not os.environ.get(ENV) and bindir() is None:
        raise pytest.UsageError(f"--store=postgres needs a PostgreSQL: {INSTALL}")


# The tests that take over about 10 s on a 2-core machine (several processes, long waits on clocks, many
# examples), by file and function: marked ``slow`` (``-m "not slow"`` leaves them out) and started first, so
# that pytest-xdist's workers do not end the run waiting on one of them. Found by ``--durations``.
SLOW = {
    "test_agent.py": ["test_requests_are_constrained_guided_and_carry_the_recalled_fix"],
    "test_alert_soak.py": ["test_two_hundred_failing_targets_against_a_receiver_that_streams_and_one_that_never_answers"],
    "test_config_hostile.py": ["test_fuzz_structured_configs_never_raise_anything_but_config_error"],
    "test_daemon.py": [
        "test_daemon_opens_and_resolves_incidents_alerts_and_stays_quiet_while_healthy",
        "test_sigterm_during_a_busy_cycle_keeps_committed_rows_and_restart_restores_memory",
    ],
    "test_dashboard.py": ["test_every_dashboard_query_returns_data_from_a_live_daemon"],
    "test_database_faults.py": ["test_a_frozen_postgresql_is_degraded_within_seconds_and_loses_nothing"],
    "test_deploy.py": ["test_compose_files_are_valid_for_docker_compose"],
    "test_eval.py": [
        "test_the_blind_scenarios_score_as_measured",
        "test_the_builtin_model_diagnoses_the_suite",
        "test_eval_of_builtin_never_imports_litellm",
        "test_a_model_server_that_fails_is_an_infra_error_not_a_wrong_diagnosis",
        "test_no_baseline_and_tag_filter",
        "test_the_new_scenarios_cover_the_memory_issue",
        "test_the_suite_covers_the_issue_list",
        "test_eval_json_and_out_file_have_the_documented_keys",
    ],
    "test_failover.py": ["test_a_killed_replica_s_share_is_taken_over_and_given_back"],
    "test_frozen_replica.py": ["test_a_replica_frozen_past_its_lease_waits_a_renewal_before_it_checks_again"],
    "test_import.py": ["test_fuzzed_imports_never_raise_anything_but_a_clear_refusal"],
    "test_lifecycle.py": ["test_the_incident_lifecycle_keeps_its_invariants"],
    "test_new_user.py": ["test_investigate_exits_with_its_last_line_when_the_model_is_unreachable"],
    "test_quorum.py": ["test_one_location_failing_is_no_outage_all_three_are_one"],
    "test_reach.py": ["test_recalled_incident_text_has_a_budget"],
    "test_reload.py": ["test_finding7_fifty_hostile_sighups_leave_the_daemon_checking_on_schedule_with_flat_memory"],
    "test_replicas.py": ["test_three_replicas_share_one_postgres"],
    "test_review.py": ["test_the_review_of_the_demo_history_names_what_recurred_did_not_hold_and_co_occurred"],
    "test_seam.py": ["test_the_stubs_match_the_installed_packages"],
    "test_shared_store.py": [
        "test_two_daemons_cannot_be_the_same_replica_of_one_database",
        "test_a_daemon_outlives_its_database_and_stores_what_it_checked_meanwhile",
    ],
    "test_takeover.py": ["test_a_killed_replica_s_notifications_are_delivered_once_by_another"],
    "test_target_files.py": ["test_twenty_thousand_targets_load_from_target_files"],
    "test_timing.py": ["test_a_healthy_loopback_target_never_trips_a_20ms_latency_condition"],
    "test_workers.py": ["test_two_workers_share_the_targets_and_a_killed_one_is_replaced"],
    "test_workers_hung.py": ["test_a_hung_worker_is_noticed_by_its_silence_killed_and_replaced"],
}


# Of those, the ones that run several daemons against each other's timing (leases, intervals, hand-overs): one
# at a time, on one worker (an xdist_group), so that two of them do not share the machine's cores.
DAEMONS = {"test_alert_soak.py", "test_failover.py", "test_frozen_replica.py", "test_quorum.py", "test_replicas.py", "test_takeover.py"}
DAEMONS |= {"test_workers.py", "test_workers_hung.py"}


def is_slow(item: pytest.Item) -> bool:
    function = getattr(item, "originalname", item.name)
    return function in SLOW.get(item.path.name, ()) or item.get_closest_marker("real_model") is not None


@pytest.hookimpl(tryfirst=True)  # before -m selects on the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    modules = {item.path.name: item.module for item in items if isinstance(item, pytest.Function)}
    stale = [f"{file}::{name}" for file, module in modules.items() for name in SLOW.get(file, ()) if not hasattr(module, name)]
    if stale:
        raise pytest.UsageError(f"tests/conftest.py SLOW names tests that are not there (renamed?): {', '.join(stale)}")
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
            if item.path.name in DAEMONS:
                item.add_marker(pytest.mark.xdist_group("daemons"))
    items.sort(key=lambda item: not is_slow(item))  # stable: the slow first, each group in its own order
    if config.getoption("store") != "postgres":
        return
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {marker.args[0] if marker.args else 'about SQLite'}"))


# The tests about workers: they count the machine's real cores (as does a test marked ``every_core``).
EVERY_CORE = {"test_workers.py", "test_workers_hung.py", "test_verdicts.py"}


def collected(everything: bool = False) -> None:
    """Run the garbage collector now, so that what a test (or a fixture's teardown) left open is finalized here.

    A socket, file, pipe, event loop or connection left to the collector warns as it is finalized; the warning is
    an error (pyproject.toml's ``filterwarnings``), raised inside a finalizer, so pytest reports it as a
    ``PytestUnraisableExceptionWarning``, also an error, at this very teardown: the test that left it fails, not
    whichever test the collector would have run in next (CONTRIBUTING.md says how to see where it was opened).

    A full collection walks every object of the process, 0.5 s once litellm is imported: after each, what is left
    is frozen (``gc.freeze``), so a test's collection walks only what was made since the last one. What is frozen
    is never collected: ``everything`` (at the end of each module and of the session) unfreezes it first, for
    what a module's fixtures held and dropped since."""
    if everything:
        gc.unfreeze()
    gc.collect()
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def nothing_left_open_by_the_session() -> Iterator[None]:
    """Session fixtures' leaks (a server's sockets), at the last test's teardown."""
    yield
    collected(everything=True)


@pytest.fixture(scope="module", autouse=True)
def nothing_left_open_by_the_module() -> Iterator[None]:
    """A module fixture's leaks (a daemon it ran for its tests), at its last test's teardown."""
    yield
    collected(everything=True)


@pytest.fixture(autouse=True)
def nothing_left_open() -> Iterator[None]:
    """A test's leaks, at its own teardown (after every function fixture of its has been torn down)."""
    yield
    collected()


@pytest.fixture(scope="session", autouse=True)
def litellm_pools_closed() -> Iterator[None]:
    """litellm keeps HTTP clients for the life of the process: a module-level one (the ``/api/show`` calls that
    ``register_model`` makes) and one per provider in its client cache, each with keep-alive connections. A
    daemon's process ends with them; a test process outlives the scripted model servers they talk to, so its
    sockets would be left to the interpreter's exit (``sys:1: ResourceWarning``). Closed once, at the end."""
    yield
    litellm = sys.modules.get("litellm")
    if litellm is None:
        return
    cached = list(litellm.in_memory_llm_clients_cache.cache_dict.values())
    for client in [litellm.module_level_client, *cached]:
        if callable(getattr(client, "close", None)) and not asyncio.iscoroutinefunction(client.close):
            client.close()


@pytest.fixture(scope="session", autouse=True)
def one_core() -> Iterator[None]:
    """``workers: auto``, the default, counts one core here: a daemon a test runs in its own process (a module's
    fixture's too, hence the session) checks on its own event loop, as every test but those about workers expects,
    not on a process per core of whatever machine runs the suite. A ``monitor run`` a test starts counts its own
    cores: its config says ``workers: 1``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(values, "cores", lambda: 1)
        yield


@pytest.fixture(autouse=True)
def secrets_forgotten() -> Iterator[None]:
    """The secrets a test's config substituted (``${TOKEN}``) are hidden for that test only, not in the tests after it."""
    from monitor.core import catalogue

    yield
    catalogue.forget()


@pytest.fixture(autouse=True)
def every_core(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tests about workers count the machine's real cores."""
    if request.node.path.name in EVERY_CORE or request.node.get_closest_marker("every_core") is not None:
        monkeypatch.setattr(values, "cores", machine_cores)


@pytest.fixture(scope="session")
def worker() -> str:
    """This process's name among pytest-xdist's workers (``gw0``, ``gw1``...), ``main`` without xdist."""
    return os.environ.get("PYTEST_XDIST_WORKER", "main")


@pytest.fixture(scope="session")
def postgres_server(worker: str) -> Iterator[str]:
    """A libpq URL of a database the tests may create schemas in: one of this xdist worker's own, on
    ${ENV}'s server or on a private throwaway cluster."""
    if os.environ.get(ENV):
        with own_database(os.environ[ENV], worker) as url:
            yield url
        return
    where = bindir()
    if where is None:
        pytest.skip(f"no PostgreSQL server binaries: {INSTALL}")
    with Cluster(where) as server, own_database(server, worker) as url:
        yield url


@pytest.fixture(scope="session")
def postgres_schemas(postgres_server: str, worker: str) -> Iterator[Schemas]:
    schemas = Schemas(postgres_server, worker)
    yield schemas
    schemas.close()


@pytest.fixture
def postgres_url(postgres_schemas: Schemas) -> Iterator[str]:
    """A URL whose search_path is a fresh, empty schema of this test's; dropped at teardown."""
    name, url = postgres_schemas.fresh()
    yield url
    postgres_schemas.drop([name])


@pytest.fixture(autouse=True)
def store_redirect(request: pytest.FixtureRequest) -> Iterator[Redirect | None]:
    """With --store=postgres, every store this test opens on a SQLite location opens on PostgreSQL instead.

    Either way, the PostgreSQL connections of the stores this test opened are closed at its end: a test
    may leave a store to the garbage collector (SQLite's connections close quietly there, psycopg's warn)."""
    import monitor.store.base as base

    redirect = Redirect(request.getfixturevalue("postgres_schemas")) if request.config.getoption("store") == "postgres" else None
    connect = base.connect
    opened: list[Any] = []

    def connecting(location: str, **options: Any) -> Any:
        engine = connect(location if redirect is None else redirect(location), **options)
        if engine.name != "sqlite":
            opened.append(engine)
        return engine

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "connect", connecting)
        yield redirect
    if redirect is not None:
        redirect.close()  # ends the connections still open on its schemas, server side
    for engine in opened:
        engine.conn.close()


@pytest.fixture
def store_location(store_redirect: Redirect | None) -> Callable[..., str]:
    """``store_location(path, relative_to=".")``: where a child process (``monitor run --db``, a config's
    ``database:``) should open the store at ``path``: the path as given, or, under --store=postgres, the URL
    of the schema the path maps to (the redirect does not reach a child). ``relative_to``: the directory
    a relative ``path`` is relative to (a config's)."""

    def location(path: str | os.PathLike[str], relative_to: str | os.PathLike[str] = ".") -> str:
        if store_redirect is None:
            return os.fspath(path)
        return store_redirect(os.path.join(relative_to, path))

    return location


@contextmanager
def sqlite_write_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.fixture
def write_lock(store_redirect: Redirect | None) -> Callable[[str | os.PathLike[str]], AbstractContextManager[None]]:
    """``with write_lock(path):`` another process's writer holds the database's write lock until the block ends
    (SQLite's BEGIN IMMEDIATE; under --store=postgres, every table of the path's schema locked against writes)."""
    if store_redirect is None:
        return sqlite_write_lock
    redirect = store_redirect
    return lambda path: tables_locked(redirect(path))


@pytest.fixture
def own_server() -> Iterator[Cluster]:
    """A PostgreSQL cluster of this test's own, that it may shut down and start again."""
    where = bindir()
    if where is None:
        pytest.skip("no PostgreSQL server binaries")
    cluster = Cluster(where)
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def web() -> Iterator[Misbehaving]:
    """One misbehaving loopback server for the whole session."""
    with Misbehaving() as server:
        yield server


@pytest.fixture
def answering() -> Iterator[Answering]:
    """A loopback target whose answer the test sets."""
    with Answering() as server:
        yield server


@pytest.fixture
def stopped() -> Iterator[Stop]:
    """``alerts = stopped(Alerts(...))``: alerts that a test delivers with, stopped at its end, which closes their
    HTTP client (Alertmanager keeps its connections alive; left to the garbage collector, their sockets warn)."""
    made: list[Alerts] = []

    def stopped_at_the_end(alerts: Alerts) -> Alerts:
        made.append(alerts)
        return alerts

    yield stopped_at_the_end
    for alerts in made:
        alerts.stop()


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "monitor.db")


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, and a certificate for 127.0.0.1 and localhost that it signed and that expires in 5 days."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    where = tmp_path_factory.mktemp("pki")
    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "3650",
        "-subj",
        "/CN=monitor test CA",
        cwd=where,
    )
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1", cwd=where)
    (where / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "5",
        "-extfile",
        "san.cnf",
        cwd=where,
    )
    return where
