"""``model:`` (which model the agent talks to, and how) and ``agent:`` (when it runs, and what it may do)."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import Field, field_validator

from monitor.config.values import Duration, Strict, http_url, yaml_boolean

DEFAULT_OLLAMA = "http://localhost:11434"


class ModelConfig(Strict):
    id: str = "auto"
    name: str = "llama3.2"
    api_base: str = Field(default_factory=lambda: os.environ.get("OLLAMA_HOST", DEFAULT_OLLAMA), validate_default=True)
    timeout: Duration = 60.0
    num_ctx: int = Field(default=8192, ge=512)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    retries: int = Field(default=2, ge=0, le=10)
    backoff: Duration = 1.0
    max_tokens: int = Field(default=512, ge=16)
    api_key: str | None = None
    constrain: Literal["auto", "on", "off"] = "auto"

    @field_validator("constrain", mode="before")
    @classmethod
    def _yaml_booleans(cls, value: Any) -> Any:
        return yaml_boolean(value, "auto, on or off", "on")

    @field_validator("api_base")
    @classmethod
    def _scheme(cls, value: str) -> str:
        return http_url(value if "://" in value else f"http://{value}")


class AgentConfig(Strict):
    mode: Literal["on_anomaly", "every_cycle", "off"] = "on_anomaly"
    max_steps: int = Field(default=6, ge=1, le=50)
    max_runs_per_hour: int = Field(default=12, ge=0)
    run_timeout: Duration = 300.0
    allow_urls: list[str] = Field(default_factory=list)
    remediation: Literal["off", "dry_run", "on"] = "off"
    guided: bool = True

    @field_validator("mode", mode="before")
    @classmethod
    def _mode_off(cls, value: Any) -> Any:
        return yaml_boolean(value, "on_anomaly, every_cycle or off", None)

    @field_validator("remediation", mode="before")
    @classmethod
    def _remediation_words(cls, value: Any) -> Any:
        """Real actions only when the user wrote ``on``: a true or a yes is not consent."""
        return yaml_boolean(value, "off, dry_run or on", None)
