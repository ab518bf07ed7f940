"""URLs: what the agent may reach, and how a URL may be written down.

A URL is compared as parsed parts, never as a string: ``Prefix("http://127.0.0.1:80/api")``
admits the same scheme, host and port, and a path equal to ``/api`` or under
``/api/``. A URL with userinfo (``http://a@b/``), an unparsable port, or dot
segments in its path is admitted by no prefix.

``redact(url)`` is the one way a URL is written (to the database, a log, a
prompt, an alert): userinfo and the values of secret query keys become ``***``.
``redact_text`` is the one way any text leaves the process (an alert, a page, the API, an export): every
URL in it redacted, the userinfo of a URL of any scheme (``postgres://app:pw@db``), the value of a secret
key written ``key=value``, ``key: value`` or ``"key": "value"``, and a ``Bearer``/``Basic`` credential, hidden.
``redacted`` applies it to every string of a JSON-like value.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, unquote, urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
SECRET_QUERY_KEYS = frozenset(
    {
        "access_token",
        "api_key",
        "apikey",
        "auth",
        "authorization",
        "client_secret",
        "code",
        "id_token",
        "key",
        "pass",
        "passwd",
        "password",
        "private_token",
        "refresh_token",
        "secret",
        "sig",
        "signature",
        "token",
        "x-amz-credential",
        "x-amz-security-token",
        "x-amz-signature",
    }
)
SECRET_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "pass",
        "secret",
        "token",
        "apikey",
        "signature",
        "sig",
        "credential",
        "credentials",
        "auth",
        "session",
        "sid",
    }
)  # a word of a key such as db_pwd
HIDDEN = "***"
_URL_IN_TEXT = re.compile(r"https?://[^\s'\"<>`]+", re.IGNORECASE)
_USERINFO = re.compile(r"\b([a-z][a-z0-9+.-]*://)[^\s/@'\"<>`]+@", re.IGNORECASE)  # postgres://app:pw@, redis://:pw@
_CREDENTIAL = re.compile(r"\b(bearer|basic)(\s+)([\w.~+/-]{8,}=*)", re.IGNORECASE)
_PAIR = re.compile(
    r"(?<![\w.-])(?P<key>[a-z_][\w.-]*+)(?P<close>[\"']?)(?P<sep>\s*[=:]\s*)(?P<open>[\"']?)"
    r"(?=(?P<value>(?:(?:bearer|basic|digest)\s+)?[^\s\"'&,;\\<>()\[\]{}]+))",
    re.IGNORECASE,
)


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
    (``pwd``, ``db_password``, ``X-Auth-Token``, ``sessionId``), or two words that make one (``X-Api-Key``)."""
    lowered = key.lower()
    if not _may_name_a_secret(lowered, secret_keys):
        return False
    words = re.split(r"[^a-z0-9]+|(?<=[a-z])(?=[0-9])", re.sub(r"([a-z])([A-Z])", r"\1_\2", key).lower())
    pairs = [a + b for a, b in zip(words, words[1:], strict=False)]
    return lowered in secret_keys or any(word in SECRET_WORDS for word in words + pairs)


def redact_text(text: str, secret_keys: frozenset[str] = SECRET_QUERY_KEYS) -> str:
    """``text`` with every secret it writes hidden: in its URLs (:func:`redact`), the userinfo of any scheme's,
    secret keys' values and ``Bearer``/``Basic`` credentials. Idempotent; JSON text stays JSON."""
    if "://" in text:
        text = _USERINFO.sub(rf"\1{HIDDEN}@", _URL_IN_TEXT.sub(lambda m: redact(m.group(0), secret_keys), text))
    lowered = text.lower()
    if "bearer" in lowered or "basic" in lowered:
        text = _CREDENTIAL.sub(lambda m: m.group(0) if _plain_word(m.group(3)) else f"{m.group(1)}{m.group(2)}{HIDDEN}", text)
    if ("=" in text or ":" in text) and _may_name_a_secret(lowered, secret_keys):
        text = _hide_pairs(text, secret_keys)
    return text


@functools.lru_cache(maxsize=8)
def _secret_parts(secret_keys: frozenset[str]) -> re.Pattern[str]:
    return re.compile("|".join(sorted(re.escape(_squashed(word)) for word in SECRET_WORDS | secret_keys)))


def _squashed(text: str) -> str:
    """``text`` less the separators a key may have inside it (``x-api_key.v2``): its words run together."""
    return text.replace("-", "").replace("_", "").replace(".", "")


def _may_name_a_secret(lowered: str, secret_keys: frozenset[str]) -> bool:
    """Whether some key in the text could be secret (:func:`is_secret`): most texts name none, and are left
    unscanned (a page writes thousands of values)."""
    return _secret_parts(secret_keys).search(_squashed(lowered)) is not None


def _plain_word(value: str) -> bool:
    """A word of prose after "basic" ("Basic authentication"), not a credential: letters, lower case after the first."""
    return value.isalpha() and value[1:].islower()


def _hide_pairs(text: str, secret_keys: frozenset[str]) -> str:
    """The values of secret keys hidden. A match ends before its value, so a pair inside another's value
    (``"detail": "password=x"``) is found too."""
    kept, at = [], 0
    for match in _PAIR.finditer(text):
        value = match["value"]
        if match.start() < at or value == HIDDEN or not is_secret(match["key"], secret_keys):
            continue
        if match["close"] and not match["open"]:
            continue  # a quoted key before a bare value: JSON's number, true or null
        kept += [text[at : match.end()], HIDDEN]
        at = match.end() + len(value)
    return "".join(kept) + text[at:]


def redacted(value: Any) -> Any:
    """``value`` (what JSON holds: dicts, lists, strings, numbers) with :func:`redact_text` applied to every string."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redacted(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(item) for item in value]
    return value
