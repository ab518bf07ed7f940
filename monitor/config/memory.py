"""``memory:``, the agent's working memory, how long incidents and results are kept, and the judge of recall."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from monitor.config.values import Duration, Strict, http_url

LITELLM_ID = re.compile(r"^[A-Za-z0-9_.-]+/\S+$")


class JudgeConfig(Strict):
    """``memory.judge``: a model that reads the evidence and the past incidents whose fix could apply, and names
    the one that is the same failure (:mod:`monitor.memory.judge`). It may make the memory assert only with a
    calibration (``monitor eval --judge``) that shows its false recall within ``max_false_recall``."""

    model: str = Field(
        default="none",
        description="`none` (no judge: the default), `agent` (the model the agent talks to) or a litellm id such as "
        "`openai/qwen2.5-coder:7b`.",
    )
    api_base: str | None = Field(default=None, description="The judge's server; none: `model.api_base` for `agent`, litellm's own else.")
    api_key: str | None = Field(default=None, description="The judge's API key, if its server asks for one.")
    timeout: Duration = Field(default=30.0, description="How long one judging may take; past it, recall alone speaks.")
    max_tokens: int = Field(default=160, ge=32, le=4096, description="The most tokens of the judge's answer.")
    max_false_recall: float = Field(
        default=0.05,
        gt=0.0,
        le=0.5,
        description="The judge may make the memory assert only when the 95% Wilson upper bound of its false recall, "
        "as calibrated on at least 60 rows, is at most this.",
    )
    calibration: str | None = Field(
        default=None, description="The calibration file `monitor eval --judge` writes; none: the judge's pick is only suggested."
    )

    @field_validator("model", mode="before")
    @classmethod
    def _model_word(cls, value: Any) -> Any:
        if value is None or value is False:
            return "none"
        if not isinstance(value, str) or not (value in ("none", "agent") or LITELLM_ID.match(value)):
            raise ValueError("write none, agent, or a litellm model id such as openai/qwen2.5-coder:7b or ollama_chat/qwen2.5:7b")
        return value

    @field_validator("api_base")
    @classmethod
    def _scheme(cls, value: str | None) -> str | None:
        return None if value is None else http_url(value if "://" in value else f"http://{value}")

    @property
    def enabled(self) -> bool:
        return self.model != "none"


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
    judge: JudgeConfig = Field(default_factory=JudgeConfig, description="A model that reads the candidates of recall (off by default).")
