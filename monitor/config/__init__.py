"""Configuration: the one place a config file is read, validated and defaulted.

A config is YAML. ``load(path)`` returns a :class:`Config` or raises
:class:`ConfigError` whose message names the file, the path of the bad field
(``targets[2].expect.status``) and what is allowed there.

Durations are written ``30s``, ``500ms``, ``2m``, ``1h`` (or a bare number of
seconds), finite and at most 10 years. ``${ENV_VAR}`` anywhere in a string is
replaced by the variable's value; ``${ENV_VAR:-default}`` supplies a fallback,
which may itself hold ``${OTHER}``; ``$${`` is a literal ``${``.

The file is read as hostile input: at most 1 MiB of UTF-8, nested at most 64
deep, aliases expanding to at most 100,000 nodes, no duplicate keys. Booleans
are YAML 1.2's ``true`` and ``false`` only, so a bare ``off`` (``agent.mode:
off``) stays the word the user wrote. Every problem is reported, each as
``file:line: field: what is wrong``. Top-level keys starting ``x-`` are
ignored: a place to define anchors (``x-common: &common {...}``).
"""

from __future__ import annotations

import math
import os
import re
import stat
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from monitor.config.substitution import SubstitutionError, substitute
from monitor.core import urls

if TYPE_CHECKING:
    from monitor.config.safeyaml import Lines

DEFAULT_OLLAMA = "http://localhost:11434"
MAX_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_CHARS = 8 << 20
MAX_SECONDS = 3650 * 86400.0


class ConfigError(Exception):
    """Bad configuration: the message is meant for the user, as it is."""


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut short: an error message echoes what was written, never a megabyte of it."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit - 3]}..."


def parse_duration(value: Any) -> float:
    """``"500ms"`` -> 0.5, ``"2m"`` -> 120.0, ``5`` -> 5.0 (seconds)."""
    if isinstance(value, bool):
        raise ValueError("expected a duration like 30s, 500ms or 2m")
    if isinstance(value, (int, float)):
        seconds = float(value) if isinstance(value, float) else float(max(-(10**20), min(value, 10**20)))
    else:
        match = _DURATION.match(str(value))
        if not match:
            raise ValueError(f"{shown(value)} is not a duration: write it like 30s, 500ms, 2m or 1h")
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    if math.isnan(seconds) or seconds == math.inf:
        raise ValueError(f"a duration must be a finite number, not {seconds:g}")
    if seconds <= 0:
        raise ValueError("a duration must be greater than zero")
    if seconds > MAX_SECONDS:
        raise ValueError(f"{shown(value)} is longer than the longest duration allowed, 3650d")
    return seconds


Duration = Annotated[float, BeforeValidator(parse_duration)]


def http_url(value: str) -> str:
    """``value`` if it is an http:// or https:// URL with a host and a port in range, else ValueError."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    from monitor.core.urls import redact  # an error message is logged: it never shows a URL's secrets

    if parts is None or parts.scheme not in ("http", "https") or not host or any(c.isspace() for c in value):
        raise ValueError(f"{shown(redact(value))} is not an http:// or https:// URL")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port <= 65535:
        raise ValueError(f"port {parts.netloc.rpartition(':')[2][:20]} is out of range (1 to 65535) in "
                         f"{shown(redact(value))}")
    return value if value.isascii() else ascii_url(value)


def ascii_url(value: str) -> str:
    """An internationalized URL as it goes on the wire: the host in IDNA, the rest percent-encoded (the HTTP
    client takes nothing else)."""
    import httpx

    from monitor.core.urls import redact

    try:
        return str(httpx.URL(value))
    except httpx.InvalidURL:
        raise ValueError(f"{shown(redact(value))} is not an http:// or https:// URL (its host is not a valid "
                         "internationalized name)") from None


HttpUrl = Annotated[str, AfterValidator(http_url)]


def _yaml_boolean(value: Any, words: str, true_means: str | None) -> Any:
    """A bare YAML boolean where a word is expected: false is off, true is ``true_means`` or an error."""
    if value is False:
        return "off"
    if value is True:
        if true_means is None:
            raise ValueError(f"true is not allowed here: write {words}")
        return true_means
    return value


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)


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
                    f"{shown(item)} is not a status code: use codes from 100 to 599 or classes like 2xx"
                )
        return out


class Action(Strict):
    """A remediation the agent may ask for: an HTTP call, e.g. a restart webhook."""

    url: HttpUrl
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
            raise ValueError(f"{shown(value)} is not a file (a PEM bundle of CA certificates)")
        return value


KINDS = ("http", "tcp", "tls", "dns", "heartbeat")
Kind = Literal["http", "tcp", "tls", "dns", "heartbeat"]
SCHEMES = {"http": "http", "https": "http", "tcp": "tcp", "tls": "tls", "dns": "dns", "heartbeat": "heartbeat"}
DNS_TYPES = ("A", "AAAA", "CAA", "CNAME", "MX", "NS", "PTR", "SOA", "SRV", "TXT")
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"  # 63 characters at most: IDNA refuses longer
_DNS_NAME = re.compile(rf"^(?=.{{1,253}}\.?$){_LABEL}(?:\.{_LABEL})*\.?$")


def _is_host(host: str) -> bool:
    """An IP address or a DNS name a resolver can encode (no empty label, none over 63 characters)."""
    import ipaddress

    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(_DNS_NAME.match(host))


def kind_of(url: Any) -> str | None:
    """The kind an address names by its scheme (``tcp://db:5432`` -> tcp), or None."""
    scheme, sep, _ = url.partition(":") if isinstance(url, str) else ("", "", "")
    return SCHEMES.get(scheme.lower()) if sep else None


def host_port(value: str, kind: str) -> tuple[str, int]:
    """``tcp://host:port`` or ``tls://host:port`` split, else a ValueError that names the kind."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, -1
    if not host or port is None or not _is_host(host) or any(c.isspace() for c in value) or (
            parts.path not in ("", "/") or parts.query or "@" in parts.netloc):
        raise ValueError(f"{shown(value)} is not a {kind} address: write it {kind}://host:port")
    if not 0 < port <= 65535:
        raise ValueError(f"{kind} address {shown(value)}: the port is out of range (1 to 65535)")
    return host, port


def dns_question(value: str) -> tuple[str, str]:
    """``dns:example.com/MX`` -> (``example.com``, ``MX``); the type defaults to A."""
    rest = value.partition(":")[2].removeprefix("//")
    name, _, rdtype = rest.partition("/")
    rdtype = (rdtype or "A").upper()
    if not _DNS_NAME.match(name):
        raise ValueError(f"{shown(value)} is not a dns address: write it dns:NAME or dns:NAME/TYPE, e.g. dns:example.com/MX")
    if rdtype not in DNS_TYPES:
        raise ValueError(f"dns record type {shown(rdtype)} is not one of {', '.join(DNS_TYPES)}")
    return name, rdtype


class TcpSettings(Strict):
    """A ``tcp://`` target: after connecting, send ``send`` and expect a reply that matches ``expect``."""

    send: str | None = None
    expect: str | None = None  # a regular expression the reply must match (re.search)
    max_reply: int = Field(default=65536, ge=1, le=1 << 20)

    @field_validator("expect")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"tcp expect {shown(value)} is not a regular expression: {exc}") from None
        return value


class TlsSettings(Strict):
    """A ``tls://`` target: ``server_name`` is the SNI and the name the certificate must match (default: the host)."""

    server_name: str | None = None

    @field_validator("server_name")
    @classmethod
    def _host_name(cls, value: str | None) -> str | None:
        if value is not None and not _DNS_NAME.match(value):
            raise ValueError(f"{shown(value)} is not a host name (labels of 1 to 63 characters, e.g. www.example.com)")
        return value


class DnsSettings(Strict):
    """A ``dns:`` target: ask ``server`` (default: the system's first resolver), expect answers or NXDOMAIN."""

    server: str | None = None  # host or host:port, an address: it must not itself need resolving
    protocol: Literal["udp", "tcp"] = "udp"
    contains: list[str] = Field(default_factory=list)  # each must be one of the answers
    equals: list[str] | None = None  # the answers, in any order, must be exactly these
    nxdomain: bool = False  # the name must not exist

    @field_validator("server")
    @classmethod
    def _address(cls, value: str | None) -> str | None:
        if value is not None:
            dns_server(value)
        return value


def dns_server(value: str) -> tuple[str, int]:
    """``1.1.1.1``, ``127.0.0.1:5353`` or ``[::1]:53`` -> (address, port)."""
    import ipaddress

    host, port = value, "53"
    if value.startswith("["):
        host, _, port = value[1:].partition("]")
        port = port.removeprefix(":") or "53"
    elif value.count(":") == 1:
        host, _, port = value.partition(":")
    try:
        ipaddress.ip_address(host)
        number = int(port)
    except ValueError:
        raise ValueError(f"dns server {shown(value)} is not an IP address with an optional port "
                         "(1.1.1.1, 127.0.0.1:5353, [::1]:53)") from None
    if not 0 < number <= 65535:
        raise ValueError(f"dns server {shown(value)}: the port is out of range (1 to 65535)")
    return host, number


class HeartbeatSettings(Strict):
    """A ``heartbeat`` target: the job pings ``/ping/<token>`` at least every ``period``, ``grace`` late at most."""

    token: SecretStr
    period: Duration
    grace: Duration = 300.0

    @field_validator("token")
    @classmethod
    def _long_random(cls, value: SecretStr) -> SecretStr:
        token = value.get_secret_value()
        if not re.fullmatch(r"[A-Za-z0-9_-]{32,128}", token):
            raise ValueError("heartbeat token must be 32 to 128 characters of A-Z, a-z, 0-9, _ and - "
                             "(make one with `monitor token`)")
        if len(set(token)) < 8:  # a random hex token of 32 has fewer in about none of a million draws
            raise ValueError(f"heartbeat token has only {len(set(token))} different characters: easy to guess "
                             "(make one with `monitor token`)")
        return value


SETTINGS = ("tcp", "tls", "dns", "heartbeat")


def component_name(value: str) -> str:
    """A name in ``depends_on``: a target's, or a component's such as a host name (``pg-main``)."""
    if not re.fullmatch(r"[A-Za-z0-9_.:/-]{1,253}", value):
        raise ValueError(f"{shown(value)} is not a target or component name (1 to 253 letters, digits, "
                         "'_', '.', ':', '/' or '-', e.g. pg-main)")
    return value


class Target(TargetDefaults):
    """One thing to check. Its kind is its address's scheme: http(s)://, tcp://, tls://, dns:NAME[/TYPE];
    a heartbeat target has no address and says ``kind: heartbeat``."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.:/-]{1,128}$")
    kind: Kind = "http"
    url: str
    body: str | None = None
    actions: dict[str, Action] = Field(default_factory=dict)
    tcp: TcpSettings | None = None
    tls: TlsSettings | None = None
    dns: DnsSettings | None = None
    heartbeat: HeartbeatSettings | None = None
    # other targets, or components no target checks (pg-main): the fleet's graph (monitor.memory.graph)
    depends_on: list[Annotated[str, AfterValidator(component_name)]] = Field(default_factory=list, max_length=64)

    @model_validator(mode="before")
    @classmethod
    def _kind_from_url(cls, data: Any) -> Any:
        """``kind`` is read off the url's scheme; written out, it must agree (a heartbeat has no url)."""
        if not isinstance(data, dict):
            return data
        data, url, kind = dict(data), data.get("url"), data.get("kind")
        if kind == "heartbeat" and url is None and isinstance(data.get("name"), str):
            data["url"] = url = f"heartbeat:{data['name']}"
        inferred = kind_of(url)
        if kind is None and inferred is not None:
            data["kind"] = inferred
        elif kind in KINDS and inferred is not None and kind != inferred:
            raise ValueError(f"kind {kind} does not match the url {shown(urls.redact(str(url)))}, "
                             f"which names a {inferred} check")
        return data

    @field_validator("url")
    @classmethod
    def _address(cls, value: str, info: ValidationInfo) -> str:
        kind = info.data.get("kind", "http")
        if kind == "http":
            if kind_of(value) not in (None, "http"):
                raise ValueError(f"{shown(urls.redact(value))} is not an http://, https://, tcp://, tls:// or dns: address")
            return http_url(value)
        if kind in ("tcp", "tls"):
            host_port(value, kind)
        elif kind == "dns":
            dns_question(value)
        elif kind == "heartbeat" and kind_of(value) != "heartbeat":
            raise ValueError("a heartbeat target takes no url: pings come to /ping/<token>")
        return value

    @model_validator(mode="after")
    def _settings_of_its_kind(self) -> Target:
        for section in SETTINGS:
            if section != self.kind and getattr(self, section) is not None:
                raise ValueError(f"a {self.kind} target takes no {section}: settings (they are for {section} targets)")
        if self.kind == "heartbeat" and self.heartbeat is None:
            raise ValueError("a heartbeat target needs heartbeat: {token: ..., period: ...}")
        if self.kind in ("tcp", "tls", "dns") and getattr(self, self.kind) is None:
            setattr(self, self.kind, {"tcp": TcpSettings, "tls": TlsSettings, "dns": DnsSettings}[self.kind]())
        return self


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
    latency_margin: Duration = 0.025  # and at least this much slower: 1 ms to 4 ms on a busy host is no incident
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
        return _yaml_boolean(value, "auto, on or off", "on")

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
        return _yaml_boolean(value, "on_anomaly, every_cycle or off", None)

    @field_validator("remediation", mode="before")
    @classmethod
    def _remediation_words(cls, value: Any) -> Any:
        """Real actions only when the user wrote ``on``: a true or a yes is not consent."""
        return _yaml_boolean(value, "off, dry_run or on", None)


class MemoryConfig(Strict):
    keep_steps: int = Field(default=8, ge=2)
    max_observation: int = Field(default=1500, ge=100)
    inject_incidents: int = Field(default=3, ge=0, le=20)
    retention: Duration = 30 * 86400.0
    # incidents kept; over it, the least valuable go (monitor.memory.forgetting), never an open one
    max_incidents: int = Field(default=10_000, ge=10)


class MetricsConfig(Strict):
    enabled: bool = True
    host: str = "127.0.0.1"
    port: int = Field(default=9108, ge=0, le=65535)

    def listening_on(self, address: str) -> MetricsConfig:
        """These settings, enabled and listening on ``address`` (``HOST:PORT``, ``[::]:PORT`` or ``:PORT``)."""
        host, sep, port = address.rpartition(":")
        host = host.strip("[]") or "0.0.0.0"
        if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ConfigError(f"metrics listen address {shown(address)}: write it as HOST:PORT, e.g. 0.0.0.0:9108")
        return self.model_copy(update={"enabled": True, "host": host, "port": int(port)})


class WebConfig(Strict):
    """The web UI on the daemon's own listener (off unless enabled; ``monitor web`` serves it alone)."""

    enabled: bool = False
    listen: str = "127.0.0.1:9110"
    refresh: Duration = Field(default=10.0, gt=0)  # how often the overview reloads its data
    # With a token, incident pages offer acknowledge, resolve with a note and silence, to whoever types it.
    token: str | None = Field(default=None, min_length=16)

    @field_validator("listen")
    @classmethod
    def _host_port(cls, value: str) -> str:
        host, _, port = value.rpartition(":")
        if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError(f"{shown(value)} is not host:port, e.g. 127.0.0.1:9110")
        return value

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0].strip("[]")

    @property
    def port(self) -> int:
        return int(self.listen.rpartition(":")[2])


class Webhook(Strict):
    url: HttpUrl
    headers: dict[str, str] = Field(default_factory=dict)


class AlertsConfig(Strict):
    webhooks: list[Webhook] = Field(default_factory=list)
    # one Alertmanager, or the members of an HA cluster: each gets every alert, as Prometheus sends them
    alertmanager: list[HttpUrl] = Field(default_factory=list)
    retry_max: Duration = 300.0
    max_age: Duration = 86400.0  # an undelivered notification older than this is dropped, not sent late
    max_attempts: int = Field(default=100, ge=1)  # and one tried this often
    # the ``instance`` label of every alert (default: the host name), so installs never merge alerts
    instance: str | None = Field(default=None, min_length=1, max_length=128)
    # Apprise URLs (https://github.com/caronc/apprise/wiki): Slack, Teams, Telegram, e-mail, ntfy, ...
    notify: list[str] = Field(default_factory=list)

    @field_validator("alertmanager", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [] if value is None else [http_url(value)] if isinstance(value, str) else value

    @field_validator("notify")
    @classmethod
    def _apprise_urls(cls, value: list[str]) -> list[str]:
        if value:
            import apprise  # only for configs that use it: it loads its ~100 service plugins

            for url in value:
                if apprise.Apprise.instantiate(url, suppress_exceptions=True) is None:
                    raise ValueError(f"{urls.redact(url)!r}: no Apprise service understands this URL")
        return value


class Maintenance(Strict):
    targets: list[str]
    start: datetime
    end: datetime
    reason: str = ""

    @field_validator("end")
    @classmethod
    def _after_start(cls, end: datetime, info: ValidationInfo) -> datetime:
        start = info.data.get("start")
        if start is not None and end.timestamp() <= start.timestamp():
            raise ValueError(f"ends before it starts ({start.isoformat()})")
        return end

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
    web: WebConfig = Field(default_factory=WebConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    maintenance: list[Maintenance] = Field(default_factory=list)
    concurrency: int = Field(default=64, ge=1, le=4096)
    # scale-out: replicas split the targets between them by a stable hash of each name (schedule.py)
    replicas: int = Field(default=1, ge=1, le=1000)
    replica_index: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _replica(self) -> Config:
        """``replica_index`` from the config, else ``$MONITOR_REPLICA_INDEX``, else the host name's
        ordinal (a StatefulSet's pod ``monitor-2`` is replica 2); alone, a daemon is replica 0."""
        if self.replica_index is None:
            self.replica_index = replica_ordinal(self.replicas)
        if self.replica_index >= self.replicas:
            raise ValueError(f"replica_index {self.replica_index} must be below replicas ({self.replicas})")
        return self

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
    def _cross_references(self, info: ValidationInfo) -> Config:
        """Unique target names, known maintenance targets (``parse`` checks these on the raw data)."""
        if info.context and info.context.get("cross_checked"):
            return self
        problems = cross_references({"targets": [{"name": t.name, "depends_on": t.depends_on} for t in self.targets],
                                     "maintenance": [{"targets": m.targets} for m in self.maintenance]})
        if problems:
            raise ValueError("\n".join(f"{where}: {message}" for where, message in problems))
        return self

    def in_maintenance(self, target: str, at: float) -> bool:
        return any(window.covers(target, at) for window in self.maintenance)

    def target(self, name: str) -> Target:
        for target in self.targets:
            if target.name == name:
                return target
        known = ", ".join(t.name for t in self.targets) or "none"
        raise ConfigError(f"no target named {name!r} (configured: {known})")


def replica_ordinal(replicas: int) -> int:
    """Which replica this process is, when the config does not say: see ``Config._replica``."""
    if replicas == 1:
        return 0
    value = os.environ.get("MONITOR_REPLICA_INDEX", "").strip()
    if value:
        if not value.isdigit():
            raise ValueError(f"MONITOR_REPLICA_INDEX={value[:20]!r} is not a number")
        return int(value)
    import socket

    match = re.search(r"-(\d+)$", socket.gethostname())
    if match is None:
        raise ValueError(f"replicas is {replicas}: set replica_index, or MONITOR_REPLICA_INDEX, or run as a "
                         f"StatefulSet pod whose host name ends in -N (this one is {socket.gethostname()!r})")
    return int(match.group(1))


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def cross_references(data: Any) -> list[tuple[str, str]]:
    """Problems between fields, found on raw data so that they show beside every other error."""
    targets = data.get("targets") if isinstance(data, dict) else None
    if not isinstance(targets, list):
        return []
    problems, names = [], set()
    tokens: dict[str, Any] = {}
    for index, target in enumerate(targets):
        name = target.get("name") if isinstance(target, dict) else None
        if isinstance(name, str) and name in names:
            problems.append((f"targets[{index}].name", f"target name {name!r} is used twice; names must be unique"))
        if isinstance(name, str):
            names.add(name)
        problems += _fields_of_another_kind(index, target)
        beat = target.get("heartbeat") if isinstance(target, dict) else None
        token = beat.get("token") if isinstance(beat, dict) else None
        if isinstance(token, str) and token in tokens:  # the pings would all go to one of them
            problems.append((f"targets[{index}].heartbeat.token", f"the same token as target {tokens[token]!r}; "
                             "each heartbeat needs its own (make one with `monitor token`)"))
        elif isinstance(token, str):
            tokens[token] = name
    problems += _dependencies(targets, names)
    windows = data.get("maintenance")
    for index, window in enumerate(windows if isinstance(windows, list) else []):
        wanted = window.get("targets") if isinstance(window, dict) else None
        for position, name in enumerate(wanted if isinstance(wanted, list) else []):
            if isinstance(name, str) and name not in names:
                known = ", ".join(sorted(names)) or "none"
                problems.append((f"maintenance[{index}].targets[{position}]",
                                 f"no target named {name!r} (configured: {known})"))
    return problems


def _dependencies(targets: list[Any], names: set[str]) -> list[tuple[str, str]]:
    """A target that depends on itself, names a dependency twice, or names a target in the wrong case."""
    problems, folded = [], {name.lower(): name for name in names}
    for index, target in enumerate(targets):
        wanted = target.get("depends_on") if isinstance(target, dict) else None
        seen: set[str] = set()
        for position, name in enumerate(wanted if isinstance(wanted, list) else []):
            where = f"targets[{index}].depends_on[{position}]"
            if not isinstance(name, str):
                continue
            if name == target.get("name"):
                problems.append((where, f"target {name!r} depends on itself"))
            elif name in seen:
                problems.append((where, f"{name!r} is listed twice"))
            elif name not in names and name.lower() in folded:
                problems.append((where, f"no target named {name!r}: did you mean {folded[name.lower()]!r}? "
                                        "(names are case-sensitive; a name that is no target is a component)"))
            seen.add(name)
    return problems


# Fields a target of another kind would silently ignore; ``defaults`` may hold them for its http targets.
HTTP_ONLY = ("method", "headers", "body", "max_redirects", "max_body", "expect.status", "expect.body_contains",
             "expect.json")
TLS_ONLY = ("verify_tls", "ca_file", "expect.cert_min_days")


def _fields_of_another_kind(index: int, target: Any) -> list[tuple[str, str]]:
    """``expect.status`` on a dns target, ``method`` on a tcp one...: an error, not a check that never happens."""
    if not isinstance(target, dict):
        return []
    kind = target.get("kind") if target.get("kind") in KINDS else kind_of(target.get("url")) or "http"
    expect = target.get("expect")
    expect = expect if isinstance(expect, dict) else {}
    written = [key for key in target if key != "expect"] + [f"expect.{key}" for key in expect]
    out = []
    for field in written:
        if field in HTTP_ONLY and kind != "http":
            out.append((f"targets[{index}].{field}", f"a {kind} target takes no {field} (it is for http targets)"))
        elif field in TLS_ONLY and kind not in ("http", "tls"):
            out.append((f"targets[{index}].{field}", f"a {kind} target takes no {field} (it is for tls and https targets)"))
    return out


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


def problems(error: ValidationError) -> list[tuple[str, str]]:
    """Each problem as ``(field path, what is wrong (what is allowed))``."""
    out = []
    for item in error.errors():
        loc = item["loc"]
        if item["type"] == "extra_forbidden":
            message = f"unknown field (allowed here: {_allowed_fields(loc)})"
        elif item["type"] == "missing":
            message = "is required"
        else:
            message = item["msg"].removeprefix("Value error, ")
        out.append((_location(loc), message))
    return out


def describe(error: ValidationError, source: str) -> str:
    """One line per problem: ``file: path: what is wrong (what is allowed)``."""
    return "\n".join(f"{source}: {where}: {message}" for where, message in problems(error))


MAX_PROBLEMS = 50


def _render(source: str, where: str, message: str, line: int | None) -> str:
    at = f"{source}:{line}" if line else source
    where = where if len(where) <= 200 else f"{where[:197]}..."
    return f"{at}: {where}: {message}" if where else f"{at}: {message}"


def parse(text: str, source: str = "<config>") -> Config:
    """Validate config text; every problem is a :class:`ConfigError`."""
    return parse_bytes(text.encode("utf-8", "surrogatepass"), source)


def parse_bytes(data: bytes, source: str = "<config>") -> Config:
    """Validate a config file's bytes; every problem, each with its line, is one :class:`ConfigError`."""
    from monitor.config import safeyaml

    try:
        document, lines = safeyaml.load(data, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, max_nodes=MAX_NODES,
                                        max_chars=MAX_CHARS)
    except safeyaml.YamlError as exc:
        raise ConfigError(_render(source, exc.where, exc.message, exc.line)) from None
    if document is None:
        raise ConfigError(f"{source}: the file is empty (write at least targets: with one target)")
    if not isinstance(document, dict):
        raise ConfigError(f"{source}: the top level must be a mapping (database, defaults, targets, ...)")
    document = {k: v for k, v in document.items() if not str(k).startswith("x-")}  # anchors' place, as in compose
    try:
        expanded = substitute(document)
    except SubstitutionError as exc:
        raise ConfigError(_render(source, exc.where, exc.message, lines.line_of(exc.where))) from None
    found = cross_references(expanded)
    try:
        config = Config.model_validate(expanded, context={"cross_checked": True})
    except ValidationError as exc:
        found = problems(exc) + found
    if found:
        raise ConfigError(_report(_not_inherited(found, lines), lines, source))
    return config


def _report(found: list[tuple[str, str]], lines: Lines, source: str) -> str:
    """Problems in the order of the file, at most ``MAX_PROBLEMS`` of them."""
    ordered = sorted(found, key=lambda problem: lines.line_of(problem[0]) or 0)
    out = [_render(source, where, message, lines.line_of(where)) for where, message in ordered[:MAX_PROBLEMS]]
    if len(ordered) > MAX_PROBLEMS:
        out.append(f"{source}: ... and {len(ordered) - MAX_PROBLEMS} more problems")
    return "\n".join(out)


def _not_inherited(found: list[tuple[str, str]], lines: Lines) -> list[tuple[str, str]]:
    """Without the copies of a bad ``defaults`` field in every target that did not set it."""
    bad_defaults = {where.removeprefix("defaults.") for where, _ in found if where.startswith("defaults.")}

    def inherited(where: str) -> bool:
        match = re.fullmatch(r"targets\[\d+\]\.(.+)", where)
        return match is not None and match.group(1) in bad_defaults and where not in lines.lines

    return [(where, message) for where, message in found if not inherited(where)]


def load(path: str | Path) -> Config:
    """Read and validate a config file. Relative ``database`` paths are relative to the file."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the reload
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise ConfigError(f"{path}: not a regular file")
            data = file.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    config = parse_bytes(data, str(path))
    if config.database not in (None, ":memory:") and not config.database.startswith(("postgresql://", "postgres://")) \
            and not Path(config.database).is_absolute():
        config.database = str(path.parent / config.database)
    return config


def with_urls(config: Config, refs: list[str]) -> tuple[Config, list[Target]]:
    """Targets for ``refs``: configured names, or URLs checked with the config's defaults."""
    urls = [r for r in refs if kind_of(r) in ("http", "tcp", "tls", "dns")]
    if urls:
        extra = for_urls(urls, **config.defaults.model_dump(exclude_unset=True)).targets
        config = config.model_copy(update={"targets": config.targets + extra})
        named = dict(zip(urls, (t.name for t in extra), strict=True))
        refs = [named.get(r, r) for r in refs]
    return config, [config.target(r) for r in refs]


def for_urls(urls: list[str], dns: dict[str, Any] | None = None, **overrides: Any) -> Config:
    """A config for ad-hoc checks of URLs (``monitor check URL``), each named by its host and path;
    ``dns`` holds the settings of ``dns:`` addresses."""
    targets, seen = [], set()
    for url in urls:
        base = re.sub(r"[^A-Za-z0-9_.:/-]", "_", re.sub(r"^https?://", "", url)).rstrip("/")[:120] or "target"
        name, count = base, 1
        while name in seen:
            count += 1
            name = f"{base}-{count}"
        seen.add(name)
        targets.append({"name": name, "url": url, **({"dns": dns} if dns and kind_of(url) == "dns" else {})})
    data: dict[str, Any] = {"targets": targets}
    if overrides:
        data["defaults"] = overrides
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe(exc, "command line")) from None
