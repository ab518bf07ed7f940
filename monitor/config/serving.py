"""``metrics:`` and ``web:``, the daemon's two listeners: /metrics with /healthz and pings, and the web UI."""

from __future__ import annotations

import hmac
import re
from typing import Self

from pydantic import Field, field_validator, model_validator

from monitor.config.errors import ConfigError, shown
from monitor.config.values import Duration, HttpUrl, Strict, settle

TOKEN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
HOST_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*\.?")


class MetricsConfig(Strict):
    """The metrics listener: ``listen: HOST:PORT``, as ``web.listen`` is written, or ``host`` and ``port``."""

    enabled: bool = True
    listen: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=9108, ge=0, le=65535)
    # each target's latency histogram: 15 of a target's 20-odd lines in a scrape; off, latency is by kind and phase
    target_histograms: bool = True

    @field_validator("listen")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is not None and address(value) is None:
            raise ValueError(f"{shown(value)} is not host:port, e.g. 127.0.0.1:9108")
        return value

    @model_validator(mode="after")
    def _listening(self) -> Self:
        """``listen`` names the host and port; given with other ones, which are meant is not known."""
        if self.listen is None:
            return self
        host, port = address(self.listen) or ("", 0)
        named = {"host": host, "port": port}
        other = [
            f"{name} {getattr(self, name)}"
            for name, value in named.items()
            if name in self.model_fields_set and getattr(self, name) != value
        ]
        if other:
            raise ValueError(f"listen {shown(self.listen)} and {' and '.join(other)} disagree: give listen (host:port), or host and port")
        settle(self, **named)
        return self

    def listening_on(self, listen: str) -> MetricsConfig:
        """These settings, enabled and listening on ``listen`` (``HOST:PORT``, ``[::]:PORT`` or ``:PORT``)."""
        found = address(listen)
        if found is None:
            raise ConfigError(f"metrics listen address {shown(listen)}: write it as HOST:PORT, e.g. 0.0.0.0:9108")
        return self.model_copy(update={"enabled": True, "listen": listen, "host": found[0], "port": found[1]})


def address(listen: str) -> tuple[str, int] | None:
    """The host and port of ``HOST:PORT``, ``[::]:PORT`` or ``:PORT`` (every address); None if it is none of them."""
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        return None
    return host.strip("[]") or "0.0.0.0", int(port)


def unguessable(value: str, field: str) -> str:
    """A token is a secret typed into a form: spaces or one character repeated are no secret."""
    if any(c.isspace() for c in value):
        raise ValueError(f"{field} has spaces in it: make one with `monitor token`")
    if len(set(value)) < 8:
        raise ValueError(f"{field} has only {len(set(value))} different characters: easy to guess; make one with `monitor token`")
    period = next((n for n in range(1, len(value) // 2 + 1) if value == (value[:n] * len(value))[: len(value)]), None)
    if period is not None:
        raise ValueError(f"{field} repeats {value[:period]!r}: easy to guess; make one with `monitor token`")
    return value


class WebConfig(Strict):
    """The web UI on the daemon's own listener (off unless enabled; ``monitor web`` serves it alone)."""

    enabled: bool = False
    listen: str = "127.0.0.1:9110"
    refresh: Duration = Field(default=10.0, gt=0)  # how often the overview reloads its data
    # With a token, incident pages offer acknowledge, resolve with a note and silence, to whoever types it.
    token: str | None = Field(default=None, min_length=16)
    # More tokens for the admin pages and API (name: token): each change to the config is logged with its token's name.
    tokens: dict[str, str] = Field(default_factory=dict)
    # The status pages (status_pages:) alone on a listener of their own, safe to expose, with or without the UI.
    status_listen: str | None = None
    # Names the UI answers to besides localhost, IP addresses and web.listen's host ("*": any name).
    allowed_hosts: tuple[str, ...] = ()
    # The UI's address as people reach it (behind a proxy, say): alerts link to each incident's page there.
    external_url: HttpUrl | None = None

    @field_validator("token")
    @classmethod
    def _guessable(cls, value: str | None) -> str | None:
        return value if value is None else unguessable(value, "web.token")

    @field_validator("tokens")
    @classmethod
    def _named(cls, value: dict[str, str]) -> dict[str, str]:
        for name, token in value.items():
            if not TOKEN_NAME.fullmatch(name) or name == "token":
                raise ValueError(f"{shown(name)} is not a token's name (letters, digits, . _ -; not 'token', which is web.token's)")
            if len(token) < 16:
                raise ValueError(f"web.tokens.{name} has {len(token)} characters: at least 16; make one with `monitor token`")
            unguessable(token, f"web.tokens.{name}")
        return value

    def token_name(self, offered: str) -> str | None:
        """Whose token ``offered`` is: a name of ``tokens``, or ``token`` for ``web.token``; None for no token of these."""
        named = {**({"token": self.token} if self.token else {}), **self.tokens}
        found = [name for name, token in named.items() if hmac.compare_digest(offered.encode(), token.encode())]
        return found[0] if found else None

    @field_validator("allowed_hosts")
    @classmethod
    def _names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if name != "*" and not HOST_NAME.fullmatch(name):
                raise ValueError(f"{shown(name)} is not a host name (no scheme, port or path: monitor.example.org)")
        return value

    @field_validator("listen", "status_listen")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is None:
            return value
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

    def status_address(self) -> tuple[str, int] | None:
        """Where the status pages listen alone (``status_listen``), as (host, port), or None."""
        if self.status_listen is None:
            return None
        host, _, port = self.status_listen.rpartition(":")
        return host.strip("[]"), int(port)
