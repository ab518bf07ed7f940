"""Components named in what a target answered: host names, ``host:port``, addresses, upstreams, clusters.

:func:`extract` reads text as an error message or a body is written, by syntax, not by a list of products:

- an address: a URL's host, ``host:port``, an IPv4 address, a DNS name under a known top-level domain
  (``pg-main.db.internal``, ``api.stripe.com``; ``config.yaml`` and ``psycopg2.OperationalError`` are
  not host names);
- a name that a word about infrastructure introduces: ``upstream "orders"``, ``cluster 'es-logs'``,
  ``"host": "pg-main"``, ``backend be_orders``, ``broker kafka-2``;
- a hyphenated or underscored name after ``on``, ``to``, ``at``, ``from``, ``via`` or ``behind``
  (``produce to orders.v1 on kafka-main failed``), before a word saying what kind of thing it is
  (``the fx-rates feed``, ``pg-main cluster``), or alone in brackets: ``(pg-main)``, ``[es-main]``.

Each is reduced to one :func:`canonical` name, so that ``pg-main.db.internal:5432``, ``pg-main`` and
``kafka-main-2.kafka.svc`` (a StatefulSet's member) meet the names a config or a person writes
(``pg-main``, ``kafka-main``). Loopback addresses name nothing: each machine has its own.
"""

from __future__ import annotations

import functools
import ipaddress
import re

MAX_COMPONENTS = 8  # per text: a page of links is no list of dependencies


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


TLDS = _words(
    "com net org io co ai app dev cloud info biz edu gov int mil eu us uk de fr nl be at ch se dk fi pl cz es pt it "
    "ie jp cn kr in au nz ca br mx ru ua za sg hk tw "
    "local localdomain internal intranet lan corp home private svc consul test example invalid arpa"
)
FILE_SUFFIXES = _words(
    "py pyc js mjs ts rb go rs java class jar php sh pl md txt log json yaml yml toml ini cfg conf xml html htm csv "
    "sql db sqlite lock pid sock tmp bak gz zip tar pem crt key so dll exe"
)
ENGLISH_PREFIXES = _words("re non pre post co multi self anti auto sub un de semi inter over under")
COMPOUNDS = _words(
    "read-only read-write write-ahead hot-standby in-memory on-disk in-sync out-of-sync up-to-date "
    "out-of-date built-in third-party end-to-end long-running high-availability keep-alive"
)  # English
CUES = (
    "upstream",
    "cluster",
    "host",
    "hostname",
    "host name",
    "server",
    "broker",
    "node",
    "service",
    "backend",
    "instance",
    "replica",
    "primary",
    "peer",
    "endpoint",
    "bucket",
    "queue",
    "datastore",
)

_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://(?:[^\s/@\"'<>]*@)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)", re.I)
_HOST_PORT = re.compile(r"(?<![\w.:/-])([A-Za-z0-9_][A-Za-z0-9_.-]*):(\d{2,5})(?![\w:]|\.\d)")
_DNS = re.compile(rf"(?<![\w.@/-])((?:{_LABEL}\.)+[A-Za-z]{{2,24}})\.?(?![\w-])")
_IPV4 = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?![\d]|\.\d)")
_CUED = re.compile(rf"\b(?:{'|'.join(sorted(CUES, key=len, reverse=True))})s?\b[\"']?\s*[:=]?\s*([\"'`]?)([A-Za-z][A-Za-z0-9_.-]*)\1", re.I)
_AFTER = re.compile(r"\b(?:on|to|at|from|via|behind)\s+([\"'`]?)([a-z][a-z0-9]*(?:[-_][a-z0-9]+)+)\1(?![\w.-])")
FIELDS = _words(
    "pid uid gid line col column code errno status exit port id offset size len count version attempt retry timeout"
)  # ``pid:4127`` is a field and its value, not a host and its port
KINDS = (*CUES, "feed", "cache", "database", "db", "api", "pool", "store", "stream", "proxy", "gateway")
_BEFORE = re.compile(rf"(?<![\w.-])([a-z][a-z0-9]*(?:[-_][a-z0-9]+)+)\s+(?:{'|'.join(KINDS)})s?\b")
_ENCLOSED = re.compile(r"[(\[]([a-z][a-z0-9]*(?:[-_][a-z0-9]+)+)[)\]]")
_MARKUP = re.compile(r"<!DOCTYPE[^>]*>|\bxmlns(?::\w+)?=\"[^\"]*\"|\bxsi:schemaLocation=\"[^\"]*\"", re.I)
_SPLIT = re.compile(r"[-_]")
_ADDRESS_CHARS = re.compile(r"[0-9A-Fa-f:.]+")
_CLIENT = re.compile(r"\b(?:client|remote|remote_addr|src|source|from)[\"']?\s*[:=]?\s*[\"'(]?$", re.I)  # who asked
_ORDINAL = re.compile(r"(.*-[a-z][a-z0-9]*)-\d{1,3}")  # kafka-main-2: a member of kafka-main


def extract(text: str) -> list[str]:
    """The components ``text`` names, as :func:`canonical` names, in the order they first appear."""
    text = _MARKUP.sub(" ", text or "")
    found: list[tuple[int, str]] = []
    for position, written in _candidates(text):
        name = canonical(written)
        if name:
            found.append((position, name))
    names = dict.fromkeys(name for _, name in sorted(found))
    return list(names)[:MAX_COMPONENTS]


def _candidates(text: str) -> list[tuple[int, str]]:
    """(where, name) of every address or named component in ``text``, before they are made canonical."""
    found = [(m.start(1), m.group(1).strip("[]")) for m in _URL.finditer(text)]
    found += [
        (m.start(), m.group(1))
        for m in _HOST_PORT.finditer(text)
        if _is_service_host(m.group(1), m.group(2)) and not _asked_by(text, m.start(), m.group(1))
    ]
    found += [(m.start(1), m.group(1)) for m in _DNS.finditer(text) if is_dns_name(m.group(1))]
    found += [
        (m.start(1), m.group(1)) for m in _IPV4.finditer(text) if _ip(m.group(1)) is not None and not _asked_by(text, m.start(), m.group(1))
    ]
    found += [(m.start(2), m.group(2)) for m in _CUED.finditer(text) if _named_by_cue(text, m)]
    found += [(m.start(2), m.group(2)) for m in _AFTER.finditer(text) if _distinctive(m.group(2))]
    found += [(m.start(1), m.group(1)) for m in _BEFORE.finditer(text) if _distinctive(m.group(1))]
    found += [(m.start(1), m.group(1)) for m in _ENCLOSED.finditer(text) if _distinctive(m.group(1))]
    return found


def _named_by_cue(text: str, match: re.Match[str]) -> bool:
    """A name after a word like ``upstream``: a service's name, or any quoted word (``upstream "payments"``);
    but a JSON key's value is often a state (``"queue": "pass"``), so there only a service's name counts."""
    name, quoted = match.group(2), bool(match.group(1))
    key = match.start() > 0 and text[match.start() - 1] in "\"'"
    return _distinctive(name.lower()) or (quoted and not key and len(name) > 1)


def _asked_by(text: str, at: int, host: str) -> bool:
    """Whether the address at ``at`` is a client's (``client: 10.1.2.3``), which the target depends on not at all."""
    return _ip(host) is not None and _CLIENT.search(text[max(0, at - 16) : at]) is not None


def is_dns_name(name: str) -> bool:
    """A host name by its form: lower-case labels (a host name is written so; a class name is not) under a
    known top-level domain that is no file's suffix."""
    labels = name.rstrip(".").split(".")
    return (
        len(labels) >= 2
        and name == name.lower()
        and labels[-1] in TLDS
        and labels[-1] not in FILE_SUFFIXES
        and not any(label.startswith("-") or label.endswith("-") for label in labels)
    )


def _is_service_host(host: str, port: str) -> bool:
    """``host`` in ``host:port``: an address, a host name, a service's name, or a plain word before a port
    above 1023 (``redis:6379``; ``status:503`` is a field and its value)."""
    if host.lower() in ("http", "https") or not 0 < int(port) < 65536:
        return False
    plain = re.fullmatch(r"[a-z]{2,}", host) is not None and host not in FIELDS
    return _ip(host) is not None or is_dns_name(host) or _distinctive(host) or (plain and int(port) > 1023)


def _distinctive(name: str) -> bool:
    """A service's name rather than a word: lower-case parts joined by ``-`` or ``_`` or ``.``, the first not
    an English prefix (``re-run``, ``non-blocking``), not a file (``db.py``), and not an address spelled out
    (``ip-10-0-4-12``)."""
    if not re.fullmatch(r"[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)+", name) or name.rsplit(".", 1)[-1] in FILE_SUFFIXES:
        return False
    parts = _SPLIT.split(name.split(".")[0])
    return parts[0] not in ENGLISH_PREFIXES and name not in COMPOUNDS and sum(part.isdigit() for part in parts) < 3


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    if not _ADDRESS_CHARS.fullmatch(text):  # most names: no exception raised and caught
        return None
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    return None if address.is_loopback or address.is_unspecified or address.is_multicast else address


def is_address(name: str) -> bool:
    return _ip(name) is not None


@functools.lru_cache(maxsize=4096)
def canonical(name: str) -> str | None:
    """One name for a component, however it was written; None for what names nothing (loopback).

    ``PG-Main.db.internal.:5432`` is ``pg-main``: a host name whose first label is a service's name is
    that name; ``kafka-main-2`` is ``kafka-main``; ``api.example.com`` stays whole (``api`` is a word).
    """
    name = name.strip().strip("[]").rstrip(".").lower()
    if _ip(name) is not None:  # an IPv6 address holds colons that are no port
        return name
    host = re.sub(r":\d{1,5}$", "", name).rstrip(".")
    if _ip(host) is not None:
        return host
    if not host or host == "localhost" or host.endswith(".localhost") or re.fullmatch(r"[\d.:]+", host):
        return None  # loopback, or an address no other machine shares
    first = host.split(".")[0]
    if "." in host and _distinctive(first):
        host = first
    ordinal = _ORDINAL.fullmatch(host)
    return (ordinal.group(1) if ordinal else host)[:253]


_WRITTEN = re.compile(r"(?<![\w.-])([a-z][a-z0-9_]*(?:[-.][a-z0-9_]+)+)(?![\w-])")
_VERSION = re.compile(r"v\d+(?:\.\d+)*")


def written(text: str) -> list[str]:
    """:func:`extract`'s components, and any other service's name ``text`` holds as it is written: lower-case
    parts joined by ``-`` or ``.`` (``pg-analytics``), which no header (``Content-Type``), ticket
    (``CHG-1866``), version (``v2.1``), code (``invalid_token``), English compound or code's package path
    (``java.lang``: dotted words without a dash are a host only under a top-level domain, which extract finds)."""
    found = extract(text)
    for match in _WRITTEN.finditer(_MARKUP.sub(" ", text or "")):
        name, as_written = canonical(match.group(1)), match.group(1)
        package = "." in as_written and not re.search(r"[-_]", as_written)  # java.lang, com.shop.cache
        if name and _distinctive(as_written) and not package and not _VERSION.fullmatch(name) and name not in found:
            found.append(name)
    return found


@functools.lru_cache(maxsize=1024)
def endpoints(text: str) -> frozenset[str]:
    """The hosts of the endpoints ``text`` names as ``host:port`` (a client's address and loopback aside), as written,
    lower-cased; a name with an underscore is no host name (RFC 1123) but a field and its count (Redis's
    connected_clients:12), and a plain word before a number is a field too (latency:2500, maxclients:10000)."""
    text = _MARKUP.sub(" ", text or "")
    hosts = (
        m.group(1).lower().rstrip(".")
        for m in _HOST_PORT.finditer(text)
        if "_" not in m.group(1)
        and (_ip(m.group(1)) is not None or is_dns_name(m.group(1)) or _distinctive(m.group(1)))
        and _is_service_host(m.group(1), m.group(2))
        and not _asked_by(text, m.start(), m.group(1))
    )
    return frozenset(host for host in hosts if canonical(host))


def _same_host(one: str, other: str) -> bool:
    """Whether two hosts may be one: the same address; or names whose first labels are one service (its members
    too: kafka-main-2 of kafka-main) and whose domains are the same, or one written short (``orders`` of
    ``orders.shop.svc.cluster.local``). inventory-svc.eu-west-1.internal is not inventory-svc.us-east-1.internal."""
    if is_address(one) or is_address(other):
        return one == other
    (first, _, domain), (second, _, domain2) = one.partition("."), other.partition(".")
    return canonical(first) == canonical(second) and (domain == domain2 or not domain or not domain2)


def elsewhere(answer: str, said: str) -> str:
    """``"failed at fraud-score.internal, here hsm-b.vault.dc2.internal"`` when a past failure (``said``) names endpoints and the answer
    names others, none of them the same host: a connection to another endpoint is another failure, in the
    same words ("connect to fraud-score.internal:8443 timed out", now to hsm-b.vault.dc2.internal:1500).
    Names compare with names and addresses with addresses: a name may resolve to any address."""
    here, there = endpoints(answer), endpoints(said)
    comparable = {is_address(host) for host in here} & {is_address(host) for host in there}
    if not comparable or any(_same_host(one, other) for one in here for other in there):
        return ""
    return f"failed at {', '.join(sorted(there)[:2])}, here {', '.join(sorted(here)[:2])}"


def matchable(name: str) -> bool:
    """Whether ``name`` may be looked for in free text: a service's name or an address, not a word that
    any sentence may hold (a target called ``api`` or ``orders``)."""
    return _distinctive(name) or is_address(name) or is_dns_name(name)


def named_in(text: str, names: list[str]) -> str | None:
    """The first of ``names`` that ``text`` holds as a whole name, or as a numbered member of it as
    :func:`canonical` reads one (``pg-main`` is not in ``pg-main-replica`` nor in ``xpg-main``; it is in
    ``pg-main.db.internal`` and ``pg-main-2``)."""
    lowered = (text or "").lower()
    for name in names:
        if re.search(rf"(?<![\w.-]){re.escape(name)}(?:-\d{{1,3}})?(?![\w-])", lowered):
            return name
    return None
