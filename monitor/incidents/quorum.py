"""What the detectors see of a target checked from several places (``quorum: {locations: K, agree: M}``).

Each location stores what it saw (its ``location`` on the result). The detectors of every location's
replica judge the target by the latest result of each location instead of by its own alone::

    M or more locations fail      the check fails, with what the failing location saw: an outage
    fewer fail                    the check passes, and says which path fails: a warning about that
                                  path (shown per location on the target's page), not an incident

So an incident opens once M of K agree (each replica's detectors come to it; the store's one open incident
per target makes it one), and one location that cannot reach the target opens nothing.
"""

from __future__ import annotations

from dataclasses import replace

from monitor.config import Target
from monitor.core.results import CRITICAL, OK, Result, StoredResult


def agreed(result: Result, latest: list[StoredResult], target: Target) -> Result:
    """``result`` as the detectors should see it, given the latest result of each location (``latest``,
    this one among them)."""
    assert target.quorum is not None
    failing = [row for row in latest if not row.ok]
    if len(failing) >= target.quorum.agree:
        if not result.ok:
            return result
        row = failing[0]
        return replace(
            result,
            ok=False,
            severity=row.severity or CRITICAL,
            status_code=row.status_code,
            error=row.error,
            detail=f"from {row.location}: {row.detail or ''}"[:500],
        )
    if result.ok or not failing:
        return result
    places = ", ".join(row.location or "" for row in failing)
    return replace(
        result,
        ok=True,
        severity=OK,
        error=None,
        detail=f"fails from {places} only ({len(failing)} of {target.quorum.agree} needed): {result.error}: {result.detail}"[:500],
    )


def window(target: Target) -> float:
    """How far back a location's latest result still counts: two intervals and a timeout."""
    return 2 * target.interval + target.timeout
