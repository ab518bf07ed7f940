"""The replicas holding a lease in a shared database, as values: a :class:`Lease` each."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Lease:
    """A live replica's lease: which replica, where it checks from ("" for anywhere), and the seconds until its
    lease ends, by the database's clock."""

    id: int
    location: str
    remaining: float
