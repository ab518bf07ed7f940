"""The agent's memory in figures: its working memory as the next model request carries it (:class:`WorkingStats`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class WorkingStats:
    """The working memory: its steps by type, and the bytes and estimated tokens of the history the next request
    carries (the system prompt, a constant, excluded)."""

    steps: dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    tokens_estimate: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
