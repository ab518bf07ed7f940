"""How much each incident memory is worth: its recalls (a score that decays), and what pruning removed.

The forgetting curve itself is :func:`decayed`: a value halves every ``half_life`` seconds. The store
keeps, per recalled incident, the score as of its last recall; :mod:`monitor.memory.forgetting` adds the
rest of an incident's value (being new, being resolved with a note) and decides what goes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from monitor.core.incidents import Forgettable, Occurrence
from monitor.store.base import Part, Writing
from monitor.store.rows import columns, many

HALF_LIFE = 30 * 86400.0  # seconds for an importance to halve
RECALL_BOOST = 1.0  # what one recall adds to an incident's importance
CHUNK = 500  # ids per statement: far below SQLite's and PostgreSQL's parameter limits


def decayed(value: float, since: float, now: float, half_life: float = HALF_LIFE) -> float:
    """``value`` as it was at ``since``, decayed to ``now``: halved every ``half_life`` seconds."""
    return float(value * 0.5 ** (max(0.0, now - since) / half_life))


def chunks(ids: Iterable[int], size: int = CHUNK) -> Iterator[list[int]]:
    batch: list[int] = []
    for incident_id in ids:
        batch.append(int(incident_id))
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class ImportanceReader(Part):
    """What recall and forgetting read of incidents' worth: recalls, the candidates for forgetting, the summary of
    what was forgotten, and the history a review reads."""

    def recalls(self, incident_id: int) -> dict[str, Any] | None:
        """The incident's recall record: score (as of ``scored_at``), recalls, recalled_at; None if never recalled."""
        return self._one("SELECT * FROM incident_recalls WHERE incident_id = ?", (incident_id,))

    def forgettable(self, recalled_before: float) -> list[Forgettable]:
        """Incidents that may be forgotten: not open, and not recalled since ``recalled_before``; with what
        their value is computed from."""
        return many(
            Forgettable,
            self._rows(
                """SELECT i.id, i.target, i.pattern, coalesce(i.root_cause, '') AS root_cause, i.opened_at, i.closed_at,
                          CASE WHEN i.resolution IS NOT NULL AND i.resolution != '' THEN 1 ELSE 0 END AS noted,
                          r.score, r.scored_at, coalesce(r.recalls, 0) AS recalls
                   FROM incidents AS i LEFT JOIN incident_recalls AS r ON r.incident_id = i.id
                   WHERE i.status != 'open' AND (r.recalled_at IS NULL OR r.recalled_at < ?)""",
                (recalled_before,),
            ),
        )

    def incident_history(self, since: float, *, noted: bool = False) -> list[Occurrence]:
        """Incidents opened since ``since``, oldest first (what ``monitor review`` reads); with ``noted``, only
        those resolved with a note."""
        where = " AND resolution IS NOT NULL AND resolution != ''" if noted else ""
        return many(
            Occurrence,
            self._rows(
                f"""SELECT {", ".join(columns(Occurrence))} FROM incidents WHERE opened_at >= ?{where} ORDER BY opened_at, id""", (since,)
            ),
        )

    def pruned(self) -> list[dict[str, Any]]:
        """What forgetting removed: one row per target, pattern and root cause, the largest groups first."""
        return self._rows("""SELECT * FROM pruned_incidents ORDER BY incidents DESC, target, pattern, root_cause""")


class ImportancePart(Writing, ImportanceReader):
    """Recalls of incidents (forgetting deletes incidents: it is the incident writer's part's)."""

    def mark_recalled(self, ids: Iterable[int], *, half_life: float = HALF_LIFE, boost: float = RECALL_BOOST) -> None:
        """These incidents were put in front of the model: each one's score decays to now, then gains ``boost``."""
        now = self._clock()
        wanted = sorted(set(ids))
        with self._transaction() as db:
            for batch in chunks(wanted):
                marks = ", ".join("?" * len(batch))
                known = {row[0] for row in db.execute(f"SELECT id FROM incidents WHERE id IN ({marks})", batch)}
                before = {
                    row[0]: row[1:]
                    for row in db.execute(
                        f"SELECT incident_id, score, scored_at FROM incident_recalls WHERE incident_id IN ({marks})", batch
                    )
                }
                for incident_id in (i for i in batch if i in known):
                    score, at = before.get(incident_id, (0.0, now))
                    db.execute(
                        """INSERT INTO incident_recalls (incident_id, score, scored_at, recalls, recalled_at)
                           VALUES (?, ?, ?, 1, ?) ON CONFLICT (incident_id) DO UPDATE SET score = excluded.score,
                           scored_at = excluded.scored_at, recalls = incident_recalls.recalls + 1,
                           recalled_at = excluded.recalled_at""",
                        (incident_id, decayed(score, at, now, half_life) + boost, now, now),
                    )
