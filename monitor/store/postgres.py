"""The PostgreSQL engine (psycopg 3): one database shared by every replica, and what keeps a daemon on it
answering when the server does not (see :class:`Postgres`)."""

from __future__ import annotations

import functools
import logging
import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from monitor.store.engines import Engine, describe
from monitor.store.watchdog import PROBE, WATCHDOG

CONNECT_TIMEOUT = 5.0  # seconds a connection may take, and a statement may wait before the server is probed
STATEMENTS = 2  # a statement may run this many busy timeouts (lock waits included) before the server cancels it
SOCKET = {
    "keepalives": 1,
    "keepalives_idle": 15,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 10_000,
}  # libpq's, for this end's socket; the server's are SET on each connection

log = logging.getLogger("monitor.store.engines")


@functools.cache
def text_without_nul() -> type:
    """psycopg's text parameter, a NUL in it replaced by U+FFFD: PostgreSQL's text cannot hold one, SQLite's
    can, and a target's reply or a model's output may carry one."""
    from psycopg.types.string import StrDumperUnknown

    class TextWithoutNul(StrDumperUnknown):
        def dump(self, obj: str) -> bytes:
            return obj.replace("\x00", "\ufffd").encode(self._encoding)

    return TextWithoutNul


@functools.lru_cache(maxsize=512)
def to_pyformat(sql: str) -> str:
    """The store's ``?`` placeholders as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return re.sub(r"\?", "%s", sql.replace("%", "%%"))


class PostgresTransaction:
    """A transaction's connection, taking the store's ``?`` placeholders."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(to_pyformat(sql), params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.conn.cursor() as cursor:
            cursor.executemany(to_pyformat(sql), rows)

    def copy(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Rows into ``table`` with one ``COPY ... FROM STDIN``: one statement, however many rows."""
        with self.conn.cursor() as cursor, cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


class Postgres(Engine):
    """A PostgreSQL database (psycopg 3), shared by every replica; the tables live in its current schema.

    A lost connection fails the statement that met it (the caller keeps what it meant to write) and
    is opened again by the next one.
    """

    name = "postgres"
    greatest = "greatest"
    skip_locked, now = " FOR UPDATE SKIP LOCKED", "extract(epoch FROM clock_timestamp())::double precision"
    REPLICA_LOCKS = "monitor replica of "  # + the schema: the advisory-lock key space of its replica numbers

    def __init__(self, location: str, *, timeout: float) -> None:
        import psycopg

        super().__init__(location)
        # A prepared statement missing or already there: a transaction-mode pooler (PgBouncer before 1.21) gave
        # this transaction another server session than the last. Kept and tried again, it prepares nothing.
        self.unprepared = (psycopg.errors.InvalidSqlStatementName, psycopg.errors.DuplicatePreparedStatement)
        # tables or schema dropped under a running daemon: kept like a lost server, until a restart creates them
        gone = (psycopg.errors.UndefinedTable, psycopg.errors.InvalidSchemaName)
        self.unavailable = (psycopg.OperationalError, *self.unprepared, *gone)
        self.integrity = (psycopg.IntegrityError,)
        self.error: type[BaseException] = psycopg.Error
        self.timeout = timeout
        self.claimed: int | None = None
        self.prepare_threshold: int | None = 5  # psycopg's default: a statement run 5 times is prepared
        # what the watchdog reads (monitor.store.watchdog): how long a wait may last before it asks whether the
        # server is there, and the wait going on now
        self.patience = self._connect_timeout()
        self.asked: tuple[float, Any] | None = None
        self.probed_at = 0.0
        self.cut_reason: str | None = None  # why the watchdog cut the connection, for the error that follows
        self.down: tuple[float, str] = (0.0, "")  # until when a new connection is not tried, and why
        WATCHDOG.watch(self)
        self.conn = self._connect()

    def _connect(self) -> Any:
        import psycopg

        conn = psycopg.connect(
            self.location, autocommit=True, fallback_application_name="monitor", **self._socket_defaults()
        )  # the URL's application_name wins
        with self._answering(conn):
            return self._set_up(conn)

    def _set_up(self, conn: Any) -> Any:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        encoding = conn.info.parameter_status("server_encoding")
        if encoding != "UTF8":
            conn.close()
            raise psycopg.NotSupportedError(
                f"the database is encoded in {encoding}, and monitor stores any language's text: "
                "create it with ENCODING 'UTF8' (CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0)"
            )
        conn.adapters.register_dumper(str, text_without_nul())
        conn.prepare_threshold = self.prepare_threshold
        conn.execute(f"SET lock_timeout = {int(self.timeout * 1000)}")
        if "statement_timeout" not in str(conninfo_to_dict(self.location).get("options") or ""):  # the URL's wins
            conn.execute(f"SET statement_timeout = {int(STATEMENTS * self.timeout * 1000)}")
        # The server drops this session within about 30 s of this process vanishing without a word (a node
        # lost), and with it the replica number it holds, so that a replacement can take it.
        conn.execute("SET tcp_keepalives_idle = 15; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3")
        return conn

    def _connect_timeout(self) -> float:
        """The URL's ``connect_timeout``, else ``$PGCONNECT_TIMEOUT`` (as for psql), else ``CONNECT_TIMEOUT``."""
        from psycopg.conninfo import conninfo_to_dict

        given = conninfo_to_dict(self.location).get("connect_timeout") or os.environ.get("PGCONNECT_TIMEOUT")
        try:
            seconds = float(given) if given else 0.0
        except ValueError:  # libpq says so when it connects
            seconds = 0.0
        return max(float(PROBE), seconds) if seconds > 0 else CONNECT_TIMEOUT

    def _socket_defaults(self) -> dict[str, Any]:
        """How long a connection may take, and how soon a dead peer is noticed (keepalives on an idle
        connection, ``tcp_user_timeout`` on one whose data goes unacknowledged: a partition): whatever the
        URL names wins."""
        from psycopg.conninfo import conninfo_to_dict

        given = conninfo_to_dict(self.location)
        return {key: value for key, value in {**SOCKET, "connect_timeout": round(self.patience)}.items() if key not in given}

    def _live(self) -> Any:
        """The connection, opened again if the server dropped it; with it the replica number this process
        claimed, or no statement runs again (another daemon took the number while this one was cut off)."""
        import psycopg

        if self.lost:
            raise psycopg.OperationalError(self.lost)
        if self.conn.closed or self.conn.broken:
            self.conn = self._reconnect()
            if self.claimed is not None and not self._try_lock(self.conn, self.claimed):
                self.conn.close()
                self.lose(
                    f"replica {self.claimed} of {self.shown} is now held by another daemon (this one lost its "
                    "connection meanwhile): this one stops, so that the two do not check the same targets"
                )
                raise psycopg.OperationalError(self.lost)
        return self.conn

    def _reconnect(self) -> Any:
        """A new connection; while the server does not answer (a timeout, not a refusal, which costs nothing),
        tried once per ``patience`` seconds, and the threads in between (a ping, a page) are told at once
        rather than each waiting out a connect timeout."""
        import psycopg

        until, why = self.down
        if time.monotonic() < until:
            raise psycopg.OperationalError(why)
        try:
            conn = self._connect()
        except psycopg.errors.ConnectionTimeout as exc:
            self.down = (time.monotonic() + self.patience, f"{describe(exc)} (no answer in {self.patience:.0f} s)")
            raise
        self.down, self.cut_reason = (0.0, ""), None
        return conn

    @contextmanager
    def _answering(self, conn: Any) -> Iterator[None]:
        """While ``conn`` waits on the server: the watchdog looks on; an error after it cut ``conn`` says why."""
        import psycopg

        outer = self.asked is None
        if outer:
            self.asked = (time.monotonic(), conn)
        try:
            yield
        except psycopg.Error as exc:
            if self.cut_reason is None:
                raise
            raise psycopg.OperationalError(self.cut_reason) from exc
        finally:
            if outer:
                self.asked = None

    def cut_off(self, reason: str) -> None:
        """The watchdog is about to cut the connection that waits, for ``reason``: its probe just failed, so
        no new connection is tried for ``patience`` seconds either."""
        self.cut_reason = reason
        self.down = (time.monotonic() + self.patience, reason)

    def _try_lock(self, conn: Any, replica: int) -> bool:
        # keyed by schema too: two installations in two schemas of one database each have a replica 0
        return bool(
            conn.execute("SELECT pg_try_advisory_lock(hashtext(%s || current_schema()), %s)", (self.REPLICA_LOCKS, replica)).fetchone()[0]
        )

    def claim(self, replica: int) -> bool:
        with self.lock:
            if not self._try_lock(self._live(), replica):
                return False
            self.claimed = replica
            return True

    def trunc(self, expression: str) -> str:
        return f"trunc({expression})::bigint"

    def names(self, values: list[str]) -> tuple[str, Any]:
        return "unnest(?::text[]) AS names(value)", values

    @contextmanager
    def transaction(self) -> Iterator[PostgresTransaction]:
        with self.lock:
            conn = self._live()
            try:
                with self._answering(conn), conn.transaction():
                    yield PostgresTransaction(conn)
            except self.error as exc:
                self._behind_a_pooler(exc)
                raise

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """A statement outside any transaction (a read): a connection the server dropped while it was idle
        is opened again, or a pooler's prepared statements given up, and the statement tried once more."""
        with self.lock:
            try:
                return self._ask(sql, params)
            except self.error as exc:
                if self.cut_reason is not None or not (self.conn.broken or self._behind_a_pooler(exc)):
                    raise  # the watchdog cut it: the server does not answer, and would not now
                return self._ask(sql, params)

    def _ask(self, sql: str, params: Sequence[Any]) -> Any:
        conn = self._live()
        with self._answering(conn):
            return conn.execute(to_pyformat(sql), params)

    def _behind_a_pooler(self, error: BaseException) -> bool:
        """Whether ``error`` says a transaction-mode pooler is in between; then stop preparing statements."""
        if not isinstance(error, self.unprepared):
            return False
        if self.prepare_threshold is not None:
            log.warning("%s: a transaction-mode pooler is in between (%s): statements are no longer prepared", self.shown, describe(error))
            self.prepare_threshold = self.conn.prepare_threshold = None
        return True

    def lock_table(self, tx: Any, table: str) -> None:
        tx.execute(f"LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE")

    def columns(self, table: str) -> tuple[str, ...]:
        rows = self.execute(
            """SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema()
               AND table_name = ? ORDER BY ordinal_position""",
            (table,),
        ).fetchall()
        return tuple(row[0] for row in rows)

    def version(self) -> int:
        exists = self.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()[0]
        if not exists:
            return 0
        return int(self.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0])

    def size_bytes(self) -> int:
        return int(
            self.execute(
                """SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
               JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = current_schema() AND c.relkind = 'r'"""
            ).fetchone()[0]
        )

    def close(self) -> None:
        with self.lock:
            self.conn.close()
