"""``status_pages:``, public read-only pages for customers: groups of targets, their state, 90 days of
uptime, incidents with their public notes, maintenance::

    status_pages:
      - slug: public                       # served at /status/public
        title: Example Inc. status
        logo: https://example.com/logo.png
        groups:
          - {name: Website, targets: [www, shop]}
          - {name: API, targets: [api]}

They show no actions, no tokens and no agent internals (``show_diagnosis: true`` adds each incident's root
cause in plain words, "the application answers with 5xx error statuses": never the diagnosis itself, which
names hosts, versions and past fixes). The admin UI serves them under /status/; ``web.status_listen`` serves
them alone on a listener of their own, whether the admin UI is on or not.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pydantic import Field, field_validator

from monitor.config.addresses import DNS_NAME
from monitor.config.errors import shown
from monitor.config.values import HttpUrl, Strict
from monitor.core import urls

SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_LOGO = 2048  # characters of a logo's URL: it goes into every page and its Content-Security-Policy


class StatusGroup(Strict):
    name: str = Field(min_length=1, max_length=200)
    targets: list[str] = Field(min_length=1, max_length=1000)


class StatusPage(Strict):
    slug: str
    title: str = Field(min_length=1, max_length=200)
    logo: HttpUrl | None = None
    description: str = Field(default="", max_length=2000)
    groups: list[StatusGroup] = Field(min_length=1, max_length=100)
    show_diagnosis: bool = False

    @field_validator("slug")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not SLUG.match(value):
            raise ValueError(
                f"{shown(value)} is not a slug: lowercase letters, digits, - and _, up to 64, beginning with a letter or digit"
            )
        return value

    @field_validator("logo")
    @classmethod
    def _plain_logo(cls, value: str | None) -> str | None:
        """A logo's origin goes into the page's Content-Security-Policy: a plain host, no secrets, short."""
        if value is None:
            return value
        if len(value) > MAX_LOGO:
            raise ValueError(f"a logo URL of more than {MAX_LOGO} characters ({len(value)}): host the image nearer")
        parts = urlsplit(value)
        if parts.username is not None or parts.password is not None:
            raise ValueError("a logo URL with a user name or password: every visitor's browser would see it")
        host = parts.hostname or ""
        if not (DNS_NAME.match(host) or urls.is_address(host)):
            raise ValueError(f"{shown(host)} is not a host name (letters, digits, - and ., or an IP address)")
        return value

    @property
    def targets(self) -> list[str]:
        """Every target the page shows, once, in the order of its groups."""
        return list(dict.fromkeys(name for group in self.groups for name in group.targets))
