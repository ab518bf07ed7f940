"""A real PostgreSQL for the tests: a server, and a fresh schema per use.

``$MONITOR_TEST_POSTGRES`` names a database the tests may create schemas in
(``.ci/run`` starts one and sets it). Without it, ``Cluster`` starts a private
throwaway one: ``initdb`` into a temp dir, ``pg_ctl start`` on a free loopback
port, fsync off, as the ``postgres`` user when running as root (``initdb``
refuses root). ``Schemas`` hands out ``postgresql://`` URLs whose
``search_path`` is a schema of their own, so a store opened on one sees only
its own tables; ``Redirect`` maps SQLite locations onto such schemas, which is
how ``pytest --store=postgres`` runs the whole suite on PostgreSQL.

psycopg is imported lazily: the SQLite run does not need it.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from servers import free_port

ENV = "MONITOR_TEST_POSTGRES"
INSTALL = f"install PostgreSQL (Debian: apt-get install postgresql) or set ${ENV} to a postgresql:// URL"
SETTINGS = {  # a throwaway cluster: speed over durability
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
    "max_connections": "200",
    "shared_buffers": "64MB",
    "log_min_messages": "warning",
}


def is_url(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def bindir() -> Path | None:
    """Where PostgreSQL's server binaries are: ``pg_config --bindir``, else Debian's versioned directories."""
    candidates = []
    if shutil.which("pg_config"):
        done = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        candidates.append(done.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name), reverse=True)
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    return None


def with_params(url: str, **params: str) -> str:
    """``url`` with libpq parameters added; ``options`` is appended to any already there."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    for key, value in params.items():
        query[key] = f"{query[key]} {value}" if key == "options" and query.get(key) else value
    return urlunsplit(parts._replace(query=urlencode(query)))


@contextmanager
def tables_locked(url: str) -> Iterator[None]:
    """Another writer on the schema of ``url``: every table locked against writes until the block ends.
    Reads go on, as they do beside SQLite's write lock in WAL mode."""
    import psycopg

    with psycopg.connect(url) as conn:
        tables = [row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")]
        conn.execute(f"LOCK TABLE {', '.join(tables)} IN EXCLUSIVE MODE")
        try:
            yield
        finally:
            conn.rollback()


def query_plan(store: Any, sql: str, params: Any = ()) -> str:
    """A store's plan for ``sql``, as text: SQLite's EXPLAIN QUERY PLAN, or PostgreSQL's EXPLAIN with
    sequential scans priced out (the tests' tables are too small for an index to win on cost)."""
    if store.engine.name == "sqlite":
        return str(store.engine.execute(f"EXPLAIN QUERY PLAN {sql}", params).fetchall())
    store.engine.execute("SET enable_seqscan = off")
    try:
        return str(store.engine.execute(f"EXPLAIN {sql}", params).fetchall())
    finally:
        store.engine.execute("RESET enable_seqscan")


class Cluster:
    """A private PostgreSQL cluster in a temp dir: ``with Cluster() as url: ...``."""

    def __init__(self, bin: Path) -> None:
        self.bin = bin
        self.user = None
        if os.geteuid() == 0:  # initdb refuses root: the cluster runs as postgres (Debian's package makes the user)
            try:
                self.user = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError(f"running as root, and there is no postgres user to run initdb as: {INSTALL}") from None
        self.dir = Path(tempfile.mkdtemp(prefix="monitor-pg-"))
        self.data = self.dir / "data"
        self.port = 0
        self.url = ""

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user.pw_name, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}\n{self.log()}")

    def log(self) -> str:
        path = self.dir / "log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def start(self) -> str:
        if self.user is not None:
            os.chown(self.dir, self.user.pw_uid, self.user.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
        with open(self.data / "postgresql.conf", "a") as conf:
            conf.writelines(f"{key} = {value}\n" for key, value in SETTINGS.items())
            conf.write(f"unix_socket_directories = '{self.dir}'\n")
        for attempt in range(3):  # the free port may be taken before the server binds it
            self.port = free_port()
            try:
                self._run("pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.dir / "log"), "-o", f"-p {self.port}")
                break
            except RuntimeError:
                if attempt == 2:
                    raise
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        return self.url

    def pause(self) -> None:
        """Shut the server down as an administrator would (``pg_ctl stop -m fast``): clients are cut off."""
        self._run("pg_ctl", "stop", "-m", "fast", "-w", "-D", str(self.data))

    def resume(self) -> None:
        """Start the server again, on the same port."""
        self._run("pg_ctl", "start", "-w", "-t", "60", "-D", str(self.data), "-l", str(self.dir / "log"), "-o", f"-p {self.port}")

    def processes(self) -> list[int]:
        """The postmaster's pid, then its children's (backends, checkpointer, walwriter...)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        done = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True)
        return [postmaster, *(int(pid) for pid in done.stdout.split())]

    def freeze(self) -> None:
        """SIGSTOP the server, postmaster first (it forks no more): the kernel still takes connections and
        data, and nothing answers, as on a host that hangs."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):  # a backend that ended since pgrep listed it
                os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self.thaw()
            self._run("pg_ctl", "stop", "-m", "immediate", "-w", "-D", str(self.data))
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> str:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def own_database(url: str, owner: str) -> Iterator[str]:
    """A database of ``owner``'s own (a pytest-xdist worker's) on the server of ``url``, dropped at the end:
    what one worker's connections, schemas and roles do is not seen by another's. Without the right to
    create databases, ``url`` itself (the schemas' prefixes still keep the workers apart)."""
    import psycopg

    name = f"monitor_test_{owner}_{secrets.token_hex(3)}"
    with psycopg.connect(url, autocommit=True) as admin:
        try:
            admin.execute(f"CREATE DATABASE {name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'")
        except psycopg.errors.InsufficientPrivilege:
            yield url
            return
        try:
            yield urlsplit(url)._replace(path=f"/{name}").geturl()
        finally:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
            admin.execute(f"DROP DATABASE IF EXISTS {name}")


class Schemas:
    """Fresh schemas in one database, each with its own URL; ``drop`` removes them and their connections."""

    def __init__(self, url: str, owner: str = "main") -> None:
        import psycopg

        self.url = url
        self.prefix = f"t_{owner}_{secrets.token_hex(3)}_"  # sessions and xdist workers sharing a database do not collide
        self.count = 0
        self.admin: Any = psycopg.connect(url, autocommit=True)

    def fresh(self) -> tuple[str, str]:
        """A new empty schema: (name, URL whose search_path is that schema)."""
        self.count += 1
        name = f"{self.prefix}{self.count}"
        self.admin.execute(f"CREATE SCHEMA {name}")
        # application_name tags the store's connections, so drop() can end the ones a test left open
        return name, with_params(self.url, options=f"-csearch_path={name}", application_name=name)

    def drop(self, names: list[str]) -> None:
        """Drop schemas, ending any connection still open on them (a store a test did not close)."""
        if not names:
            return
        self.admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ANY(%s) AND pid <> pg_backend_pid()", (names,)
        )
        for name in names:
            self.admin.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")

    def close(self) -> None:
        leftover = [row[0] for row in self.admin.execute("SELECT nspname FROM pg_namespace WHERE starts_with(nspname, %s)", (self.prefix,))]
        self.drop(leftover)
        self.admin.close()


class Redirect:
    """Maps store locations to schemas: one path, one schema (a reopened file sees its data);
    every ``:memory:`` gets a fresh one, as SQLite gives a fresh database; URLs pass through.
    The path itself becomes an empty file, as it would under SQLite."""

    def __init__(self, schemas: Schemas) -> None:
        self.schemas = schemas
        self.by_path: dict[str, str] = {}
        self.names: list[str] = []

    def __call__(self, location: str | os.PathLike[str]) -> str:
        location = os.fspath(location)
        if is_url(location):
            return location
        key = location if location == ":memory:" else os.path.realpath(location)
        if key not in self.by_path or key == ":memory:":
            name, url = self.schemas.fresh()
            self.names.append(name)
            self.by_path[key] = url
        if key != ":memory:":  # as SQLite makes the file: code that asks whether the database exists finds it
            Path(key).parent.mkdir(parents=True, exist_ok=True)
            Path(key).touch()
        return self.by_path[key]

    def close(self) -> None:
        self.schemas.drop(self.names)
