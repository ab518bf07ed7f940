"""``status_pages:``, public read-only pages for customers: groups of targets, their state, 90 days of
uptime, incidents with their public notes, maintenance::

    status_pages:
      - slug: public                       # served at /status/public
        title: Example Inc. status
        logo: https://example.com/logo.png
        groups:
          - {name: Website, targets: [www, shop]}
          - {name: API, targets: [api]}

They show no actions, no tokens and no agent internals (``show_diagnosis: true`` adds the diagnosis of
each incident). The admin UI serves them under /status/; ``web.status_listen`` serves them alone on a
listener of their own, whether the admin UI is on or not.
"""

from __future__ import annotations

from pydantic import Field

from monitor.config.values import HttpUrl, Strict


class StatusGroup(Strict):
    name: str = Field(min_length=1, max_length=200)
    targets: list[str] = Field(min_length=1, max_length=1000)


class StatusPage(Strict):
    slug: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")
    title: str = Field(min_length=1, max_length=200)
    logo: HttpUrl | None = None
    description: str = Field(default="", max_length=2000)
    groups: list[StatusGroup] = Field(min_length=1, max_length=100)
    show_diagnosis: bool = False

    @property
    def targets(self) -> list[str]:
        """Every target the page shows, once, in the order of its groups."""
        return list(dict.fromkeys(name for group in self.groups for name in group.targets))
