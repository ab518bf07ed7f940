"""``maintenance:``, windows in which a target's incidents raise no alerts: one-off, or recurring.

A one-off window has ``start`` and ``end``. A recurring one has an RFC 5545 ``rrule`` (read by
python-dateutil), read as wall-clock time in ``timezone``, and a ``duration``::

    - targets: [api]
      rrule: FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=30      # Sundays at 02:30, Berlin time, DST or not
      timezone: Europe/Berlin
      duration: 1h
      reason: weekly database upgrade

``start`` anchors a recurring rule (rules with ``INTERVAL`` count from it; default 2020-01-01 00:00 in
``timezone``); ``duration`` is elapsed time, so a window that spans a DST change lasts what it says.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import PrivateAttr, ValidationInfo, field_validator, model_validator

from monitor.config.errors import shown
from monitor.config.values import Duration, Strict

ANCHOR = datetime(2020, 1, 1)  # where a rule without ``start`` counts from (local time in its zone)
UPCOMING = 7 * 86400.0  # how far ahead ``occurrences`` looks by default
# What a rule's start may be moved forward by, whole periods at a time, keeping its occurrences (see ``near``).
PERIODS = {"HOURLY": timedelta(hours=1), "DAILY": timedelta(days=1), "WEEKLY": timedelta(weeks=1)}


def zone(name: str) -> tzinfo:
    """The IANA time zone ``name`` (``Europe/Berlin``, ``UTC``), or ValueError naming it."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{shown(name)} is not a time zone: write an IANA name such as UTC, Europe/Berlin or America/New_York") from None


def parse_rule(text: str, anchor: datetime) -> Any:
    """The dateutil ``rrule`` of ``text`` (``FREQ=...;...``, without ``DTSTART``), counted from ``anchor``."""
    from dateutil.rrule import rrulestr

    if "DTSTART" in text.upper():
        raise ValueError("put the rule's first moment in start:, not DTSTART inside rrule:")
    try:
        return rrulestr(text.removeprefix("RRULE:"), dtstart=anchor)
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise ValueError(
            f"{shown(text)} is not an RRULE (RFC 5545, e.g. FREQ=WEEKLY;BYDAY=SU;BYHOUR=2): {exc or type(exc).__name__}"
        ) from None


def rule_parts(text: str) -> dict[str, str]:
    """``FREQ=WEEKLY;INTERVAL=2`` -> ``{"FREQ": "WEEKLY", "INTERVAL": "2"}``."""
    pairs = (part.partition("=") for part in text.removeprefix("RRULE:").split(";"))
    return {name.strip().upper(): value.strip().upper() for name, _, value in pairs if value}


def checked_rule(text: str, anchor: datetime) -> None:
    """ValueError for a rule that cannot be a maintenance window: one recurring more often than hourly (finding
    the window in force would walk millions of occurrences), or one that never occurs (February 30)."""
    rule = parse_rule(text, anchor)
    if rule_parts(text).get("FREQ") in ("SECONDLY", "MINUTELY"):
        raise ValueError(f"{shown(text)} recurs more often than hourly: a maintenance window is at most hourly")
    if rule.after(anchor, inc=True) is None:
        raise ValueError(f"{shown(text)} never occurs after {anchor.isoformat()}")


def near(anchor: datetime, text: str, before: datetime) -> datetime:
    """``anchor`` moved forward by whole periods of the rule (its FREQ times its INTERVAL) to at most one period
    before ``before``: the rule's occurrences from there are those it had counted from ``anchor``, found without
    walking every one since. Rules with COUNT count from their start and stay there."""
    parts = rule_parts(text)
    period = PERIODS.get(parts.get("FREQ", ""))
    if period is None or "COUNT" in parts or before <= anchor:
        return anchor
    step = period * max(1, int(parts.get("INTERVAL", "1") or 1))
    steps = (before.replace(tzinfo=None) - anchor.replace(tzinfo=None)) // step - 1
    return anchor + step * steps if steps > 0 else anchor  # wall-clock arithmetic, as the rule counts


class _Occurrence:
    """The occurrence a recurring window last looked up: (start, end, next start). A cache, so two windows
    that differ only in it are equal."""

    value: tuple[float, float, float] | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Occurrence)

    __hash__ = None  # type: ignore[assignment]


class Maintenance(Strict):
    targets: list[str]
    start: datetime | None = None
    end: datetime | None = None
    timezone: str = "UTC"
    rrule: str | None = None
    duration: Duration | None = None
    reason: str = ""
    _last: _Occurrence = PrivateAttr(default_factory=lambda: _Occurrence())

    @field_validator("timezone")
    @classmethod
    def _zone(cls, name: str) -> str:
        zone(name)
        return name

    @field_validator("rrule")
    @classmethod
    def _rule(cls, text: str | None, info: ValidationInfo) -> str | None:
        if text is not None:
            checked_rule(text, cls._anchor(info.data.get("start"), info.data.get("timezone") or "UTC"))
        return text

    @field_validator("end")
    @classmethod
    def _after_start(cls, end: datetime | None, info: ValidationInfo) -> datetime | None:
        start = info.data.get("start")
        if end is not None and start is not None and end.timestamp() <= start.timestamp():
            raise ValueError(f"ends before it starts ({start.isoformat()})")
        return end

    @model_validator(mode="after")
    def _one_kind(self) -> Maintenance:
        if self.rrule is None:
            if self.start is None or self.end is None:
                raise ValueError("a window needs start: and end:, or rrule: and duration: to recur")
            if self.duration is not None:
                raise ValueError("duration: goes with rrule:; a one-off window has start: and end:")
        elif self.duration is None:
            raise ValueError("rrule: needs duration: (how long each window lasts, e.g. 1h)")
        elif self.end is not None:
            raise ValueError("end: is for one-off windows; a recurring one lasts duration: (UNTIL= ends the rule)")
        return self

    @staticmethod
    def _anchor(start: datetime | None, name: str) -> datetime:
        local = zone(name)
        if start is None:
            return ANCHOR.replace(tzinfo=local)
        return start.astimezone(local) if start.tzinfo is not None else start.replace(tzinfo=local)

    @property
    def recurring(self) -> bool:
        return self.rrule is not None

    def covers(self, target: str, at: float) -> bool:
        return target in self.targets and self.active(at) is not None

    def active(self, at: float) -> tuple[float, float] | None:
        """The window in force at ``at`` (epoch seconds): its start and end, or None."""
        if self.rrule is None:
            assert self.start is not None and self.end is not None
            start, end = self.start.timestamp(), self.end.timestamp()
            return (start, end) if start <= at < end else None
        last = self._last.value
        if last is None or not last[0] <= at < last[2]:
            last = self._occurrence(at)
            self._last.value = last  # one rule walk per occurrence, not per question: pages ask for every target
        return (last[0], last[1]) if last[0] <= at < last[1] else None

    def occurrences(self, since: float, until: float) -> list[tuple[float, float]]:
        """The windows that overlap ``since`` to ``until``, as (start, end) epoch seconds, oldest first."""
        if self.rrule is None:
            assert self.start is not None and self.end is not None
            start, end = self.start.timestamp(), self.end.timestamp()
            return [(start, end)] if start < until and end > since else []
        length = self.duration or 0.0
        first = self._local(since - length)
        rule = self._rule_object(first)
        found = rule.between(first, self._local(until), inc=True)
        return [(moment.timestamp(), moment.timestamp() + length) for moment in found[:100] if moment.timestamp() + length > since]

    def _occurrence(self, at: float) -> tuple[float, float, float]:
        """The latest start at or before ``at`` (or -inf), when it ends, and the next start (or +inf)."""
        moment = self._local(at)
        rule = self._rule_object(self._local(at - (self.duration or 0.0)))
        before, after = rule.before(moment, inc=True), rule.after(moment)
        start = before.timestamp() if before is not None else float("-inf")
        return start, start + (self.duration or 0.0), after.timestamp() if after is not None else float("inf")

    def _rule_object(self, before: datetime) -> Any:
        """The rule, counted from a start moved up to just before ``before`` (see :func:`near`)."""
        assert self.rrule is not None
        return parse_rule(self.rrule, near(self._anchor(self.start, self.timezone), self.rrule, before))

    def _local(self, at: float) -> datetime:
        return datetime.fromtimestamp(at, UTC).astimezone(zone(self.timezone))


def described(window: Maintenance) -> str:
    """How a window reads to people: its rule and zone, or its two ends."""
    if window.rrule is not None:
        return f"{window.rrule} ({window.timezone}), {timedelta(seconds=window.duration or 0)} each"
    assert window.start is not None and window.end is not None
    return f"{window.start.isoformat()} to {window.end.isoformat()}"
