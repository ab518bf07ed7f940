"""``probe:``, the blackbox_exporter-compatible ``/probe?target=&module=`` endpoint of the metrics listener.

A module says how to probe (``prober: http``, ``tcp``, ``tls``, ``dns``, or a kind that declares a probe, such as
``icmp``: :mod:`monitor.core.kinds`) with the fields of a target of that kind; ``http_2xx``, ``http_post_2xx``,
``tcp_connect``, ``tls_connect`` and ``icmp`` are there unless the config names its own. ``allow`` lists the targets
a scrape may ask for, as patterns of the address probed (``https://*.example.com/*``, ``tcp://10.0.0.*:5432``,
``icmp://*``, ``dns://10.0.0.53:53``): scheme, host, port and path are each matched, so ``*`` never reaches past the
host, and a host shaped like an address (``10.0.0.*``, ``[fd00::*]``) matches only an address, never a name such as
``10.0.0.1.attacker.example``. The address a probe connects to, once a name is resolved, is checked again
(:meth:`ProbeConfig.reaches`): a name that resolves to a loopback, link-local or unspecified address is refused
unless a pattern names that address. Without ``allow``, /probe refuses every target: anyone who reaches the listener
could otherwise make this process their proxy.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, Field, ValidationError, field_validator, model_validator

from monitor.config.conditions import ConditionText
from monitor.config.errors import shown
from monitor.config.sections import KindSections
from monitor.config.targets import DnsSettings, Expect, Target, TcpSettings, TlsSettings
from monitor.config.values import Duration, Headers, Strict
from monitor.core import kinds, urls

_PATTERN = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(\[[^\]/]+\]|[^/:\[\]@]+)(?::([^/@]+))?(/.*)?$")
_DEFAULT_PORTS = {"http": "80", "https": "443", "dns": "53"}


def probes(name: str) -> kinds.Probe | None:
    """How kind ``name`` probes, None if it does not (or is no kind)."""
    return kinds.get(name).probe if kinds.known(name) else None


def prober(value: str) -> str:
    """A kind that declares a probe, refused as pydantic refuses a value outside a Literal."""
    if probes(value) is None:
        from pydantic_core import PydanticCustomError

        listed = [repr(kind.name) for kind in kinds.loaded() if kind.probe is not None]
        expected = f"{', '.join(listed[:-1])} or {listed[-1]}"
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
    return value


class ProbeModule(KindSections, Strict):
    """How one module probes: ``prober``, and the target fields it needs (the address comes from the scrape);
    a section named as the prober holds a declared kind's own settings (``icmp: {count: 1}``)."""

    KIND_FIELD: ClassVar[str] = "prober"
    OTHERS_REFUSED: ClassVar[bool] = False
    prober: Annotated[str, AfterValidator(prober)]
    timeout: Duration = 10.0
    method: Literal["GET", "HEAD", "POST", "PUT", "OPTIONS"] = "GET"
    headers: Headers = Field(default_factory=dict)
    body: str | None = None
    expect: Expect = Field(default_factory=Expect)
    conditions: list[ConditionText] = Field(default_factory=list, max_length=50)
    verify_tls: bool = True
    ca_file: str | None = None
    max_redirects: int = Field(default=5, ge=0, le=50)
    tcp: TcpSettings | None = None
    tls: TlsSettings | None = None
    dns: DnsSettings | None = None
    query: str | None = None  # dns: the question (NAME or NAME/TYPE); the scrape's target is the server

    @model_validator(mode="after")
    def _makes_a_target(self) -> ProbeModule:
        """The module, with a sample address, must be a valid target of its kind."""
        if self.prober == "dns" and self.query is None:
            raise ValueError("a dns module needs query: NAME or NAME/TYPE (the scrape's target is the server)")
        try:
            self.target(self.probe.sample)
        except ValidationError as exc:
            raise ValueError("; ".join(error["msg"].removeprefix("Value error, ") for error in exc.errors())) from None
        return self

    def address(self, target: str) -> str:
        """The address a scrape's ``target`` names under this module (blackbox's forms: ``host:port``, a URL)."""
        return self.probe.address(target) if self.probe.address else f"{self.prober}://{target}"

    @property
    def probe(self) -> kinds.Probe:
        found = probes(self.prober)
        assert found is not None  # the field's validator saw to it
        return found

    def target(self, address: str, timeout: float | None = None) -> Target:
        """The target to check for ``address`` (what :meth:`address` made); ValidationError if it is none."""
        fields = self.model_dump(exclude={"prober", "query", "dns"}, exclude_unset=True, by_alias=True)
        fields = {key: value for key, value in fields.items() if key not in KIND_FIELDS or self.prober == KIND_FIELDS[key]}
        data: dict[str, Any] = {**fields, "name": "probe", "url": address, "timeout": timeout or self.timeout}
        if self.prober == "tls" and self.expect.cert_min_days is None:  # as blackbox: expiry is a series, not a failure
            data["expect"] = {**data.get("expect", {}), "cert_min_days": 0}
        if self.prober == "dns":
            data["url"] = f"dns:{self.query}"
            data["dns"] = {**(self.dns.model_dump(exclude_unset=True) if self.dns else {}), "server": address.removeprefix("dns://")}
        return Target.model_validate(data)


KIND_FIELDS = {"tcp": "tcp", "tls": "tls", "method": "http", "headers": "http", "body": "http", "max_redirects": "http"}


def default_modules() -> dict[str, ProbeModule]:
    """blackbox_exporter's example modules, as this prober reads them."""
    two_xx = {"status": ["2xx"]}
    # built, not validated: validating makes a sample target of each kind, which would load every prober's module
    return {
        "http_2xx": ProbeModule.model_construct(prober="http", expect=Expect.model_validate(two_xx)),
        "http_post_2xx": ProbeModule.model_construct(prober="http", method="POST", expect=Expect.model_validate(two_xx)),
        "tcp_connect": ProbeModule.model_construct(prober="tcp"),
        "tls_connect": ProbeModule.model_construct(prober="tls"),
        "icmp": ProbeModule.model_construct(prober="icmp"),
    }


class ProbeConfig(Strict):
    allow: list[str] = Field(default_factory=list, max_length=1000)
    concurrency: int = Field(default=4, ge=1, le=64)  # probes at once; past twice as many waiting, 503
    modules: dict[str, ProbeModule] = Field(default_factory=dict)

    @field_validator("allow")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            found = _PATTERN.match(pattern)
            if found is None or kinds.by_scheme(found.group(1)) in (None, "heartbeat"):
                raise ValueError(
                    f"{shown(pattern)} is not an address pattern: write it scheme://host[:port][/path] "
                    "with * and ? in any part, e.g. https://*.example.com/* or icmp://10.0.0.*"
                )
        return value

    @model_validator(mode="after")
    def _with_defaults(self) -> ProbeConfig:
        from monitor.config.values import settle

        settle(self, modules={**default_modules(), **self.modules})
        return self

    def allows(self, address: str) -> bool:
        """Whether a scrape may probe ``address``: scheme, host, port and path each match one pattern's."""
        try:
            parts = urlsplit(address)
            host, port = (parts.hostname or "").lower(), parts.port
        except ValueError:
            return False
        if not host or "@" in parts.netloc:
            return False
        port_text = str(port) if port is not None else _DEFAULT_PORTS.get(parts.scheme, "")
        return any(_matches(pattern, parts.scheme.lower(), host, port_text, parts.path or "/") for pattern in self.allow)

    def reaches(self, kind: str, address: str, port: int | None) -> bool:
        """Whether a probe of ``kind`` may connect to ``address`` (what a name resolved to) on ``port``: a
        pattern names that address, or it is none of loopback, link-local and unspecified."""
        schemes = ("http", "https") if kind == "http" else (kind,)
        port_text = "" if port is None else str(port)
        if any(_matches(pattern, scheme, address.lower(), port_text, None) for pattern in self.allow for scheme in schemes):
            return True
        return not internal(address)


def internal(address: str) -> bool:
    """A loopback, link-local or unspecified address (an IPv4 one mapped into IPv6 too), or no address at all."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_link_local or ip.is_unspecified


def _address_shaped(host: str) -> bool:
    """A host pattern that can only mean addresses: digits, dots and wildcards (IPv4), or any colon (IPv6)."""
    return ":" in host or (re.fullmatch(r"[0-9.*?]+", host) is not None and any(c.isdigit() for c in host))


def _matches(pattern: str, scheme: str, host: str, port: str, path: str | None) -> bool:
    """Whether scheme, host, port and path (``None``: any) fit ``pattern``."""
    found = _PATTERN.match(pattern)
    if found is None or found.group(1).lower() != scheme:
        return False
    want_host, want_port, want_path = found.group(2).lower().strip("[]"), found.group(3), found.group(4)
    want_port = want_port if want_port is not None else _DEFAULT_PORTS.get(scheme, "*")
    if _address_shaped(want_host) and not urls.is_address(host):
        return False
    return (
        fnmatch.fnmatchcase(host, want_host)
        and fnmatch.fnmatchcase(port, want_port)
        and (want_path is None or path is None or fnmatch.fnmatchcase(path, want_path))
    )
