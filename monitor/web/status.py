"""What a status page shows, read from the store: the public's view of some targets, in plain dicts.

A status page (``status_pages:`` in the config) shows its groups of targets, each with its state now and
a bar a day for 90 days, the incidents of those targets with their public notes, and the maintenance
in force or coming. It shows no summaries, notes, addresses, results or agent runs: only what a
customer may read (with ``show_diagnosis``, each incident's root cause in plain words; never the diagnosis,
which names hosts, versions and past fixes). Its reads are bounded: uptime comes from
the hourly counts (24 rows a day per target), and at most ``INCIDENTS_SHOWN`` incidents. Days that are
over do not change, so they are read once every ``PAST_DAYS_KEPT`` seconds; each request reads today's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from markupsafe import Markup

from monitor.config import StatusPage
from monitor.core.causes import ROOT_CAUSES
from monitor.core.results import Latest
from monitor.core.state import PUBLIC
from monitor.store import StoreView
from monitor.web.pages import Pages

DAY = 86400
DAYS = 90  # the uptime bars
INCIDENTS_SHOWN = 30
UPCOMING = 7 * DAY  # how far ahead maintenance is announced
UNITS = ((DAY, "d"), (3600, "h"), (60, "min"), (1, "s"))  # of a duration, largest first
PAST_DAYS_KEPT = 600.0  # seconds the days before today are kept (an import could add to them)
WORST_FIRST = ("outage", "degraded", "maintenance", "no data", "operational")
HEADLINES = {
    "outage": "Some systems are down",
    "degraded": "Some systems are degraded",
    "maintenance": "Maintenance in progress",
    "no data": "Status unknown",
    "operational": "All systems operational",
}


def level(checks: int, up: int) -> str:
    """The colour of one day's bar: none (no checks), full (every check found the target up), high, mid or low."""
    if not checks:
        return "none"
    ratio = up / checks
    return "full" if ratio == 1 else "high" if ratio >= 0.99 else "mid" if ratio >= 0.95 else "low"


class StatusPages:
    """The status pages of the config in force, over ``pages``' store (whose states they share)."""

    def __init__(self, pages: Pages, *, clock: Callable[[], float] = time.time) -> None:
        self.pages, self.clock = pages, clock
        self.store: StoreView = pages.store
        self._past: dict[tuple[str, ...], tuple[float, int, dict[str, dict[int, tuple[int, int]]]]] = {}

    def listed(self) -> list[dict[str, str]]:
        """Every configured page: slug and title."""
        return [{"slug": page.slug, "title": page.title} for page in self.pages.config.status_pages]

    def find(self, slug: str) -> StatusPage | None:
        return next((page for page in self.pages.config.status_pages if page.slug == slug), None)

    def page(self, slug: str) -> dict[str, Any] | None:
        """Everything the page ``slug`` shows, or None when no page has that slug."""
        page = self.find(slug)
        if page is None:
            return None
        now = self.clock()
        names = page.targets
        first_day = math.floor(now / DAY) - DAYS + 1
        latest = self.store.results.latest_states(names)
        days = self._days(names, first_day, now)
        dates = [(day, time.strftime("%Y-%m-%d", time.gmtime(day * DAY))) for day in range(first_day, first_day + DAYS)]
        rows = {name: self._target(name, latest.get(name), days[name], dates, now) for name in names}
        groups = [{"name": group.name, "targets": [rows[name] for name in group.targets]} for group in page.groups]
        overall = min((row["state"] for row in rows.values()), key=WORST_FIRST.index, default="no data")
        return {
            "page": page,
            "now": now,
            "groups": groups,
            "state": overall,
            "headline": HEADLINES[overall],
            "incidents": self._incidents(page, names, now),
            "maintenance": self._maintenance(set(names), now),
            "days": DAYS,
        }

    def _days(self, names: list[str], first_day: int, now: float) -> dict[str, dict[int, tuple[int, int]]]:
        """Checks and passes by day of ``names``: the past days as read at most ``PAST_DAYS_KEPT`` ago, today now."""
        today = math.floor(now / DAY)
        kept = self._past.get(tuple(names))
        if kept is None or kept[1] != first_day or now - kept[0] > PAST_DAYS_KEPT or now < kept[0]:
            kept = (now, first_day, self.store.public.daily_uptime(names, first_day * DAY, today * DAY))
            self._past[tuple(names)] = kept
        current = self.store.public.daily_uptime(names, today * DAY, now)
        return {name: {**kept[2][name], **current[name]} for name in names}

    def _target(
        self, name: str, latest: Latest | None, days: dict[int, tuple[int, int]], dates: list[tuple[int, str]], now: float
    ) -> dict[str, Any]:
        bars = [(date, *days.get(day, (0, 0))) for day, date in dates]
        checks, up = sum(c for c, _ in days.values()), sum(u for _, u in days.values())
        return {
            "name": name,
            "state": PUBLIC[self.pages.state(name, latest, now)],
            "bars": uptime_bars(bars),
            "uptime": up / checks if checks else None,
        }

    def _incidents(self, page: StatusPage, names: list[str], now: float) -> list[dict[str, Any]]:
        rows = self.store.public.public_incidents(names, now - DAYS * DAY, INCIDENTS_SHOWN)
        notes = self.store.public.public_notes([row.id for row in rows])
        shown = []
        for row in rows:
            cause = ROOT_CAUSES.get(row.root_cause or "") if page.show_diagnosis else None
            shown.append(
                {
                    "target": row.target,
                    "ongoing": row.status == "open",
                    "title": "Outage" if row.severity == "critical" else "Degraded performance",
                    "opened_at": row.opened_at,
                    "closed_at": row.closed_at,
                    "lasted": (row.closed_at or now) - row.opened_at,
                    "notes": notes[row.id],
                    "cause": cause,
                }
            )
        return shown

    def _maintenance(self, names: set[str], now: float) -> list[dict[str, Any]]:
        """Windows in force or starting within ``UPCOMING`` that cover some of ``names``, soonest first."""
        found = []
        for window in self.pages.config.maintenance:
            covered = [name for name in window.targets if name in names]
            if not covered:
                continue
            for start, end in window.occurrences(now, now + UPCOMING)[:3]:
                found.append(
                    {
                        "targets": covered,
                        "start": start,
                        "end": end,
                        "reason": window.reason,
                        "active": start <= now < end,
                        "recurring": window.recurring,
                    }
                )
        return sorted(found, key=lambda w: w["start"])


def uptime_bars(days: list[tuple[str, int, int]]) -> Markup:
    """A bar a day, each (date, checks, up), as HTML: built here, not by the template, because a page
    of 50 targets has 4,500 of them. Every value in it is a date or a number."""
    bars = []
    for date, checks, up in days:
        said = f"{up / checks * 100:.2f}%" if checks else "no data"
        bars.append(f'<span class="bar bar-{level(checks, up)}" title="{date}: {said}"></span>')
    return Markup("".join(bars))


def duration(seconds: float) -> str:
    """``5 s``, ``1 min 30 s``, ``3 h 20 min``, ``2 d 4 h``: how long an incident lasted, to the second when it was
    short, else in its two largest units, rounded to the smaller."""
    lead = next(i for i, (size, _) in enumerate(UNITS) if seconds + 0.5 >= size or size == 1)
    step = UNITS[min(lead + 1, len(UNITS) - 1)][0]
    left = math.floor(max(seconds, 0.0) / step + 0.5) * step
    if lead and left >= UNITS[lead - 1][0]:  # rounding carried into the larger unit: 59 min 59.7 s is 1 h
        lead -= 1
    parts = []
    for size, name in UNITS[lead : lead + 2]:
        if left // size:
            parts.append(f"{left // size} {name}")
        left %= size
    return " ".join(parts) or "0 s"
