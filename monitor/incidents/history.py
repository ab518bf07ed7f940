"""A target's recent results in memory: the :class:`Window` that keeps them, the :class:`History` the detectors read.

A window costs as much on its first check as on its last: its columns are allocated whole when it is
made, ``limit`` rows of 25 bytes, and used as a ring::

    checked_at   double        ok           byte
    latency_ms   double (NaN: none)         status_code  int (NO_STATUS: none)
    severity     code          error        code (two bytes each: :data:`WORDS` holds the strings)

The newest result also stays whole (the incident's summary and evidence read its ``detail``). After each
result, the window hands the detectors a :class:`History`: its columns newest first, a copy the next
result does not change. A history reads as a sequence of checks too (:class:`~monitor.core.results.Checked`), as
the store returns them: the newest whole, older ones as a :class:`Held` each.
"""

from __future__ import annotations

import functools
import math
import threading
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

from monitor.config import Detectors
from monitor.core.results import Checked

Row = Checked  # a result, stored (StoredResult) or just made (Result), or a Held

NO_STATUS = -(2**31)  # the status_code column's None (a DNS, TCP or heartbeat check has none)


class Words:
    """Two-byte codes for the few strings a result's ``severity`` and ``error`` take; code 0 is None.

    Error kinds are a fixed vocabulary (:mod:`monitor.core.errors`), so the table stays small. Past
    ``LIMIT`` words a new one is coded None: only the newest row's error is read, and it is kept whole.
    """

    LIMIT = 65_535

    def __init__(self) -> None:
        self.words: list[str | None] = [None]
        self._codes: dict[str | None, int] = {None: 0}
        self._lock = threading.Lock()

    def code(self, word: str | None) -> int:
        code = self._codes.get(word)
        if code is not None:
            return code
        with self._lock:
            if word not in self._codes and len(self.words) <= self.LIMIT:
                self._codes[word] = len(self.words)
                self.words.append(word)
            return self._codes.get(word, 0)


WORDS = Words()


@dataclass(frozen=True, slots=True)
class Held:
    """An older check as a window keeps it: its columns, no detail (only the newest row's is read)."""

    checked_at: float
    ok: int
    latency_ms: float | None = None
    severity: str | None = None
    error: str | None = None
    status_code: int | None = None
    detail: str | None = None


class History(Sequence[Row]):
    """A target's results newest first, as columns: ``ok``, ``checked_at``, ``latency_ms`` (NaN when none),
    ``severity`` (codes of :data:`WORDS`). ``history[0]`` is the newest row whole; older ones read as a
    :class:`Held` each, the fields a window keeps (or as the rows it was made of, with :meth:`of`)."""

    __slots__ = ("ok", "checked_at", "latency_ms", "severity", "error", "status_code", "newest", "_rows", "failing")

    def __init__(
        self,
        ok: Sequence[int],
        checked_at: Sequence[float],
        latency_ms: Sequence[float],
        severity: Sequence[int],
        error: Sequence[int],
        status_code: Sequence[int],
        newest: Row | None,
        rows: Sequence[Row] | None = None,
        failing: tuple[int, float] | None = None,
    ) -> None:
        self.ok, self.checked_at, self.latency_ms, self.severity = ok, checked_at, latency_ms, severity
        self.error, self.status_code, self.newest, self._rows = error, status_code, newest, rows
        # the current run of failures, counted whole by a window (its length, when it began): it may be longer
        # than the rows held; None: count it from the rows
        self.failing = failing

    @classmethod
    def of(cls, rows: Sequence[Row]) -> History:
        """Rows newest first (as ``Store.recent_results`` returns them) as a history; a history as it is."""
        if type(rows) is History:  # not isinstance: an ABC's check costs a microsecond, four times a check
            return rows
        return cls(
            [row.ok for row in rows],
            [row.checked_at for row in rows],
            [math.nan if row.latency_ms is None else row.latency_ms for row in rows],
            [WORDS.code(row.severity) for row in rows],
            (),
            (),
            rows[0] if rows else None,
            rows,
        )

    def __len__(self) -> int:
        return len(self.ok)

    @overload
    def __getitem__(self, index: int) -> Row: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Row]: ...

    def __getitem__(self, index: int | slice) -> Row | Sequence[Row]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if self._rows is not None:
            return self._rows[index]
        index = index + len(self) if index < 0 else index
        if not 0 <= index < len(self):
            raise IndexError(index)
        if index == 0 and self.newest is not None:
            return self.newest
        latency, status = self.latency_ms[index], self.status_code[index]
        return Held(
            self.checked_at[index],
            self.ok[index],
            None if math.isnan(latency) else latency,
            WORDS.words[self.severity[index]],
            WORDS.words[self.error[index]],
            None if status == NO_STATUS else status,
        )


class Window:
    """A target's recent results, as ``detect`` needs them, kept in memory in columns of fixed size.

    Old rows go once no detector can see them any more: beyond the longest count (``window_size``,
    ``consecutive``, ``recover_after``), the passing checks with a latency that ``latency_drift`` compares,
    and the flapping time window; never during a run of failures (its length is in the incident's summary),
    and never more than ``limit`` rows. So ``detect`` finds in a window what it finds in the same rows read
    from the store.
    """

    __slots__ = ("limit", "head", "count", "timed", "newest", "_columns", "run", "run_since")

    def __init__(self, rows: Sequence[Row], limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a window holds at least one row, not {limit}")
        self.limit = limit
        self.head = self.count = self.timed = 0  # the oldest row's slot; rows held; of them, latency_drift's
        self._columns = tuple(map(array.__copy__, _blank(limit)))
        for row in reversed(rows[:limit]):
            self._put(self.count, row)
        self.newest: Row | None = rows[0] if rows else None
        # the current run of failures, counted past the rows kept (a long outage's length is in its summary): as
        # far as the rows it is made from go, then as results come
        self.run, self.run_since = 0, 0.0
        for row in rows:
            if row.ok:
                break
            self.run, self.run_since = self.run + 1, row.checked_at

    def add(self, row: Row, cfg: Detectors, now: float) -> History:
        """Add a result just stored; returns the history, newest first, in the store's order (by ``checked_at``:
        a check that started before the newest one and ended after it goes behind it)."""
        checked_at = self._columns[1]
        place = self.count
        while place and checked_at[self._slot(place - 1)] > row.checked_at:
            place -= 1
        if self.count == self.limit:  # full: the oldest goes (or the row itself, were it older still)
            if place == 0:
                self._late(row, held=False)
                return self._trimmed(cfg, now)
            self._drop_oldest()
            place -= 1
        for at in range(self.count, place, -1):
            self._move(at - 1, at)
        self._put(place, row)
        if place == self.count - 1:
            self.newest = row
            self.run, self.run_since = (0, 0.0) if row.ok else (self.run + 1, self.run_since if self.run else row.checked_at)
        else:
            self._late(row, held=True)
        return self._trimmed(cfg, now)

    def _late(self, row: Row, *, held: bool) -> None:
        """The run of failures after a late row (checked before the newest; ``held``: it is among the rows held,
        else it was older than all of them): counted again from the rows held where a pass ends the run there;
        where every row held fails, the run goes on past them and a late failure adds one to it."""
        ok, checked_at = self._columns[0], self._columns[1]
        failing = 0
        while failing < self.count and not ok[self._slot(self.count - 1 - failing)]:
            failing += 1
        if failing < self.count:  # a pass held ends the run: its length is in sight
            self.run, self.run_since = failing, checked_at[self._slot(self.count - failing)] if failing else 0.0
        elif not row.ok:
            self.run += 1
            self.run_since = min(self.run_since, row.checked_at) if self.run > 1 else row.checked_at
        elif not held and row.checked_at > self.run_since:  # a pass older than every row held, inside the run
            self.run, self.run_since = self.count, checked_at[self.head]

    def history(self) -> History:
        """The rows held, newest first: a copy of the columns."""
        head, end = self.head, self.head + self.count
        if not self.count:
            columns = [column[:0] for column in self._columns]
        elif end > self.limit:
            wrapped = end - self.limit
            columns = [column[wrapped - 1 :: -1] + column[: head - 1 : -1] for column in self._columns]
        else:
            columns = [column[end - 1 : head - 1 : -1] if head else column[end - 1 :: -1] for column in self._columns]
        ok, checked_at, latency, severity, error, status = columns
        failing = (self.run, self.run_since) if self.run > len(ok) else None  # past the rows held: the count
        return History(ok, checked_at, latency, severity, error, status, self.newest, None, failing)

    def _trimmed(self, cfg: Detectors, now: float) -> History:
        ok, checked_at = self._columns[0], self._columns[1]
        counted = max(cfg.consecutive, cfg.window_size, cfg.recover_after)
        passing = cfg.latency_recent + max(cfg.latency_baseline, 5, cfg.latency_recent)
        newest = self._slot(self.count - 1)
        while (
            self.count > counted
            and ok[newest]
            and checked_at[self.head] < now - cfg.flap_window
            and (not self._timed(self.head) or self.timed > passing)
        ):
            self._drop_oldest()
        return self.history()

    def _slot(self, place: int) -> int:
        """Where the row ``place`` rows after the oldest is kept."""
        return (self.head + place) % self.limit

    def _put(self, place: int, row: Row) -> None:
        """Write ``row`` as the row ``place`` after the oldest, one more row held."""
        slot, (ok, checked_at, latency, severity, error, status) = self._slot(place), self._columns
        ok[slot] = 1 if row.ok else 0
        checked_at[slot] = row.checked_at
        ms, code = row.latency_ms, row.status_code
        latency[slot] = math.nan if ms is None else ms
        severity[slot], error[slot] = WORDS.code(row.severity), WORDS.code(row.error)
        status[slot] = NO_STATUS if code is None else code
        self.count += 1
        self.timed += 1 if ok[slot] and ms is not None else 0

    def _move(self, source: int, to: int) -> None:
        source, to = self._slot(source), self._slot(to)
        for column in self._columns:
            column[to] = column[source]

    def _timed(self, slot: int) -> int:
        """1 for a passing check with a latency (one ``latency_drift`` compares), else 0."""
        latency = self._columns[2][slot]
        return 1 if self._columns[0][slot] and latency == latency else 0

    def _drop_oldest(self) -> None:
        self.timed -= self._timed(self.head)
        self.head = (self.head + 1) % self.limit
        self.count -= 1


def rows_needed(cfg: Detectors, interval: float, limit: int) -> int:
    """The rows a window of a target checked every ``interval`` seconds holds, at most ``limit``: as many as its
    detectors can see (:meth:`Window._trimmed`): the longest count, the checks inside the flapping window (and
    two late ones), and twice the passing checks latency drift compares (room for failures among them). A
    window's columns are allocated whole, so a target checked every 30 s holds 110 rows, not 200 (2.2 KB less)."""
    counted = max(cfg.consecutive, cfg.window_size, cfg.recover_after)
    passing = cfg.latency_recent + max(cfg.latency_baseline, 5, cfg.latency_recent)
    flapping = math.ceil(cfg.flap_window / interval) + 2 if interval > 0 else limit
    return max(1, min(limit, max(counted, 2 * passing, flapping)))


@functools.cache
def _blank(limit: int) -> tuple[array[Any], ...]:
    """Empty columns of ``limit`` rows, for a window to copy (repeated, not grown: no slack)."""
    return tuple(array(kind, [0]) * limit for kind in "bddHHi")
