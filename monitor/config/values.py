"""The value types every section uses: durations, http(s) URLs, the words YAML would make booleans, request
headers, and :class:`Strict`, the frozen base of every config model."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict

from monitor.config.errors import shown

MAX_SECONDS = 3650 * 86400.0

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


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


def parse_wait(value: Any) -> float:
    """A duration that may also be none at all: ``0s`` (or ``0``) is 0.0, "do not wait"."""
    if not isinstance(value, bool) and isinstance(value, (int, float, str)):
        match = _DURATION.match(str(value))
        if match is not None and float(match.group(1)) == 0:
            return 0.0
    return parse_duration(value)


Wait = Annotated[float, BeforeValidator(parse_wait)]  # group_window: 0s, "send at once", is a choice


_SPACE = re.compile(r"[\s\x1c-\x1f]")  # what str.isspace() finds, in one pass


# the common case, a plain ASCII URL, without urlsplit: a fleet of 50,000 targets spent a second there
_PLAIN_URL = re.compile(r"https?://[A-Za-z0-9.-]*[A-Za-z0-9](?::(\d{1,5}))?(?:[/?#][!-~]*)?")


def http_url(value: str) -> str:
    """``value`` if it is an http:// or https:// URL with a host and a port in range, else ValueError."""
    from urllib.parse import urlsplit

    plain = _PLAIN_URL.fullmatch(value)
    if plain is not None and (plain.group(1) is None or 0 < int(plain.group(1)) <= 65535):
        return value
    try:
        parts = urlsplit(value)
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    from monitor.core.urls import redact  # an error message is logged: it never shows a URL's secrets

    if parts is None or parts.scheme not in ("http", "https") or not host or _SPACE.search(value):
        raise ValueError(f"{shown(redact(value))} is not an http:// or https:// URL")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port <= 65535:
        raise ValueError(f"port {parts.netloc.rpartition(':')[2][:20]} is out of range (1 to 65535) in {shown(redact(value))}")
    return value if value.isascii() else ascii_url(value)


def ascii_url(value: str) -> str:
    """An internationalized URL as it goes on the wire: the host in IDNA, the rest percent-encoded (the HTTP
    client takes nothing else)."""
    import httpx

    from monitor.core.urls import redact

    try:
        return str(httpx.URL(value))
    except httpx.InvalidURL:
        raise ValueError(
            f"{shown(redact(value))} is not an http:// or https:// URL (its host is not a valid internationalized name)"
        ) from None


HttpUrl = Annotated[str, AfterValidator(http_url)]


def cores() -> int:
    """The cores this process may run on: its CPU affinity (which a container's cpuset narrows), lowered to its
    cgroup's CPU quota (a container's ``--cpus``, a pod's CPU limit): :mod:`monitor.core.cpus`."""
    from monitor.core.cpus import cpus

    return cpus()


MAX_WORKERS = 256


def parse_workers(value: Any) -> Any:
    """``auto`` -> at most one checking process per core (and at most ``MAX_WORKERS``, so that the default holds on
    any machine; the daemon starts as many as the fleet needs, ``Config.workers_by_demand``); a number stays as it
    is (its bounds are the field's)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return min(cores(), MAX_WORKERS)
    if isinstance(value, bool) or (isinstance(value, str) and not value.strip().isdigit()):
        raise ValueError(f"{shown(value)} is not a number of workers: write auto (up to one per core) or a number like 4")
    return value


Workers = Annotated[int, BeforeValidator(parse_workers)]


def yaml_boolean(value: Any, words: str, true_means: str | None) -> Any:
    """A bare YAML boolean where a word is expected: false is off, true is ``true_means`` or an error."""
    if value is False:
        return "off"
    if value is True:
        if true_means is None:
            raise ValueError(f"true is not allowed here: write {words}")
        return true_means
    return value


class Strict(BaseModel):
    """A config model: unknown fields are errors, and once validated it never changes (a reload builds a new
    one and swaps it whole, see :mod:`monitor.config.holder`)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False, frozen=True)


def settle(model: BaseModel, **values: Any) -> None:
    """Fill in fields an after-validator derives (a default that depends on other fields): the one write to a
    frozen model, while it is still being validated and nobody else holds it."""
    model.__dict__.update(values)
    model.__pydantic_fields_set__.update(values)


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


def _header_fields(value: dict[str, str]) -> dict[str, str]:
    """Header names that are HTTP tokens, values with no line break or NUL: one that ends the header (a value from
    an environment variable ending in a newline) would validate and then fail every request."""
    for name, text in value.items():
        if not _HEADER_NAME.fullmatch(name):
            raise ValueError(f"{shown(name)} is not a header name (letters, digits and - . _ ! # $ % & ' * + ^ ` | ~)")
        if any(c in text for c in "\r\n\0"):
            raise ValueError(
                f"header {name}: its value holds a line break or NUL (from an environment variable "
                "ending in a newline?): it would end the header"
            )
    return value


Headers = Annotated[dict[str, str], AfterValidator(_header_fields)]
