from __future__ import annotations

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

from postgres import ENV, INSTALL, Cluster, Redirect, Schemas, bindir, own_database, tables_locked  # noqa: E402
from servers import Misbehaving, openssl  # noqa: E402


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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("store") != "postgres":
        return
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {marker.args[0] if marker.args else 'about SQLite'}"))


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
    """With --store=postgres, every store this test opens on a SQLite location opens on PostgreSQL instead."""
    if request.config.getoption("store") != "postgres":
        yield None
        return
    import monitor.store.base as base

    redirect = Redirect(request.getfixturevalue("postgres_schemas"))
    connect = base.connect
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(base, "connect", lambda location, **options: connect(redirect(location), **options))
        yield redirect
    redirect.close()


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
def own_server() -> Iterator[Any]:
    """A PostgreSQL cluster of this test's own, that it may shut down and start again."""
    where = bindir()
    if where is None:
        pytest.skip("no PostgreSQL server binaries")
    cluster = Cluster(where)
    cluster.url = cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def web() -> Iterator[Misbehaving]:
    """One misbehaving loopback server for the whole session."""
    with Misbehaving() as server:
        yield server


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
