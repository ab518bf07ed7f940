"""What status pages read and nothing else: uptime by day, incidents as the public sees them, and their
public notes (written apart from an incident's own notes, which stay in the admin UI)."""

from __future__ import annotations

import math

from monitor.core.incidents import PublicIncident, PublicNote
from monitor.store.base import Part
from monitor.store.rows import columns, many

DAY = 86400


class PublicReader(Part):
    """What status pages read: uptime by day, incidents as the public sees them, and their public notes (a note
    is added by the incident writer's part)."""

    def daily_uptime(self, targets: list[str], since: float, until: float) -> dict[str, dict[int, tuple[int, int]]]:
        """Checks, and those that found the target up (a warning is up), of each target per UTC day (days since the
        epoch) from ``since`` to ``until``: one statement over the hourly counts, so a year of history costs 24 rows
        a day, not 1,440."""
        names, param = self._engine.names(targets)
        with self._lock:
            rows = self._engine.execute(
                f"""SELECT target, hour / 24 AS day, sum(checks), sum(up) FROM results_hourly
                    WHERE target IN (SELECT value FROM {names}) AND hour >= ? AND hour < ?
                    GROUP BY target, hour / 24""",
                (param, math.floor(since / DAY) * 24, math.ceil(until / DAY) * 24),
            ).fetchall()
        days: dict[str, dict[int, tuple[int, int]]] = {target: {} for target in targets}
        for target, day, checks, up in rows:
            days[target][int(day)] = (int(checks), int(up or 0))
        return days

    def public_incidents(self, targets: list[str], since: float, limit: int = 50) -> list[PublicIncident]:
        """Incidents of ``targets`` open now or opened since ``since``, newest first: the columns a status page
        may show (no summary, diagnosis, notes or agent state)."""
        names, param = self._engine.names(targets)
        return many(
            PublicIncident,
            self._rows(
                f"""SELECT {", ".join(columns(PublicIncident))} FROM incidents WHERE target IN (SELECT value FROM {names})
                    AND (opened_at >= ? OR status = 'open') ORDER BY opened_at DESC, id DESC LIMIT ?""",
                (param, since, limit),
            ),
        )

    def public_notes(self, incident_ids: list[int]) -> dict[int, list[PublicNote]]:
        """The public notes of each of these incidents, oldest first."""
        notes: dict[int, list[PublicNote]] = {incident_id: [] for incident_id in incident_ids}
        if not incident_ids:
            return notes
        marks = ", ".join("?" * len(incident_ids))
        for note in many(
            PublicNote, self._rows(f"SELECT * FROM public_notes WHERE incident_id IN ({marks}) ORDER BY at, id", incident_ids)
        ):
            notes[note.incident_id].append(note)
        return notes
