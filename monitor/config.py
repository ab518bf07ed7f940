"""Configuration: the one place a config file is read, validated and defaulted.

A config is YAML. ``load(path)`` returns a :class:`Config` or raises
:class:`ConfigError` whose message names the file, the path of the bad field
(``targets[2].expect.status``) and what is allowed there.

Durations are written ``30s``, ``500ms``, ``2m``, ``1h`` (or a bare number of
seconds). ``${ENV_VAR}`` anywhere in a string is replaced by the variable's
value; ``${ENV_VAR:-default}`` supplies a fallback.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

DEFAULT_OLLAMA = "http://localhost:11434"


class ConfigError(Exception):
    """Bad configuration: the message is meant for the user, as it is."""


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(value: Any) -> float:
    """``"500ms"`` -> 0.5, ``"2m"`` -> 120.0, ``5`` -> 5.0 (seconds)."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like 30s, 500ms or 2m")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise ValueError(f"{value!r} is not a duration: write it like 30s, 500ms, 2m or 1h")
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if seconds <= 0:
        raise ValueError("a duration must be greater than zero")
    return seconds


Duration = Annotated[float, BeforeValidator(parse_duration)]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class JsonExpect(Strict):
    """The JSON body's field at ``path`` (dots and list indexes: ``data.items.0.id``) equals ``equals``."""

    path: str
    equals: Any


class Expect(Strict):
    status: list[int] = Field(default_factory=lambda: list(range(200, 400)))
    max_latency: Duration | None = None
    body_contains: str | None = None
    json_: JsonExpect | None = Field(default=None, alias="json")
    cert_min_days: float | None = Field(default=None, ge=0)

    @field_validator("status", mode="before")
    @classmethod
    def _status_list(cls, value: Any) -> Any:
        values = value if isinstance(value, list) else [value]
        out: list[int] = []
        for item in values:
            text = str(item).strip().lower()
            if re.fullmatch(r"[1-5]xx", text):
                base = int(text[0]) * 100
                out.extend(range(base, base + 100))
            elif re.fullmatch(r"\d{3}", text) and 100 <= int(text) <= 599:
                out.append(int(text))
            else:
                raise ValueError(
                    f"{item!r} is not a status code: use codes from 100 to 599 or classes like 2xx"
                )
        return out


class Action(Strict):
    """A remediation the agent may ask for: an HTTP call, e.g. a restart webhook."""

    url: str
    method: Literal["GET", "POST", "PUT", "DELETE"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    body: str | None = None


class TargetDefaults(Strict):
    method: Literal["GET", "HEAD", "POST", "PUT", "OPTIONS"] = "GET"
    headers: dict[str, str] = Field(default_factory=dict)
    interval: Duration = 30.0
    timeout: Duration = 10.0
    expect: Expect = Field(default_factory=Expect)
    max_redirects: int = Field(default=5, ge=0, le=50)
    max_body: int = Field(default=1 << 20, ge=1024)
    verify_tls: bool = True
    ca_file: str | None = None

    @field_validator("ca_file")
    @classmethod
    def _readable(cls, value: str | None) -> str | None:
        if value is not None and not Path(value).is_file():
            raise ValueError(f"{value!r} is not a file (a PEM bundle of CA certificates)")
        return value


class Target(TargetDefaults):
    name: str = Field(pattern=r"^[A-Za-z0-9_.:/-]{1,128}$")
    url: str
    body: str | None = None
    actions: dict[str, Action] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"{value!r} is not an http:// or https:// URL")
        return value


class Detectors(Strict):
    """Thresholds of the failure-pattern detectors (see patterns.py)."""

    consecutive: int = Field(default=3, ge=1)
    window_failures: int = Field(default=3, ge=1)
    window_size: int = Field(default=10, ge=2)
    flap_changes: int = Field(default=4, ge=2)
    flap_window: Duration = 600.0
    latency_factor: float = Field(default=3.0, gt=1.0)
    latency_recent: int = Field(default=5, ge=1)
    latency_baseline: int = Field(default=50, ge=5)
    recover_after: int = Field(default=2, ge=1)

    @model_validator(mode="after")
    def _window_fits(self) -> Detectors:
        if self.window_failures > self.window_size:
            raise ValueError("window_failures cannot exceed window_size")
        return self


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
        return {False: "off", True: "on"}.get(value, value) if isinstance(value, bool) else value

    @field_validator("api_base")
    @classmethod
    def _scheme(cls, value: str) -> str:
        return value if "://" in value else f"http://{value}"


class AgentConfig(Strict):
    mode: Literal["on_anomaly", "every_cycle", "off"] = "on_anomaly"
    max_steps: int = Field(default=6, ge=1, le=50)
    max_runs_per_hour: int = Field(default=12, ge=0)
    run_timeout: Duration = 300.0
    allow_urls: list[str] = Field(default_factory=list)
    remediation: Literal["off", "dry_run", "on"] = "off"
    guided: bool = True

    @field_validator("remediation", mode="before")
    @classmethod
    def _yaml_booleans(cls, value: Any) -> Any:
        """YAML reads a bare off/on as a boolean."""
        return {False: "off", True: "on"}.get(value, value) if isinstance(value, bool) else value


class MemoryConfig(Strict):
    keep_steps: int = Field(default=8, ge=2)
    max_observation: int = Field(default=1500, ge=100)
    inject_incidents: int = Field(default=3, ge=0, le=20)
    retention: Duration = 30 * 86400.0


class MetricsConfig(Strict):
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(default=9108, ge=0, le=65535)


class Webhook(Strict):
    url: str
    headers: dict[str, str] = Field(default_factory=dict)


class AlertsConfig(Strict):
    webhooks: list[Webhook] = Field(default_factory=list)
    alertmanager: str | None = None
    retry_max: Duration = 300.0


class Maintenance(Strict):
    targets: list[str]
    start: datetime
    end: datetime
    reason: str = ""

    def covers(self, target: str, at: float) -> bool:
        return target in self.targets and self.start.timestamp() <= at < self.end.timestamp()


class Config(Strict):
    database: str | None = None
    defaults: TargetDefaults = Field(default_factory=TargetDefaults)
    targets: list[Target] = Field(default_factory=list)
    detectors: Detectors = Field(default_factory=Detectors)
    model: ModelConfig = Field(default_factory=ModelConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    metrics: MetricsConfig = Field(default_factory=MetricsConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    maintenance: list[Maintenance] = Field(default_factory=list)
    concurrency: int = Field(default=64, ge=1, le=4096)

    @model_validator(mode="before")
    @classmethod
    def _apply_defaults(cls, data: Any) -> Any:
        """Each target starts from ``defaults`` and overrides what it names."""
        if not isinstance(data, dict) or not isinstance(data.get("targets"), list):
            return data
        defaults = data.get("defaults") or {}
        if not isinstance(defaults, dict):
            return data
        data = dict(data)
        data["targets"] = [
            _merge(defaults, t) if isinstance(t, dict) else t for t in data["targets"]
        ]
        return data

    @model_validator(mode="after")
    def _unique_names(self) -> Config:
        seen: set[str] = set()
        for target in self.targets:
            if target.name in seen:
                raise ValueError(f"target name {target.name!r} is used twice; names must be unique")
            seen.add(target.name)
        return self

    def in_maintenance(self, target: str, at: float) -> bool:
        return any(window.covers(target, at) for window in self.maintenance)

    def target(self, name: str) -> Target:
        for target in self.targets:
            if target.name == name:
                return target
        known = ", ".join(t.name for t in self.targets) or "none"
        raise ConfigError(f"no target named {name!r} (configured: {known})")


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _substitute(node: Any, where: str, source: str) -> Any:
    if isinstance(node, dict):
        return {k: _substitute(v, _join(where, str(k)), source) for k, v in node.items()}
    if isinstance(node, list):
        return [_substitute(v, f"{where}[{i}]", source) for i, v in enumerate(node)]
    if not isinstance(node, str):
        return node

    def replace(match: re.Match[str]) -> str:
        name, fallback = match.group(1), match.group(2)
        if name in os.environ:
            return os.environ[name]
        if fallback is not None:
            return fallback
        raise ConfigError(
            f"{source}: {where}: environment variable ${{{name}}} is not set "
            f"(set it, or write ${{{name}:-default}})"
        )

    return _ENV.sub(replace, node)


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _location(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif str(part).startswith(("function-", "json-or-python", "union[")):
            continue
        else:
            out = _join(out, "json" if part == "json_" else str(part))
    return out or "(top level)"


def _allowed_fields(loc: tuple[Any, ...]) -> str:
    model: Any = Config
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        annotation = getattr(field, "annotation", None)
        args = getattr(annotation, "__args__", ()) or ()
        candidates = [annotation, *args]
        model = next(
            (c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None
        )
        if model is None:
            return ""
    names = [f.alias or n for n, f in model.model_fields.items()]
    return ", ".join(sorted(names))


def describe(error: ValidationError, source: str) -> str:
    """One line per problem: ``file: path: what is wrong (what is allowed)``."""
    lines = []
    for item in error.errors():
        loc = item["loc"]
        where = _location(loc)
        if item["type"] == "extra_forbidden":
            allowed = _allowed_fields(loc)
            message = f"unknown field (allowed here: {allowed})"
        elif item["type"] == "missing":
            message = "is required"
        else:
            message = item["msg"].removeprefix("Value error, ")
        lines.append(f"{source}: {where}: {message}")
    return "\n".join(lines)


def parse(text: str, source: str = "<config>") -> Config:
    """Validate config text; every problem is a :class:`ConfigError`."""
    import yaml  # not needed by `monitor check URL`, which must start fast

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{source}: {where}invalid YAML: {problem}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the top level must be a mapping (database, defaults, targets, ...)")
    data = _substitute(data, "", source)
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe(exc, source)) from None


def load(path: str | Path) -> Config:
    """Read and validate a config file. Relative ``database`` paths are relative to the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    config = parse(text, str(path))
    if config.database not in (None, ":memory:") and not Path(config.database).is_absolute():
        config.database = str(path.parent / config.database)
    return config


def with_urls(config: Config, refs: list[str]) -> tuple[Config, list[Target]]:
    """Targets for ``refs``: configured names, or URLs checked with the config's defaults."""
    urls = [r for r in refs if re.match(r"^https?://", r)]
    if urls:
        extra = for_urls(urls, **config.defaults.model_dump(exclude_unset=True)).targets
        config = config.model_copy(update={"targets": config.targets + extra})
        named = dict(zip(urls, (t.name for t in extra), strict=True))
        refs = [named.get(r, r) for r in refs]
    return config, [config.target(r) for r in refs]


def for_urls(urls: list[str], **overrides: Any) -> Config:
    """A config for ad-hoc checks of URLs (``monitor check URL``), each named by its host and path."""
    targets, seen = [], set()
    for url in urls:
        base = re.sub(r"[^A-Za-z0-9_.:/-]", "_", re.sub(r"^https?://", "", url)).rstrip("/")[:120] or "target"
        name, count = base, 1
        while name in seen:
            count += 1
            name = f"{base}-{count}"
        seen.add(name)
        targets.append({"name": name, "url": url})
    data: dict[str, Any] = {"targets": targets}
    if overrides:
        data["defaults"] = overrides
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe(exc, "command line")) from None
