"""The agent's memory in figures: its working memory as the next model request carries it (:class:`WorkingStats`),
the whole memory's size now (:class:`MemoryStats`), and that size over time, one :class:`MemorySample` a minute."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from monitor.core.rows import Row


@dataclass(frozen=True)
class WorkingStats(Row):
    """The working memory: its steps by type, and the bytes and estimated tokens of the history the next request
    carries (the system prompt, a constant, excluded)."""

    steps: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    tokens_estimate: int = 0


@dataclass(frozen=True)
class MemoryStats:
    """The memory's size now: the working memory's, the incidents in long-term memory, and the database's bytes (what
    ``/metrics`` shows and the daemon samples)."""

    working: WorkingStats
    incidents: int
    db_bytes: int

    def to_json(self) -> dict[str, Any]:
        """The working memory's figures, and the incidents and bytes beside them."""
        return {**self.working.to_json(), "incidents": self.incidents, "db_bytes": self.db_bytes}


@dataclass(frozen=True)
class MemorySample(Row):
    """The memory's size at one moment, as stored. Fields are the ``memory_samples`` columns, in their order."""

    at: float
    bytes: int | None  # of the working memory
    tokens: int | None  # estimated, of the working memory
    steps: int | None  # in the working memory
    incidents: int | None
    db_bytes: int | None
