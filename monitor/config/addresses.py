"""Addresses a target may have, and the kind each names by its scheme (:mod:`monitor.core.kinds`): ``https://``,
``tcp://host:port``, ``tls://host:port``, ``dns:NAME/TYPE``, a declared kind's own; and the ``host:port`` of a DNS
server."""

from __future__ import annotations

import re
from typing import Any

from monitor.config.errors import shown
from monitor.core import kinds

KINDS = tuple(kinds.BUILTIN)  # the built-in kinds; a plugin's are in kinds.names() once declared
Kind = str  # a kind's name: kinds.known(name)
SCHEMES = {scheme: name for name, schemes in kinds.BUILTIN.items() for scheme in schemes}
DNS_TYPES = ("A", "AAAA", "CAA", "CNAME", "MX", "NS", "PTR", "SOA", "SRV", "TXT")
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"  # 63 characters at most: IDNA refuses longer
DNS_NAME = re.compile(rf"^(?=.{{1,253}}\.?$){_LABEL}(?:\.{_LABEL})*\.?$")


def is_host(host: str) -> bool:
    """An IP address or a DNS name a resolver can encode (no empty label, none over 63 characters)."""
    import ipaddress

    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return bool(DNS_NAME.match(host))


def kind_of(url: Any) -> str | None:
    """The kind an address names by its scheme (``tcp://db:5432`` -> tcp), or None."""
    scheme, sep, _ = url.partition(":") if isinstance(url, str) else ("", "", "")
    return kinds.by_scheme(scheme) if sep and scheme else None


def host_port(value: str, kind: str) -> tuple[str, int]:
    """``tcp://host:port`` or ``tls://host:port`` split, else a ValueError that names the kind."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(value)
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, -1
    if (
        not host
        or port is None
        or not is_host(host)
        or any(c.isspace() for c in value)
        or (parts.path not in ("", "/") or parts.query or "@" in parts.netloc)
    ):
        raise ValueError(f"{shown(value)} is not a {kind} address: write it {kind}://host:port")
    if not 0 < port <= 65535:
        raise ValueError(f"{kind} address {shown(value)}: the port is out of range (1 to 65535)")
    return host, port


def dns_question(value: str) -> tuple[str, str]:
    """``dns:example.com/MX`` -> (``example.com``, ``MX``); the type defaults to A."""
    rest = value.partition(":")[2].removeprefix("//")
    name, _, rdtype = rest.partition("/")
    rdtype = (rdtype or "A").upper()
    if not DNS_NAME.match(name):
        raise ValueError(f"{shown(value)} is not a dns address: write it dns:NAME or dns:NAME/TYPE, e.g. dns:example.com/MX")
    if rdtype not in DNS_TYPES:
        raise ValueError(f"dns record type {shown(rdtype)} is not one of {', '.join(DNS_TYPES)}")
    return name, rdtype


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
        raise ValueError(
            f"dns server {shown(value)} is not an IP address with an optional port (1.1.1.1, 127.0.0.1:5353, [::1]:53)"
        ) from None
    if not 0 < number <= 65535:
        raise ValueError(f"dns server {shown(value)}: the port is out of range (1 to 65535)")
    return host, number
