"""A target: what to check and what to expect, with the settings of its kind (tcp, tls, dns, heartbeat, or a kind's
own, declared with it: :mod:`monitor.core.kinds`).

``TargetDefaults`` is the ``defaults:`` section, which every target starts from; ``TargetSettings`` adds the
name, the body, the actions the agent may run, and the settings of its kind; :class:`Target` adds its kind and
address, and how it is watched (conditions, quorum, alerts, ...).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, SecretStr, ValidationInfo, field_validator, model_validator

from monitor.config.addresses import DNS_NAME, SCHEMES, Kind, dns_question, dns_server, host_port, kind_of
from monitor.config.conditions import ConditionText, unavailable
from monitor.config.conditions import parse as parse_condition
from monitor.config.detectors import Detectors
from monitor.config.errors import shown
from monitor.config.rules import AlertPolicy
from monitor.config.sections import KindSections
from monitor.config.values import Duration, Headers, HttpUrl, Strict, http_url, settle
from monitor.core import kinds, urls


class JsonExpect(Strict):
    """The JSON body's field at ``path`` (dots and list indexes: ``data.items.0.id``) equals ``equals``."""

    path: str
    equals: Any


ANY_SUCCESS = frozenset(range(200, 400))  # shared by every target that keeps the default: 50,000 copies weighed 200 MB


class Expect(Strict):
    status: frozenset[int] = Field(default_factory=lambda: ANY_SUCCESS)
    max_latency: Duration | None = None
    body_contains: str | None = None
    body_not_contains: str | None = Field(default=None, min_length=1)
    json_: JsonExpect | None = Field(default=None, alias="json")
    cert_min_days: float | None = Field(default=None, ge=0)

    @field_validator("status", mode="before")
    @classmethod
    def _status_list(cls, value: Any) -> Any:
        values = list(value) if isinstance(value, (list, set, frozenset)) else [value]
        out: set[int] = set()
        for item in values:
            text = str(item).strip().lower()
            if re.fullmatch(r"[1-5]xx", text):
                base = int(text[0]) * 100
                out.update(range(base, base + 100))
            elif re.fullmatch(r"\d{3}", text) and 100 <= int(text) <= 599:
                out.add(int(text))
            else:
                raise ValueError(f"{shown(item)} is not a status code: use codes from 100 to 599 or classes like 2xx")
        return frozenset(out)


class Action(Strict):
    """A remediation the agent may ask for: an HTTP call, e.g. a restart webhook."""

    url: HttpUrl
    method: Literal["GET", "POST", "PUT", "DELETE"] = "POST"
    headers: Headers = Field(default_factory=dict)
    body: str | None = None


# Every address a target may have, as an error lists them: "http://, https://, tcp://, tls://, icmp:// or dns:".
_WRITTEN = [f"{scheme}://" for scheme in SCHEMES if scheme not in ("dns", "heartbeat")] + ["dns:"]
ADDRESSES = ", ".join(_WRITTEN[:-1]) + f" or {_WRITTEN[-1]}"
STALE_INTERVALS, STALE_GRACE = 3, 30.0  # a target unchecked for 3 intervals and 30 s is stale (pages, /healthz)


class TargetDefaults(Strict):
    method: Literal["GET", "HEAD", "POST", "PUT", "OPTIONS"] = "GET"
    headers: Headers = Field(default_factory=dict)
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
        if value is not None and not DNS_NAME.match(value):
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
            raise ValueError("heartbeat token must be 32 to 128 characters of A-Z, a-z, 0-9, _ and - (make one with `monitor token`)")
        if len(set(token)) < 8:  # a random hex token of 32 has fewer in about none of a million draws
            raise ValueError(
                f"heartbeat token has only {len(set(token))} different characters: easy to guess (make one with `monitor token`)"
            )
        return value


SETTINGS = ("tcp", "tls", "dns", "heartbeat")  # the sections the config itself knows; a kind may declare its own
KIND_SETTINGS: dict[str, type[Strict]] = {"tcp": TcpSettings, "tls": TlsSettings, "dns": DnsSettings}


def known_kind(value: str) -> str:
    """A kind's name, refused as pydantic refuses a value outside a Literal (the kinds' list is open)."""
    if not kinds.known(value):
        from pydantic_core import PydanticCustomError

        listed = [repr(name) for name in kinds.names()]
        expected = f"{', '.join(listed[:-1])} or {listed[-1]}"
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
    return value


def component_name(value: str) -> str:
    """A name in ``depends_on``: a target's, or a component's such as a host name (``pg-main``)."""
    if not re.fullmatch(r"[A-Za-z0-9_.:/-]{1,253}", value):
        raise ValueError(
            f"{shown(value)} is not a target or component name (1 to 253 letters, digits, '_', '.', ':', '/' or '-', e.g. pg-main)"
        )
    return value


class Quorum(Strict):
    """Check from ``locations`` places (replicas with different ``location``s); an incident opens when
    ``agree`` of them see the target fail. Fewer failing is a warning about those paths, not an outage."""

    locations: int = Field(ge=1, le=16)
    agree: int = Field(ge=1, le=16)

    @model_validator(mode="after")
    def _agree_within(self) -> Quorum:
        if self.agree > self.locations:
            raise ValueError(f"agree ({self.agree}) must not exceed locations ({self.locations})")
        return self


class TargetSettings(TargetDefaults):
    """A target's own settings, whatever its address: a target's, and a scenario's target before the eval gives it
    one (:class:`monitor.eval.scenario.TargetSpec`)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.:/-]{1,128}$")
    body: str | None = None
    actions: dict[str, Action] = Field(default_factory=dict)
    tcp: TcpSettings | None = None
    tls: TlsSettings | None = None
    dns: DnsSettings | None = None
    heartbeat: HeartbeatSettings | None = None


class Target(KindSections, TargetSettings):
    """One thing to check. Its kind is its address's scheme: http(s)://, tcp://, tls://, dns:NAME[/TYPE], or a
    declared kind's (icmp://); a heartbeat target has no address and says ``kind: heartbeat``. A declared kind's
    settings are the section named as the kind (``icmp:``), read with :meth:`settings_as`."""

    kind: Annotated[Kind, AfterValidator(known_kind)] = "http"
    url: str
    # Gatus-like checks of what the answer was, each judged and named when it fails (monitor.config.conditions)
    conditions: list[ConditionText] = Field(default_factory=list, max_length=50)
    quorum: Quorum | None = None  # checked from several locations (replicas with ``lease`` and ``location``)
    # other targets, or components no target checks (pg-main): the fleet's graph (monitor.memory.graph)
    depends_on: list[Annotated[str, AfterValidator(component_name)]] = Field(default_factory=list, max_length=64)
    group: str | None = Field(default=None, min_length=1, max_length=128)
    labels: dict[str, str] = Field(default_factory=dict)
    alerts: AlertPolicy | None = None  # else alert_rules: (monitor/config/rules.py)
    detectors: Detectors | None = None  # its own thresholds, over the top-level detectors: (see Config)
    paused: bool = False  # not checked while true (pause in the web UI or the admin API); its history stays

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
        elif kinds.known(kind) and inferred is not None and kind != inferred:
            raise ValueError(f"kind {kind} does not match the url {shown(urls.redact(str(url)))}, which names a {inferred} check")
        return data

    @field_validator("url")
    @classmethod
    def _address(cls, value: str, info: ValidationInfo) -> str:
        kind = info.data.get("kind", "http")
        if kind == "http":
            if kind_of(value) is None and "://" not in value and not value.startswith("/"):
                raise ValueError(
                    f"{shown(urls.redact(value))} has no scheme: write the kind of check before it, "
                    f"{ADDRESSES} (e.g. https://example.com/health)"
                )
            if kind_of(value) not in (None, "http"):
                raise ValueError(f"{shown(urls.redact(value))} is not an {ADDRESSES} address")
            return http_url(value)
        if kind in ("tcp", "tls"):
            host_port(value, kind)
        elif kind == "dns":
            dns_question(value)
        elif kind == "heartbeat" and kind_of(value) != "heartbeat":
            raise ValueError("a heartbeat target takes no url: pings come to /ping/<token>")
        elif kind not in KIND_SETTINGS and kind != "heartbeat" and (check := kinds.get(kind).address) is not None:
            check(value)
        return value

    @model_validator(mode="after")
    def _settings_of_its_kind(self) -> Target:
        for section in SETTINGS:
            if section != self.kind and getattr(self, section) is not None:
                raise ValueError(f"a {self.kind} target takes no {section}: settings (they are for {section} targets)")
        if self.kind == "heartbeat" and self.heartbeat is None:
            raise ValueError("a heartbeat target needs heartbeat: {token: ..., period: ...}")
        if self.kind in KIND_SETTINGS and getattr(self, self.kind) is None:
            settle(self, **{self.kind: KIND_SETTINGS[self.kind]()})
        return self._with_own_settings()._timeout_within_interval()

    @property
    def stale_after(self) -> float:
        """Seconds without a check after which the target reads as stale (the daemon stopped or fell behind)."""
        return STALE_INTERVALS * self.interval + STALE_GRACE

    def _timeout_within_interval(self) -> Target:
        """A check must end before its target would read as stale (3 intervals and 30 s): a longer timeout makes
        a target that hangs look like a daemon that stopped, and checks it once a timeout, not once an interval.
        A timeout somewhat over a short interval is fine: the next check waits for this one."""
        if self.kind == "heartbeat" or self.timeout <= self.stale_after:
            return self
        raise ValueError(
            f"timeout {self.timeout:g}s is longer than interval {self.interval:g}s allows: a check must "
            f"end before the target reads as stale ({STALE_INTERVALS} intervals and {STALE_GRACE:g}s, "
            f"{self.stale_after:g}s); shorten the timeout or lengthen the interval"
        )


DEFAULT_EXPECT = Expect()


def share_parts(targets: list[Target]) -> None:
    """Let validated targets hold their equal parts once: the set of fields each was written with (pydantic keeps
    one per model: 728 bytes for five names) and an ``expect`` left at its default. Config models are frozen, so
    nothing changes either in place; 50,000 targets then weigh 1.7 KB each, not 3.2, in the daemon and in each
    worker they are sent to (pickle keeps what is shared)."""
    fields: dict[frozenset[str], set[str]] = {}
    for target in targets:
        if target.expect == DEFAULT_EXPECT and not target.expect.model_fields_set:
            target.__dict__["expect"] = DEFAULT_EXPECT  # the same value: no field is set anew
        written = target.__pydantic_fields_set__
        object.__setattr__(target, "__pydantic_fields_set__", fields.setdefault(frozenset(written), written))


# Fields a target of another kind would silently ignore; ``defaults`` may hold them for its http targets.
HTTP_ONLY = (
    "method",
    "headers",
    "body",
    "max_redirects",
    "max_body",
    "expect.status",
    "expect.body_contains",
    "expect.body_not_contains",
    "expect.json",
)
TLS_ONLY = ("verify_tls", "ca_file", "expect.cert_min_days")


def fields_of_another_kind(index: int, target: Any) -> list[tuple[str, str]]:
    """``expect.status`` on a dns target, ``method`` on a tcp one...: an error, not a check that never happens."""
    if not isinstance(target, dict):
        return []
    kind = target.get("kind") if kinds.known(target.get("kind")) else kind_of(target.get("url")) or "http"
    expect = target.get("expect")
    expect = expect if isinstance(expect, dict) else {}
    written = [key for key in target if key != "expect"] + [f"expect.{key}" for key in expect]
    out = []
    for field in written:
        if field in HTTP_ONLY and kind != "http":
            out.append((f"targets[{index}].{field}", f"a {kind} target takes no {field} (it is for http targets)"))
        elif field in TLS_ONLY and kind not in ("http", "tls"):
            out.append((f"targets[{index}].{field}", f"a {kind} target takes no {field} (it is for tls and https targets)"))
    return out + conditions_of_another_kind(index, target, str(kind))


def conditions_of_another_kind(index: int, target: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    """``[BODY]`` on a tcp target, ``[CERTIFICATE_EXPIRATION]`` on an http:// one: a condition never judged."""
    written = target.get("conditions")
    out = []
    for position, text in enumerate(written if isinstance(written, list) else []):
        try:
            reason = unavailable(parse_condition(text), kind, str(target.get("url") or ""))
        except ValueError:
            continue  # the field's own validation says what is wrong with it
        if reason is not None:
            out.append((f"targets[{index}].conditions[{position}]", reason))
    return out
