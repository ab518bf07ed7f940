"""URLs: what the agent may reach, and how a URL may be written down.

A URL is compared as parsed parts, never as a string: ``Prefix("http://127.0.0.1:80/api")``
admits the same scheme, host and port, and a path equal to ``/api`` or under
``/api/``. A URL with userinfo (``http://a@b/``), an unparsable port, or dot
segments in its path is admitted by no prefix.

``redact(url)``, ``redact_text`` and ``redacted`` (:mod:`monitor.core.redaction`, named here too) are how a URL,
any text and a JSON-like value are written down: with every secret in them hidden.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote, urlsplit

from monitor.core.redaction import HIDDEN as HIDDEN
from monitor.core.redaction import SECRET_QUERY_KEYS as SECRET_QUERY_KEYS
from monitor.core.redaction import is_secret as is_secret
from monitor.core.redaction import redact as redact
from monitor.core.redaction import redact_text as redact_text
from monitor.core.redaction import redacted as redacted

DEFAULT_PORTS = {"http": 80, "https": 443}


def split(url: str) -> SplitResult | None:
    """The parts of an http(s) URL, or None when it is not one a check may fetch."""
    if not isinstance(url, str) or any(c <= " " or c == "\\" for c in url):
        return None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return None
    if parts.scheme.lower() not in DEFAULT_PORTS or not parts.hostname:
        return None
    return parts


def origin(url: str) -> tuple[str, str, int] | None:
    """(scheme, host, port) of a URL, the default port filled in."""
    parts = split(url)
    if parts is None:
        return None
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").rstrip("."), parts.port or DEFAULT_PORTS[scheme]


def is_address(host: str) -> bool:
    """Whether ``host`` is an IP address (v4 or v6), not a name."""
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def has_userinfo(url: str) -> bool:
    parts = split(url)
    return parts is None or "@" in parts.netloc


def _segments(path: str) -> list[str]:
    return [unquote(s) for s in path.split("/")]


@dataclass(frozen=True)
class Prefix:
    """A URL prefix of ``agent.allow_urls``, compared by parts."""

    origin: tuple[str, str, int]
    path: str

    @classmethod
    def of(cls, url: str) -> Prefix | None:
        found, parts = origin(url), split(url)
        if found is None or parts is None or "@" in parts.netloc:
            return None
        return cls(found, parts.path.rstrip("/"))

    def admits(self, url: str) -> bool:
        parts = split(url)
        if parts is None or "@" in parts.netloc or origin(url) != self.origin:
            return False
        path = parts.path or "/"
        if any(s in (".", "..") for s in _segments(path)):
            return False
        return not self.path or path == self.path or path.startswith(self.path + "/")


def admitted(url: str, prefixes: list[str]) -> bool:
    """Whether any of ``prefixes`` (URLs) admits ``url``."""
    return any(p is not None and p.admits(url) for p in map(Prefix.of, prefixes))


def same_origin(a: str, b: str) -> bool:
    return origin(a) is not None and origin(a) == origin(b)
