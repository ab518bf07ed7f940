"""A target's state: one answer, computed here and read by every part that shows one (the CLI, ``/metrics``,
the web UI and its API, status pages, uptime figures and their bars).

A check's severity says whether the target is up::

    ok          up
    warning     up, but degraded (slow, a certificate near expiry): up for uptime and ``monitor_check_up``
    critical    down

A target's state adds what its newest result alone cannot say::

    maintenance   a maintenance window covers it now, whatever its checks find
    unknown       never checked (new, or the daemon is behind)
    stale         no check for ``stale_after`` seconds: what it last saw may no longer hold
    waiting       a heartbeat no job has pinged yet, within its period and grace
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

from monitor.core.errors import HEARTBEAT_WAITING
from monitor.core.results import CRITICAL, WARNING, Seen

State = Literal["up", "warning", "down", "maintenance", "stale", "unknown", "waiting"]
UP: Final = "up"
# WARNING (the severity's word) is the state of a target up but degraded; a status page says "degraded"
DOWN: Final = "down"
MAINTENANCE: Final = "maintenance"
STALE: Final = "stale"
UNKNOWN: Final = "unknown"
WAITING: Final = "waiting"
# What needs looking at first: the overview's order, and the state of a group (its worst).
WORST_FIRST: tuple[State, ...] = (DOWN, WARNING, STALE, UNKNOWN, WAITING, MAINTENANCE, UP)
# A state as a status page's reader is told it.
PUBLIC: dict[State, str] = {
    UP: "operational",
    WARNING: "degraded",
    DOWN: "outage",
    MAINTENANCE: "maintenance",
    STALE: "no data",
    UNKNOWN: "no data",
    WAITING: "no data",
}


def is_up(severity: str | None) -> bool:
    """Whether a check of this severity found its target up: anything but critical (a warning is up)."""
    return severity != CRITICAL


def state_of(latest: Seen | None, *, in_maintenance: bool = False, stale_after: float | None = None, now: float = 0.0) -> State:
    """The state of a target whose newest result is ``latest`` (stored, or a live :class:`~monitor.core.results.Result`)."""
    if in_maintenance:
        return MAINTENANCE
    if latest is None:
        return UNKNOWN
    if stale_after is not None and now - latest.checked_at > stale_after:
        return STALE
    if not is_up(latest.severity):
        return DOWN
    if latest.error == HEARTBEAT_WAITING:
        return WAITING
    return WARNING if latest.severity == WARNING else UP


def exit_code(states: Iterable[str]) -> int:
    """Nagios, from targets' states: 2 any down, 3 none known or any stale, 1 any warning, else 0."""
    seen = set(states)
    if not seen:
        return 3
    return 2 if DOWN in seen else 3 if STALE in seen else 1 if WARNING in seen else 0
