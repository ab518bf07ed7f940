"""What every part of the store stands on: the connection (an engine), transactions, reads, migrations."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, Self, TypeVar, cast, overload

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


class Base:
    """One database, through its engine: every part of :class:`~monitor.store.Store` reads and writes with these."""

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
        self.clock = clock
        self.replica = replica
        self.errors = self.engine.unavailable  # a write that meets one is kept and tried again
        self._timeout = timeout
        self._lock = self.engine.lock
        self._columns: dict[str, tuple[str, ...]] = {}  # each table's, read once (migrations run first)
        self._kept: dict[Callable[[], Any], Any] = {}  # what the parts keep between calls (Part._state)
        if not create and self.version == 0:  # a reader pointed at the wrong database creates nothing there
            self.engine.close()
            raise LookupError(f"{self.path} holds no monitor tables")
        self.migrate()

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
        return is_url(self.engine.location)

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
        return int(self._scalar(f"SELECT sum(n) FROM ({each}) AS counts", repeated))

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One atomic write: all of it is committed, or none."""
        with self.engine.transaction() as tx:
            yield tx

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self.engine.execute(sql, params)
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=False)) for row in cursor.fetchall()]

    def _one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        with self._lock:
            row = self.engine.execute(sql, params).fetchone()
        return row[0] if row else None

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
    part shares, the way sqlite-utils' ``Table`` objects share their ``Database``. What it stands on is private, so a
    read-only part (:mod:`monitor.store.readers`) offers its reads and nothing else."""

    def __init__(self, db: Base) -> None:
        self._db = db

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self._db.path}>"

    @property
    def _engine(self) -> engines.Engine:
        return self._db.engine

    @property
    def _lock(self) -> Any:
        return self._db.engine.lock

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
        return self._db._columns

    def _state(self, make: Callable[[], T]) -> T:
        """What the parts of this database keep between calls (an index, counts), made by ``make`` once: a part and
        its read-only twin see the same."""
        with self._lock:
            if make not in self._db._kept:
                self._db._kept[make] = make()
            return cast(T, self._db._kept[make])

    def _transaction(self) -> Any:
        return self._db.transaction()

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return self._db._rows(sql, params)

    def _one(self, sql: str, params: Sequence[Any] = ()) -> dict[str, Any] | None:
        return self._db._one(sql, params)

    def _scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._db._scalar(sql, params)

    def _each_result_table(self, sql: str, params: Sequence[Any] = ()) -> tuple[str, tuple[Any, ...]]:
        return self._db.each_result_table(sql, params)

    def _count_each_result_table(self, where: str = "", params: Sequence[Any] = ()) -> int:
        return self._db.count_each_result_table(where, params)


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
