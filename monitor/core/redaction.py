"""Redaction: the one way a secret is hidden before text leaves the process (an alert, a page, the API, MCP,
an export, the CLI).

``redact(url)`` writes a URL with its userinfo and the values of secret query keys as ``***``. ``redact_text``
hides, in any text, each of these, in this order:

- the values the config substituted from ``${VAR}`` that are secrets (:func:`monitor.core.catalogue.remember`);
- a PEM private key's body;
- the userinfo and secret query values of every URL, of any scheme (``postgres://app:pw@db``);
- the value of an element named for a secret (``<password>...</password>``);
- a ``Bearer``/``Basic``/``Token`` credential;
- the value of a secret key written ``key=value``, ``key: value`` or ``"key": "value"``: a quoted value whole
  (``password: 'a b c'``), an ``Authorization`` header's to the end of its line, each cookie's in a
  ``Cookie``/``Set-Cookie`` header, and a password after a user name (``creds=admin:pw``) with the name kept;
- a password written after its word (``pass hunter2``, ``the password is hunter2``): a plain word there is prose
  and stays ("password authentication failed");
- every token of the catalogue (:mod:`monitor.core.catalogue`: AWS, GitHub, GitLab, Slack, a JWT, ...);
- then the same again in each stretch of text that was URL-, JSON- or HTML-escaped (``p%61ssword%3D...``),
  written out decoded where a secret was hidden in it.

It is idempotent, and JSON text stays JSON. ``redacted`` applies it to every string of a JSON-like value. Each
rule is tried only where a word that could start it is (a scan of a 4 KB body by every pattern would cost more than
a millisecond): ``bench/redaction.py`` measures it.
"""

from __future__ import annotations

import functools
import html
import re
from typing import Any
from urllib.parse import unquote

from monitor.core import catalogue
from monitor.core.catalogue import HIDDEN as HIDDEN
from monitor.core.catalogue import SECRET_ENDINGS, SECRET_WORDS
from monitor.core.catalogue import SECRET_QUERY_KEYS as SECRET_QUERY_KEYS

FRAGMENTS = ("pass", "pw", "secret", "token", "key", "sig", "cred", "auth", "sess", "sid", "code", "cookie", "amz")
SPOKEN_FRAGMENTS = ("pass", "pw", "cred", "secret", "token", "key")
USER_AND_PASSWORD = frozenset({"creds", "cred", "credential", "credentials", "login", "auth", "basicauth", "userinfo"})
COOKIE_ATTRIBUTES = frozenset({"path", "domain", "expires", "max-age", "samesite", "secure", "httponly", "priority", "version"})
_URL_REST = re.compile(r"[^\s'\"<>`]+")  # after a scheme's :// (postgres://app:pw@db, redis://:pw@)
_CREDENTIAL = re.compile(r"(?<!\w)(bearer|basic|token)(\s+)([^\s\"'<>,;\\]{8,})", re.IGNORECASE)
_PAIR = re.compile(
    r"(?<![\w.-])(?P<key>[A-Za-z_][\w.-]*+)(?P<close>[\"']?)(?P<sep>[ \t]*[=:][ \t]*)(?P<open>[\"']?)"
    r"(?=(?P<value>(?:(?i:bearer|basic|digest|token)\s+)?[^\s\"'&,;\\<>()\[\]{}]+))"
)
_SPOKEN = re.compile(
    r"(?<![\w.-])(?P<key>pass(?:word|wd|phrase)?|pwd|pw|creds?|credentials|secret|token|api[_-]?key)"
    r"(?P<sep>\s+(?:(?:is|was)\s+)?)(?P<value>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s\"'<>]+)",
    re.IGNORECASE,
)
_XML = re.compile(r"<(?P<tag>[A-Za-z_][\w.:-]*)(?:\s[^<>]*)?>(?P<value>[^<]+)</(?P=tag)\s*>")
_QUOTED = {q: re.compile(rf"(?:[^{q}\\\n]|\\.){{0,4096}}{q}") for q in "\"'"}  # to the closing quote, past \" and \\
_COOKIE = re.compile(r"(?P<name>[^=;,\s\"']+)=(?P<value>[^;,\s\"']*)")
_ESCAPED = re.compile(r"%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|&(?:#[0-9]{1,7}|#x[0-9A-Fa-f]{1,6}|[A-Za-z]{2,8});")
_APART = "\n<>\n"  # between runs redacted together: no rule reads a value across a line break and a <
_JSON_ESCAPE = re.compile(r"\\u([0-9A-Fa-f]{4})")
_RUNS = re.compile(r"([\s\"'<>]+|&(?![#A-Za-z0-9]{2,8};))")  # a query's & too: each pair is decoded alone
_TRAILING = ".,;:!?)]}"


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
    """A key whose value is a secret: a known key (``api_key``), or one with a secret word in it (``pwd``,
    ``db_password``, ``X-Auth-Token``, ``sessionId``), two words that make one (``X-Api-Key``), or a word that ends
    in one (``csrftoken``, ``JSESSIONID``)."""
    return _is_secret(key, secret_keys)


@functools.lru_cache(maxsize=4096)
def _is_secret(key: str, secret_keys: frozenset[str]) -> bool:
    """:func:`is_secret`, remembered: a page or a JSON body names the same few keys again and again."""
    lowered = key.lower()
    if _secret_parts(secret_keys).search(_squashed(lowered)) is None:
        return False
    words = _words(key)
    pairs = [a + b for a, b in zip(words, words[1:], strict=False)]
    return lowered in secret_keys or any(word in SECRET_WORDS or word.endswith(SECRET_ENDINGS) for word in words + pairs)


def _words(key: str) -> list[str]:
    return re.split(r"[^a-z0-9]+|(?<=[a-z])(?=[0-9])", re.sub(r"([a-z])([A-Z])", r"\1_\2", key).lower())


def redact_text(text: str, secret_keys: frozenset[str] = SECRET_QUERY_KEYS) -> str:
    """``text`` with every secret it writes hidden (the module's docstring says which). Idempotent; JSON text
    stays JSON."""
    if len(text) < 4:
        return text
    text = _redact_plain(text, secret_keys)
    if "%" in text or "\\u" in text or "&" in text:
        decoded = _redact_escaped(text, secret_keys)
        if decoded != text:  # a run written out decoded is read again beside the words around it
            text = _redact_plain(decoded, secret_keys)
    return text


def _redact_plain(text: str, secret_keys: frozenset[str]) -> str:
    text = catalogue.hide_private_keys(catalogue.hide_remembered(text))
    if "://" in text:
        text = _hide_urls(text, secret_keys)
    lowered = _lowered(text)
    if "</" in text and _may_name_a_secret(lowered, secret_keys):
        text = _XML.sub(_hide_element, text)
        lowered = _lowered(text)
    if "bearer" in lowered or "basic" in lowered or "token" in lowered:
        text = _hide_credentials(text, lowered)
        lowered = _lowered(text)
    if _may_name_a_secret(lowered, secret_keys):
        if "=" in text or ":" in text:
            text = _hide_pairs(text, lowered, secret_keys)
            lowered = _lowered(text)
        if any(fragment in lowered for fragment in SPOKEN_FRAGMENTS):
            text = _hide_all_spoken(text, lowered)
    return catalogue.hide_tokens(text)


def _lowered(text: str) -> str:
    """``text`` in lower case, each character where it was (``str.lower`` makes some characters two)."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def _word_starts(text: str, lowered: str, words: tuple[str, ...]) -> list[int]:
    """Where a word of ``text`` that holds one of ``words`` starts (a word: letters, digits, ``_.-``), in order.
    Patterns are tried there only: a scan of the whole text by each would cost more than all the rest."""
    starts = set()
    for word in words:
        i = lowered.find(word)
        while i >= 0:
            j = i
            while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_.-"):
                j -= 1
            starts.add(j)
            i = lowered.find(word, i + len(word))
    return sorted(starts)


def _hide_urls(text: str, secret_keys: frozenset[str]) -> str:
    """Every URL in ``text``, of any scheme, as :func:`redact` writes it."""
    kept, at, i = [], 0, text.find("://")
    while i >= 0:
        start = i
        while start > at and text[start - 1].isascii() and (text[start - 1].isalnum() or text[start - 1] in "+.-"):
            start -= 1
        found = _URL_REST.match(text, i + 3)
        end = found.end() if found else i + 3
        kept += [text[at:start], redact(text[start:end], secret_keys)]
        at, i = end, text.find("://", end)
    return "".join(kept) + text[at:]


def _hide_credentials(text: str, lowered: str) -> str:
    """``Bearer``, ``Basic`` and ``Token`` credentials hidden; a word of prose after one is left."""
    kept, at = [], 0
    for start in _word_starts(text, lowered, ("bearer", "basic", "token")):
        match = _CREDENTIAL.match(text, start)
        if match is None or start < at or _plain_word(match[3]) or HIDDEN in match[3]:
            continue
        kept += [text[at : match.start(3)], HIDDEN]
        at = match.end()
    return "".join(kept) + text[at:]


def _hide_all_spoken(text: str, lowered: str) -> str:
    kept, at = [], 0
    for start in _word_starts(text, lowered, SPOKEN_FRAGMENTS):
        match = _SPOKEN.match(text, start)
        hidden = _hide_spoken(match) if match is not None and start >= at else None
        if match is None or hidden is None or hidden == match.group(0):
            continue  # a word of prose after it may be the next one's key: "pw pass hunter2"
        kept += [text[at:start], hidden]
        at = match.end()
    return "".join(kept) + text[at:]


def _redact_escaped(text: str, secret_keys: frozenset[str]) -> str:
    """Each run of text (between spaces, quotes, angle brackets and a query's ``&``) that is escaped, decoded and
    redacted; written decoded where that hid something, as it was where it did not. The runs are decoded and
    redacted together, one to a line and kept apart (:data:`_APART`), or one by one where that came out of one."""
    runs = _RUNS.split(text)
    escaped = [i for i in range(0, len(runs), 2) if _ESCAPED.search(runs[i])]
    plain = _unescaped("\n".join(runs[i] for i in escaped)).split("\n")
    if len(plain) != len(escaped):
        plain = [_unescaped(runs[i]) for i in escaped]
    hidden = _redact_plain(_APART.join(plain), secret_keys).split(_APART)
    if len(hidden) != len(plain):
        hidden = [_redact_plain(run, secret_keys) for run in plain]
    for i, before, after in zip(escaped, plain, hidden, strict=True):
        if after != before:
            runs[i] = after
    return "".join(runs)


def _unescaped(run: str) -> str:
    for _ in range(3):  # %2570 is %70 is p
        if "\\u" in run:
            run = _JSON_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), run)
        if "%" in run:
            run = unquote(run)
        if "&" in run:
            run = html.unescape(run)
        if not _ESCAPED.search(run):
            break
    return run


@functools.lru_cache(maxsize=8)
def _secret_parts(secret_keys: frozenset[str]) -> re.Pattern[str]:
    words = SECRET_WORDS | secret_keys | {"cookie"}
    return re.compile("|".join(sorted(re.escape(_squashed(word)) for word in words)))


@functools.lru_cache(maxsize=8)
def _fragments(secret_keys: frozenset[str]) -> tuple[str, ...]:
    """Strings one of which is in every secret word and key: a text with none of them names no secret (a few
    substring searches cost less than one scan of a pattern)."""
    found = list(FRAGMENTS)
    for word in sorted(SECRET_WORDS | secret_keys | {"cookie"}):
        if not any(fragment in _squashed(word) for fragment in found):
            found.append(_squashed(word))
    return tuple(found)


def _squashed(text: str) -> str:
    """``text`` less the separators a key may have inside it (``x-api_key.v2``): its words run together."""
    return text.replace("-", "").replace("_", "").replace(".", "")


def _may_name_a_secret(lowered: str, secret_keys: frozenset[str]) -> bool:
    """Whether some key in the text could be secret (:func:`is_secret`): most texts name none, and are left
    unscanned (a page writes thousands of values)."""
    return any(fragment in lowered for fragment in _fragments(secret_keys))


def _plain_word(value: str) -> bool:
    """A word of prose after "basic" or "password" ("Basic authentication"), not a credential: letters, lower case
    after the first."""
    return value.isalpha() and value[1:].islower()


def _hide_element(match: re.Match[str]) -> str:
    value = match["value"]
    if value.strip() in ("", HIDDEN) or not is_secret(match["tag"].rpartition(":")[2]):
        return match.group(0)
    start, end = match.span("value")
    whole = match.group(0)
    return whole[: start - match.start()] + HIDDEN + whole[end - match.start() :]


def _hide_spoken(match: re.Match[str]) -> str:
    """``pass hunter2`` -> ``pass ***``; ``creds admin:pw`` keeps ``admin:``; a plain word after it is prose."""
    value = match["value"]
    if value[0] in "\"'":
        hidden = f"{value[0]}{HIDDEN}{value[0]}" if len(value) > 2 else value
        return match["key"] + match["sep"] + hidden
    core = value.rstrip(_TRAILING) or value
    if len(core) < 4 or _plain_word(core) or HIDDEN in core:
        return match.group(0)
    return match["key"] + match["sep"] + _hidden_value(match["key"], core) + value[len(core) :]


def _hidden_value(key: str, value: str) -> str:
    """``***``, or ``user:***`` for a key that holds a user and a password."""
    user, colon, _password = value.partition(":")
    if colon and user and _squashed(key.lower()) in USER_AND_PASSWORD:
        return f"{user}:{HIDDEN}"
    return HIDDEN


def _hide_pairs(text: str, lowered: str, secret_keys: frozenset[str]) -> str:
    """The values of secret keys hidden. A match ends before its value, so a pair inside another's value
    (``"detail": "password=x"``) is found too."""
    kept, at = [], 0
    for start in _word_starts(text, lowered, _fragments(secret_keys)):
        match = _PAIR.match(text, start)
        if match is None:
            continue
        key = match["key"]
        kind = _kind(key, secret_keys)
        if match.start() < at or kind is None or (match["close"] and not match["open"]):
            continue  # a quoted key before a bare value: JSON's number, true or null
        end = _value_end(text, match, kind)
        value = text[match.end() : end]
        if value == HIDDEN:
            continue
        kept += [text[at : match.end()], _cookies(value) if kind == "cookie" else _hidden_value(key, value)]
        at = end
    return "".join(kept) + text[at:]


def _kind(key: str, secret_keys: frozenset[str]) -> str | None:
    """How a key's value is hidden: ``line`` (an Authorization header: all of it), ``cookie`` (each cookie's
    value), ``value``; None when it is no secret."""
    lowered = key.lower()
    if lowered in ("authorization", "proxy-authorization"):
        return "line"
    if lowered in ("cookie", "set-cookie"):
        return "cookie"
    return "value" if is_secret(key, secret_keys) else None


def _value_end(text: str, match: re.Match[str], kind: str) -> int:
    """Where the value after ``match`` ends: its closing quote, the end of its line, or its last character."""
    start, quote = match.end(), match["open"]
    if quote:
        closed = _QUOTED[quote].match(text, start)
        if closed is not None:
            return closed.end() - 1
    elif kind != "value":
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        return len(text[start:end].rstrip()) + start
    return start + len(match["value"])


def _cookies(value: str) -> str:
    """A Cookie or Set-Cookie header's value with each cookie's value hidden and its name, and its attributes, kept."""
    return _COOKIE.sub(lambda m: m.group(0) if m["name"].lower() in COOKIE_ATTRIBUTES or not m["value"] else f"{m['name']}={HIDDEN}", value)


def redacted(value: Any) -> Any:
    """``value`` (what JSON holds: dicts, lists, strings, numbers) with :func:`redact_text` applied to every string."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: redacted(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(item) for item in value]
    return value
