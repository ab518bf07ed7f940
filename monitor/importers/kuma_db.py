"""An Uptime Kuma database opened as hostile input: read-only, immutable, every value, row and second bounded.

A database is code as much as data: a table's generated column runs when it is read (``zeroblob(900000000)``
in a 36 KB file is 900 MB a row). So the file is opened

- read-only and ``immutable`` (``file:kuma.db?mode=ro&immutable=1``): SQLite takes no lock and makes no
  ``-shm`` or ``-wal`` beside it, even for a WAL-mode database Kuma is using. What Kuma wrote since its last
  checkpoint is in ``kuma.db-wal`` and is not read; :attr:`Database.unread_log` says so;
- with a longest value of ``MAX_VALUE`` (``SQLITE_LIMIT_LENGTH``): a longer one is an error of SQLite's
  before it is made;
- with at most ``MAX_ROWS`` rows a table, ``MAX_TOTAL`` bytes of values in all, and ``TIME_LIMIT`` seconds
  of SQL (a progress handler).

Anything past them is :class:`Unreadable`, said with the table and the bound.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from monitor.importers.files import Refused, Unreadable

Row = dict[str, Any]
MAX_VALUE = 4 << 20  # a monitor's body, a page's CSS: kilobytes
MAX_ROWS = 100_000
MAX_TOTAL = 128 << 20
TIME_LIMIT = 5.0  # of SQL: a Kuma of a thousand monitors reads in a tenth of that


class Database:
    """The tables of a Kuma database, read within the bounds above; ``close()`` when done."""

    def __init__(self, path: str | Path, *, time_limit: float = TIME_LIMIT, max_total: int = MAX_TOTAL) -> None:
        self.path, self.time_limit, self.left = Path(path), time_limit, max_total
        if not self.path.is_file():
            raise Unreadable(f"{path}: no such file" if not self.path.exists() else f"{path}: not a regular file: refused")
        uri = f"{self.path.resolve().as_uri()}?mode=ro&immutable=1"
        self.db = sqlite3.connect(uri, uri=True)
        self.db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE)
        self.deadline = time.monotonic() + time_limit
        self.db.set_progress_handler(self._late, 100)  # a hostile row can take 100 ms: checked each few rows
        self.db.row_factory = sqlite3.Row
        try:
            self.tables = {str(row[0]) for row in self._execute("SELECT name FROM sqlite_master WHERE type = 'table'", "its tables")}
        except Unreadable:
            self.db.close()
            raise

    @property
    def unread_log(self) -> int:
        """Bytes in Kuma's write-ahead log beside the file (not read: Kuma was running, or did not stop cleanly)."""
        log = self.path.with_name(self.path.name + "-wal")
        return log.stat().st_size if log.is_file() else 0

    def rows(self, table: str, order: str = "id") -> list[Row]:
        """Every row of ``table`` as a dict (none if this schema has no such table)."""
        if table not in self.tables:
            return []
        found: list[Row] = []
        for row in self._execute(f'SELECT * FROM "{table}" ORDER BY {order}', f"table {table}"):  # noqa: S608 - our own names
            if len(found) >= MAX_ROWS:
                raise Refused(f"{self.path}: table {table} has more than {MAX_ROWS:,} rows: refused")
            self.left -= sum(len(value) for value in row if isinstance(value, (str, bytes)))
            if self.left < 0:
                raise Refused(f"{self.path}: more than {MAX_TOTAL >> 20} MiB of values (at table {table}): refused")
            found.append(dict(row))
        return found

    def _execute(self, sql: str, what: str) -> Iterator[sqlite3.Row]:
        """The rows of ``sql``, one at a time; each of SQLite's errors as :class:`Unreadable`."""
        try:
            cursor = self.db.execute(sql)
            while (row := cursor.fetchone()) is not None:
                yield row
        except sqlite3.Error as exc:
            raise self._unreadable(exc, what) from None

    def _unreadable(self, exc: sqlite3.Error, what: str) -> Unreadable:
        if time.monotonic() > self.deadline:
            return Refused(f"{self.path}: reading {what} took longer than {self.time_limit:g} s: refused")
        if "too big" in str(exc):
            return Refused(f"{self.path}: {what} has a value longer than {MAX_VALUE >> 20} MiB: refused")
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in str(exc):
            return Unreadable(f"{self.path}: not an SQLite database ({exc})")
        return Unreadable(f"{self.path}: {what} cannot be read ({exc})")

    def _late(self) -> int:
        return 1 if time.monotonic() > self.deadline else 0

    def close(self) -> None:
        self.db.close()


def parsed(text: Any) -> Any:
    """A JSON column's value; None where it is empty, not JSON, or nests past what Python's parser recurses."""
    if text in (None, ""):
        return None
    try:
        return json.loads(str(text))
    except (ValueError, RecursionError):
        return None
