"""``memory:``, the agent's working memory and how long incidents and results are kept."""

from __future__ import annotations

from pydantic import Field

from monitor.config.values import Duration, Strict


class MemoryConfig(Strict):
    keep_steps: int = Field(default=8, ge=2)
    max_observation: int = Field(default=1500, ge=100)
    inject_incidents: int = Field(default=3, ge=0, le=20)
    retention: Duration = 30 * 86400.0
    # incidents kept; over it, the least valuable go (monitor.memory.forgetting), never an open one
    max_incidents: int = Field(default=10_000, ge=10)
    # What recall compares meanings with (monitor/memory/embedding.py): builtin (multilingual-e5-small, offline),
    # ollama/<model> or openai/<model> on model.api_base, or none (full-text recall only).
    embedder: str = Field(default="builtin", pattern=r"^(builtin|none|(ollama|openai)/\S+)$")
