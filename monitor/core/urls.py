"""URLs: what the agent may reach, and how a URL may be written down.

A URL is compared as parsed parts, never as a string: ``Prefix("http://127.0.0.1:80/api")``
admits the same scheme, host and port, and a path equal to ``/api`` or under
``/api/``. A URL with userinfo (``http://a@b/``), an unparsable port, or dot
segments in its path is admitted by no prefix.

``redact(url)`` is the one way a URL is written (to the database, a log, a
prompt, an alert): userinfo and the values of secret query keys become ``***``.
``redact_text`` does the same to every URL inside a text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import SplitResult, unquote, urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
SECRET_QUERY_KEYS = frozenset({
    "access_token", "api_key", "apikey", "auth", "authorization", "client_secret", "code", "id_token", "key",
    "pass", "passwd", "password", "private_token", "refresh_token", "secret", "sig", "signature", "token",
    "x-amz-credential", "x-amz-security-token", "x-amz-signature",
})
SECRET_WORDS = frozenset({"password", "passwd", "pwd", "pass", "secret", "token", "apikey", "signature", "sig",
                          "credential", "credentials", "auth", "session", "sid"})  # a word of a key such as db_pwd
HIDDEN = "***"
_URL_IN_TEXT = re.compile(r"https?://[^\s'\"<>`]+", re.IGNORECASE)


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


def redact(url: str, secret_keys: frozenset[str] = SECRET_QUERY_KEYS) -> str:
    """The URL with its userinfo and the values of secret query keys replaced by ``***``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    if "@" in authority:
        authority = HIDDEN + "@" + authority.rsplit("@", 1)[1]
    head, qmark, query = tail.partition("?")
    if qmark:
        query, hash_, fragment = query.partition("#")
        pairs = [_hide(pair, secret_keys) for pair in query.split("&")]
        tail = f"{head}?{'&'.join(pairs)}{hash_}{fragment}"
    return f"{scheme}://{authority}{tail}"


def _hide(pair: str, secret_keys: frozenset[str]) -> str:
    key, eq, _value = pair.partition("=")
    return f"{key}={HIDDEN}" if eq and is_secret(unquote(key), secret_keys) else pair


def is_secret(key: str, secret_keys: frozenset[str] = SECRET_QUERY_KEYS) -> bool:
    """A query key whose value is a secret: a known key (``api_key``), or one with a secret word in it
    (``pwd``, ``db_password``, ``X-Auth-Token``, ``sessionId``)."""
    lowered = key.lower()
    words = re.split(r"[^a-z0-9]+|(?<=[a-z])(?=[0-9])", re.sub(r"([a-z])([A-Z])", r"\1_\2", key).lower())
    return lowered in secret_keys or any(word in SECRET_WORDS for word in words)


def redact_text(text: str, secret_keys: frozenset[str] = SECRET_QUERY_KEYS) -> str:
    """Every http(s) URL in ``text``, redacted."""
    return _URL_IN_TEXT.sub(lambda m: redact(m.group(0), secret_keys), text) if "://" in text else text
