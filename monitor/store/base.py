"""What every part of the store stands on: the connection (an engine), transactions, reads, migrations.

A part reads through a :class:`Reads` handle, which runs statements that read and nothing else; a part that writes
is a :class:`Writing` part, made by the store over itself (:class:`Base`), with transactions too. A reader is handed
parts over the handle alone (:mod:`monitor.store.readers`), so nothing it holds reaches a transaction or the store.
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, Protocol, Self, TypeVar, cast, overload

from monitor.store import engines, postgres, schema, schema_pg
from monitor.store.engines import is_url
from monitor.store.schema import SCHEMA_VERSION

T = TypeVar("T")
P = TypeVar("P", covariant=True)

NO_ID = 2**63 - 1  # above every id: a cursor that starts at the newest


def inserted(cursor: Any) -> int | None:
    """The id a statement ending in ``RETURNING id`` returned; None when it wrote no row. Reads every row,
    so that SQLite's statement is done before its transaction commits."""
    rows = cursor.fetchall()
    return int(rows[0][0]) if rows else None


def connect(location: str, *, timeout: float | None = None) -> engines.Engine:
    """The engine for ``location``: PostgreSQL for a ``postgresql://`` URL, else a SQLite file."""
    if is_url(location):
        return postgres.Postgres(location, timeout=engines.BUSY_TIMEOUT if timeout is None else timeout)
    return engines.Sqlite(location, timeout=engines.BUSY_TIMEOUT if timeout is None else timeout)


class Statements(Protocol):
    """What a part's reads ask of the database: a statement that reads, and the dialect's fragments. An
    :class:`~monitor.store.engines.Engine` is one; so is a :class:`Reads` handle, which refuses a statement that writes."""

    @property
    def now(self) -> str: ...
    @property
    def greatest(self) -> str: ...
    def names(self, values: list[str]) -> tuple[str, Any]: ...
    def trunc(self, expression: str) -> str: ...
    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any: ...


_WRITES = re.compile(r"\b(INSERT|UPDATE|DELETE|REPLACE\s+INTO)\b", re.IGNORECASE)


@functools.lru_cache(maxsize=1024)
def reading(sql: str) -> bool:
    """Whether ``sql`` only reads: a SELECT or VALUES, or a WITH whose statements change no row."""
    first = (sql.split(None, 1) or [""])[0].upper()
    return first in ("SELECT", "VALUES") or (first == "WITH" and _WRITES.search(sql) is None)


class Reads:
    """A read-only handle on one database: what every part reads through, and all that a reader's part holds.

    It runs statements that read (one that writes is refused: ValueError), lends the dialect's fragments, the clock
    and the replica, and keeps what the parts keep between calls. It has no transaction and hands out no engine, the
    way a SQLite connection opened with ``mode=ro`` has no way to write."""

    def __init__(self, engine: engines.Engine, *, clock: Callable[[], float], replica: int) -> None:
        self.__engine = engine
        self.path = engine.shown
        self.clock = clock
        self.replica = replica
        self.shared = is_url(engine.location)  # other daemons may write this database too (PostgreSQL)
        self.lock = engine.lock
        self.now, self.greatest = engine.now, engine.greatest
        self.columns: dict[str, tuple[str, ...]] = {}  # each table's, read once (migrations run first)
        self.kept: dict[Callable[[], Any], Any] = {}  # what the parts keep between calls (Part._state)

    def __repr__(self) -> str:
        return f"<Reads of {self.path}>"

    def names(self, values: list[str]) -> tuple[str, Any]:
        return self.__engine.names(values)

    def trunc(self, expression: str) -> str:
        return self.__engine.trunc(expression)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """A statement that reads, run now (hold :attr:`lock` while its cursor is read); ValueError for one that writes."""
        if not reading(sql):
            raise ValueError(f"a read-only handle runs no statement that writes: {sql.strip()[:40]!r}")
        return self.__engine.execute(sql, params)

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self.lock:
            cursor = self.execute(sql, params)
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=False)) for row in cursor.fetchall()]

    def one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        rows = self.rows(sql, params)
        return rows[0] if rows else None

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self.lock:
            row = self.execute(sql, params).fetchone()
        return row[0] if row else None

    @property
    def result_tables(self) -> tuple[str, ...]:
        """The tables that hold check results: SQLite's two (``schema._v25``), read together as the view
        ``results``; PostgreSQL's one. A count or a statement the view plans badly reads each."""
        return ("results",) if self.shared else ("results_kept", "results_recent")

    def each_result_table(self, sql: str, params: Sequence[Any] = ()) -> tuple[str, tuple[Any, ...]]:
        """``sql`` (naming its table ``{table}``) over each of :attr:`result_tables`, as one statement, with its
        params once for each: one snapshot, so that a move committed between two statements hides nothing."""
        parts = [f"SELECT * FROM ({sql.format(table=table)}) AS part{n}" for n, table in enumerate(self.result_tables)]
        return " UNION ALL ".join(parts), tuple(params) * len(parts)

    def count_each_result_table(self, where: str = "", params: Sequence[Any] = ()) -> int:
        """Results ``where`` says (`` WHERE target = ?``), counted in each table (through the view, SQLite would
        read every row)."""
        each, repeated = self.each_result_table("SELECT count(*) AS n FROM {table}" + where, params)
        return int(self.scalar(f"SELECT sum(n) FROM ({each}) AS counts", repeated))

    def size_bytes(self) -> int:
        return self.__engine.size_bytes()


class Base:
    """One database, through its engine: the store the parts that write are made over (:class:`Writing`), with its
    transactions and migrations; what it reads, it reads through :attr:`reads`, the handle a reader's parts get."""

    def __init__(
        self,
        location: str | Path,
        *,
        clock: Callable[[], float] = time.time,
        timeout: float | None = None,
        replica: int = 0,
        create: bool = True,
    ) -> None:
        self.engine = connect(str(location), timeout=timeout)
        self.path = self.engine.shown  # what messages name: a URL's password is hidden
        self.replica = replica
        self.errors = self.engine.unavailable  # a write that meets one is kept and tried again
        self.reads = Reads(self.engine, clock=clock, replica=replica)
        self._timeout = timeout
        self._lock = self.engine.lock
        if not create and self.version == 0:  # a reader pointed at the wrong database creates nothing there
            self.engine.close()
            raise LookupError(f"{self.path} holds no monitor tables")
        self.migrate()

    @property
    def clock(self) -> Callable[[], float]:
        """What a row's time is read from; the demo's history sets another while it writes the past."""
        return self.reads.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.reads.clock = clock

    def reopen(self, *, timeout: float | None = None) -> Self:
        """Another connection to the same database (its own lock), for another thread."""
        return type(self)(self.engine.location, clock=self.clock, timeout=timeout, replica=self.replica)

    def claim_replica(self) -> bool:
        """Hold this store's replica number in the shared database (a SQLite file: the file) while it is open;
        False when another daemon holds it (two daemons as one replica would check the same targets twice)."""
        return self.engine.claim(self.replica)

    def when_claim_lost(self, hook: Callable[[str], None]) -> None:
        """Call ``hook`` with the reason, once, if this process loses what :meth:`claim_replica` took."""
        self.engine.when_lost.append(hook)

    @property
    def claimed_by(self) -> str:
        """The daemon that held what :meth:`claim_replica` wanted (``pid 4242 on host-a``); "" when unknown."""
        return self.engine.held_by

    @property
    def shared(self) -> bool:
        """Whether other daemons may write this database too (PostgreSQL)."""
        return self.reads.shared

    @property
    def result_tables(self) -> tuple[str, ...]:
        return self.reads.result_tables

    def each_result_table(self, sql: str, params: Sequence[Any] = ()) -> tuple[str, tuple[Any, ...]]:
        return self.reads.each_result_table(sql, params)

    def count_each_result_table(self, where: str = "", params: Sequence[Any] = ()) -> int:
        return self.reads.count_each_result_table(where, params)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One atomic write: all of it is committed, or none."""
        with self.engine.transaction() as tx:
            yield tx

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return self.reads.rows(sql, params)

    def _one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        return self.reads.one(sql, params)

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.reads.scalar(sql, params)

    @property
    def version(self) -> int:
        return self.engine.version()

    def migrate(self) -> None:
        """Bring the schema up to date: SQLite one migration per transaction, PostgreSQL in one."""
        if isinstance(self.engine, postgres.Postgres):
            with self._lock:
                schema_pg.migrate_postgres(self.engine.conn)
            return
        assert isinstance(self.engine, engines.Sqlite)
        while self.version < SCHEMA_VERSION:
            step = self.version
            with self.transaction():
                schema.SQLITE_MIGRATIONS[step](self.engine.db)
                self.engine.execute(f"PRAGMA user_version = {step + 1}")

    def close(self) -> None:
        self.engine.close()

    def size_bytes(self) -> int:
        return self.engine.size_bytes()


class Part:
    """One part of a store (``store.incidents``, ``store.results``, ...): its own methods over the one database every
    part shares, the way sqlite-utils' ``Table`` objects share their ``Database``. A part reads through a
    :class:`Reads` handle and holds nothing else, so a reader's part (:mod:`monitor.store.readers`) offers its reads
    and has no way to write; a part that writes is also :class:`Writing`."""

    def __init__(self, db: Reads) -> None:
        self._db = db

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._db.path}>"

    @property
    def _engine(self) -> Statements:
        return self._db

    @property
    def _lock(self) -> Any:
        return self._db.lock

    @property
    def _clock(self) -> Callable[[], float]:
        return self._db.clock

    @property
    def _replica(self) -> int:
        return self._db.replica

    @property
    def _shared(self) -> bool:
        return self._db.shared

    @property
    def _columns(self) -> dict[str, tuple[str, ...]]:
        return self._db.columns

    def _state(self, make: Callable[[], T]) -> T:
        """What the parts of this database keep between calls (an index, counts), made by ``make`` once: a part and
        its read-only twin see the same."""
        with self._lock:
            if make not in self._db.kept:
                self._db.kept[make] = make()
            return cast(T, self._db.kept[make])

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return self._db.rows(sql, params)

    def _one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        return self._db.one(sql, params)

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._db.scalar(sql, params)

    def _each_result_table(self, sql: str, params: Sequence[Any] = ()) -> tuple[str, tuple[Any, ...]]:
        return self._db.each_result_table(sql, params)

    def _count_each_result_table(self, where: str = "", params: Sequence[Any] = ()) -> int:
        return self._db.count_each_result_table(where, params)


class Writing(Part):
    """A part that writes (``class IncidentsPart(Writing, IncidentsReader)``): its reads as every part's, and the
    database itself for its transactions and the engine's locks. Only the store makes one, over itself; a reader's
    part has none of this."""

    def __init__(self, db: Base) -> None:
        if not isinstance(db, Base):
            raise TypeError(f"{type(self).__name__} writes: it is made over the database, not over {db!r}")
        super().__init__(db.reads)
        self._database = db

    @property
    def _engine(self) -> engines.Engine:
        return self._database.engine

    def _transaction(self) -> Any:
        return self._database.transaction()


class part(Generic[P]):  # noqa: N801 - a descriptor read as functools.cached_property is
    """A part of a store, made over it by ``make`` on first use and kept, as :func:`functools.cached_property`
    would (one lock per part, so two threads asking at once get one part)::

        class Store(Base):
            results = part(ResultsPart)
    """

    def __init__(self, make: Callable[[Base], P]) -> None:
        self.make = make
        self.name = ""
        self.lock = threading.RLock()

    def __set_name__(self, owner: type[Base], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, db: None, owner: type[Base]) -> Self: ...
    @overload
    def __get__(self, db: Base, owner: type[Base]) -> P: ...
    def __get__(self, db: Base | None, owner: type[Base]) -> Self | P:
        if db is None:
            return self
        with self.lock:
            kept = db.__dict__
            if self.name not in kept:
                kept[self.name] = self.make(db)
            return cast(P, kept[self.name])
