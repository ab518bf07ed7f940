"""The store the MCP tools read: the daemon's database, from the first call after the daemon made it.

Before the daemon first ran, its database does not exist, and ``monitor mcp`` never makes one: a reader creates
nothing (the daemon is the one writer). Until then the tools answer from an empty store in memory (the configured
targets, not checked yet; no results, no incidents), and every answer carries a ``note`` that names the database
waited for. Each call looks again, so a client started before the daemon reads its results once they are there.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from monitor import wiring
from monitor.config import Config
from monitor.mcp.answers import Answers
from monitor.store import Store, is_url
from monitor.store.engines import describe, shown

if TYPE_CHECKING:
    from monitor.incidents.writer import Writer


class Unavailable(RuntimeError):
    """What a tool needs the daemon's database for, asked before there is one: the client reads why."""


def opened(location: str, *, replica: int = 0) -> Store | None:
    """The store at ``location``; None while there is none yet: no such file, or no monitor tables in it (its
    daemon has not started). Any other failure raises, for the caller to name the database."""
    if location != ":memory:" and not is_url(location) and not os.path.isfile(location):
        return None
    try:
        return wiring.store(location, replica=replica, create=False)
    except LookupError:
        return None


class Source:
    """The tools' answers: over the daemon's store once it is there (:meth:`look`), over an empty one till then."""

    def __init__(self, store: Store, config: Config, *, location: str | None = None) -> None:
        self._store, self.config = store, config  # the tools read through ``answers``: read-only parts
        self.answers = answers(store, config)
        self.location = location  # the database waited for; None once it is open

    @classmethod
    def at(cls, location: str, config: Config) -> Source:
        """The source for the database at ``location``, open if it is there."""
        store = opened(location, replica=config.replica_index or 0)
        if store is not None:
            return cls(store, config)
        return cls(wiring.store(":memory:"), config, location=location)

    @property
    def note(self) -> str | None:
        """What every answer says while the daemon's database is not there; None once it is."""
        if self.location is None:
            return None
        where = shown(self.location)
        if is_url(self.location):
            return f"no checks have been recorded yet: {where} holds no monitor tables until the daemon (monitor run) has started"
        return f"no checks have been recorded yet: {where} does not exist until the daemon (monitor run) has started"

    def look(self) -> None:
        """Open the daemon's database if it has come since the last call."""
        if self.location is None:
            return
        try:
            store = opened(self.location, replica=self.config.replica_index or 0)
        except Exception as exc:  # sqlite3.Error, psycopg.Error, OSError: said with the database's name
            raise Unavailable(f"cannot open database {shown(self.location)}: {describe(exc, self.location)}") from None
        if store is not None:
            self._store.close()
            self._store, self.answers, self.location = store, answers(store, self.config), None

    @property
    def store(self) -> Store:
        """The daemon's store, for ``investigate``, which runs the agent on it (:mod:`monitor.wiring` makes its
        writer); :class:`Unavailable` while there is none."""
        if self.location is not None:
            raise Unavailable(f"{self.note}: nothing to write to")
        return self._store

    def writer(self) -> Writer:
        """The incident writer over the daemon's store (``confirm_suggestion``'s); :class:`Unavailable` while there is
        none."""
        return wiring.writer(self.config, self.store)

    def close(self) -> None:
        self._store.close()


def answers(store: Store, config: Config) -> Answers:
    """The tools' answers over ``store``'s read-only parts; recall (which indexes incidents by meaning as it goes)
    over the store itself."""
    from monitor.mcp import likeness

    return Answers(store.read_only(), config, like=lambda incident, k: likeness.like(store, config, incident, k=k))
