"""The two databases a :class:`~monitor.store.Store` runs on, and how their SQL differs.

- **SQLite** (a file path, or ``:memory:``): one file in WAL mode, one writer at a time; the default.
- **PostgreSQL** (a ``postgresql://`` libpq URL, psycopg 3): one database shared by several replicas,
  so that any of them recalls any past fix. libpq's parameters and environment (``PGPASSWORD``,
  ``sslmode=``, ``options=-csearch_path=...``) apply as they do to ``psql``.

The store writes its SQL once, with ``?`` placeholders; an engine runs it on its connection and lends
the few fragments where the dialects part (a list parameter, truncation, a scalar max, a table lock).
Each engine is one connection behind one lock, as the store has always been: safe between threads.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import socket
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite_utils

log = logging.getLogger(__name__)
BUSY_TIMEOUT = 30.0  # seconds a write waits for another writer's lock before it fails
URL_SCHEMES = ("postgresql://", "postgres://")


def is_url(location: str) -> bool:
    return location.startswith(URL_SCHEMES)


def shown(location: str) -> str:
    """``location`` as logs and messages may show it: a URL's password replaced by ``***``."""
    span = _password(location)
    hidden = location if span is None else f"{location[: span[0]]}***{location[span[1] :]}"
    return re.sub(r"(password=)[^&]*", r"\1***", hidden) if is_url(location) else hidden


def _password(location: str) -> tuple[int, int] | None:
    """Where a URL's password is: from the ``:`` after the user name to the last ``@``, so that a password
    whose ``@``, ``/`` or ``?`` was not percent-encoded is hidden whole, not cut where a parser would cut it."""
    if not is_url(location):
        return None
    start = location.index("://") + 3
    colon, at = location.find(":", start), location.rfind("@")
    if colon < 0 or at < colon or any(c in location[start:colon] for c in "@/?"):
        return None
    return colon + 1, at


# what to do about the PostgreSQL errors a user meets first (SQLSTATE: advice)
ADVICE = {
    "42501": "grant this user CREATE on the schema, or let the schema's owner run monitor once to create the "
    "tables and grant this user SELECT, INSERT, UPDATE and DELETE on them",
    "3F000": "no schema of the URL's search_path exists: create it, or correct options=-csearch_path=...",
    "42P01": "monitor's tables are gone (a schema dropped under it?): results are kept in memory; restart the daemon to create them again",
}


URL_ERRORS = ("percent-encoded", "invalid port")  # what libpq says of a password that was not percent-encoded
URL_ADVICE = (
    "write it as postgresql://user:password@host:port/database, with any @ : / ? # or % in the password "
    "percent-encoded: @ is %40, : is %3A, / is %2F, % is %25"
)


def describe(error: BaseException, location: str = "") -> str:
    """A database error as one line: without the SQL it quotes (``LINE 1: ...``), with libpq's hint, advice
    where there is some, and nothing of ``location``'s password that the message quotes."""
    lines = (line.strip() for line in str(error).splitlines())
    text = " ".join(line for line in lines if line and not line.startswith(("LINE ", "^")))
    span = _password(location)
    if span is not None:
        secret = location[span[0] : span[1]]
        text = re.sub(r"([\"'])([^\"']+)\1", lambda m: "***" if m.group(2) in secret else m.group(0), text)
    advice = ADVICE.get(getattr(error, "sqlstate", None) or "")
    if advice is None and is_url(location) and any(words in text for words in URL_ERRORS):
        advice = URL_ADVICE
    return f"{text} ({advice})" if advice else text


def check_url(location: str) -> None:
    """Raise ValueError saying what is wrong with a ``postgresql://`` URL, without connecting."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    try:
        conninfo_to_dict(location)
    except psycopg.Error as exc:
        raise ValueError(describe(exc, location)) from None


def database_errors() -> tuple[type[BaseException], ...]:
    """Every error a database may raise: SQLite's, and psycopg's once a PostgreSQL store was opened."""
    errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
    if "psycopg" in sys.modules:  # loaded: a PostgreSQL store was opened
        import psycopg

        errors += (psycopg.Error,)
    return errors


class Engine:
    """What a store needs of a database: statements, transactions, and its dialect's fragments."""

    name = ""
    # Failures of the database, not of the statement: a locked file, a lost server. Writes that meet
    # one are kept by the caller and tried again.
    unavailable: tuple[type[BaseException], ...] = ()
    integrity: tuple[type[BaseException], ...] = ()  # a constraint refused the write
    greatest, now = "max", ""  # the larger of two values (SQLite's two-argument max); the database's clock (epoch s)
    skip_locked = ""  # after a SELECT in a write: rows another transaction locked are passed over (one writer here)

    def __init__(self, location: str) -> None:
        self.location = location
        self.shown = shown(location)
        self.lock = threading.RLock()
        self.held_by = ""  # who holds what claim() wanted: "pid 4242 on host-a", or "" when unknown
        self.lost = ""  # why this process no longer holds what it claimed; then every statement fails
        self.when_lost: list[Callable[[str], None]] = []  # told once, from the thread that found out

    def trunc(self, expression: str) -> str:
        """``expression`` cut to an integer toward zero (bucket numbers, hours)."""
        raise NotImplementedError

    def names(self, values: list[str]) -> tuple[str, Any]:
        """A table ``names`` with one column ``value`` of these strings, and the parameter it takes."""
        raise NotImplementedError

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        raise NotImplementedError
        yield

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        raise NotImplementedError

    def lock_table(self, tx: Any, table: str) -> None:
        """Within ``tx``, make other writers of ``table`` wait until it ends (count, then insert)."""

    def claim(self, replica: int) -> bool:
        """Hold replica number ``replica`` for as long as this connection lives: False when another process
        holds it (``held_by`` then says which, where the database can tell)."""
        return True

    def lose(self, reason: str) -> None:
        """This process no longer holds what :meth:`claim` took: say so once, and tell whoever listens."""
        if self.lost:
            return
        self.lost = reason
        log.error("%s", reason)
        for hook in self.when_lost:
            hook(reason)

    def passing(self, error: BaseException) -> bool:
        """Whether a write that failed with ``error`` may work if tried again later (a lock, a full disk,
        a lost server), rather than never (a bug, a damaged file)."""
        return isinstance(error, self.unavailable)

    def columns(self, table: str) -> tuple[str, ...]:
        raise NotImplementedError

    def version(self) -> int:
        raise NotImplementedError

    def size_bytes(self) -> int:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


WRITTEN_BACK: dict[str, tuple[int, int] | None] = {}  # SQLite files a connection of this process wrote back


class Replaced(sqlite3.OperationalError):
    """The SQLite file at the store's path is no longer the one it opened."""


class Sqlite(Engine):
    """A SQLite file (WAL), or ``:memory:``."""

    name = "sqlite"
    unavailable = (sqlite3.OperationalError,)
    integrity = (sqlite3.IntegrityError,)
    PASSING, now = {5, 6, 13}, "((julianday('now') - 2440587.5) * 86400.0)"  # SQLITE_BUSY, _LOCKED, _FULL

    def __init__(self, location: str, *, timeout: float) -> None:
        super().__init__(location)
        if location != ":memory:":
            Path(location).parent.mkdir(parents=True, exist_ok=True)
        self.timeout = timeout
        self.claim_fd: int | None = None  # the open lock file while this process is the file's daemon
        self._open()

    @property
    def db(self) -> sqlite_utils.Database:
        """The connection as the SQLite migrations are written (sqlite_utils, with click and pluggy: 20 MB,
        imported only to migrate, so a process that only reads or writes rows never loads it)."""
        import sqlite_utils

        return sqlite_utils.Database(self.conn)

    def _open(self) -> None:
        self.conn = sqlite3.connect(self.location, check_same_thread=False, isolation_level=None, timeout=self.timeout)
        if self.location != ":memory:":
            self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA recursive_triggers=ON")  # as sqlite_utils sets it: a REPLACE's deletes fire triggers
        self.identity = self._identity()

    def _identity(self) -> tuple[int, int] | None:
        """The file's device and inode: what tells it from another file put at its path; None: no file there."""
        if self.location == ":memory:":
            return (0, 0)
        try:
            found = os.stat(self.location)
        except FileNotFoundError:
            return None
        return found.st_dev, found.st_ino

    def _still_there(self) -> None:
        """Before each write: the file this connection writes is still the one at its path. One deleted under
        it (which the connection would go on writing, for no one) is written back from the connection, which
        still holds all of it; one replaced by another file is refused until a restart opens that one."""
        now = self._identity()
        if now == self.identity:
            return
        if now is not None and WRITTEN_BACK.get(self.location) == now:  # by another connection of this process
            self.conn.close()
            self._open()
            return
        if now is not None:
            raise Replaced(
                f"{self.shown} was replaced under the daemon by another file: restart it to use that one "
                "(results are kept in memory until then)"
            )
        with contextlib.closing(sqlite3.connect(self.location)) as fresh:
            self.conn.backup(fresh)
        self.conn.close()
        self._open()
        WRITTEN_BACK[self.location] = self.identity
        log.warning(
            "%s was deleted under the daemon: written back from its open connection, nothing lost (to start "
            "afresh, stop the daemon before deleting it)",
            self.shown,
        )

    def claim(self, replica: int) -> bool:
        """One daemon per file: an exclusive ``flock`` on ``<file>.lock``, which names the process holding it.
        The kernel lets go of it when that process ends, however it ends, so a crash leaves nothing to clear."""
        if self.location == ":memory:":
            return True
        fd = os.open(f"{self.location}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.held_by = os.read(fd, 200).decode(errors="replace").strip() or "a process that did not say"
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
        self.claim_fd = fd
        return True

    def trunc(self, expression: str) -> str:
        return f"CAST({expression} AS INTEGER)"

    def names(self, values: list[str]) -> tuple[str, Any]:
        import json

        return "json_each(?) AS names", json.dumps(values)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self.lock:
            self._still_there()
            self.conn.execute("BEGIN IMMEDIATE")  # the write lock now, not at the first write
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def passing(self, error: BaseException) -> bool:
        if isinstance(error, Replaced):
            return True
        return isinstance(error, sqlite3.OperationalError) and getattr(error, "sqlite_errorcode", 0) & 0xFF in self.PASSING

    def columns(self, table: str) -> tuple[str, ...]:
        return tuple(row[1] for row in self.conn.execute(f"PRAGMA table_info({table})"))

    def version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def size_bytes(self) -> int:
        if self.location == ":memory:":
            pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
            return int(pages) * int(self.conn.execute("PRAGMA page_size").fetchone()[0])
        path = Path(self.location)
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))

    def close(self) -> None:
        with self.lock:
            if self.location != ":memory:":
                self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self.conn.close()
            if self.claim_fd is not None:
                os.close(self.claim_fd)  # the lock goes with it; the file stays (removing it would race a new claim)
                self.claim_fd = None
