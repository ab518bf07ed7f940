"""The fleet's graph as stored: edges from a target to a component it depends on, and the components
each incident's evidence named. What the edges mean, and how they are learned, is :mod:`monitor.memory.graph`.

An edge is ``(target, component, source)`` with a ``weight`` and the time it was ``last_seen``. Sources:
``config`` (``depends_on``) and ``address`` (what the target is: its own name and host) are replaced
whole from each config; ``answered`` and ``co-occurred`` are learned, and each sighting adds 1 to the weight.
"""

from __future__ import annotations

import re
from typing import Any

from monitor.core.incidents import Incident, Opened
from monitor.store.base import Part, Writing
from monitor.store.rows import columns, many, one
from monitor.store.words import pg_tsquery

CONFIGURED = ("config", "address")  # sources a config sync replaces whole
BEST_FIRST = "(resolution IS NOT NULL AND resolution != '') DESC, id DESC"  # a known fix first, then newest
EDGE = "target, component, source, weight, last_seen"
WINDOW = 200  # the newest incidents naming a component, among which recall looks for known fixes

Edge = tuple[str, str, str]  # (target, component, source)


class GraphReader(Part):
    """The fleet's graph as recall reads it, and the incidents found through it."""

    def edges_from(self, targets: list[str]) -> list[dict[str, Any]]:
        """Edges of ``targets``: what they depend on, and what they are."""
        names, param = self._engine.names(targets)
        return self._rows(
            f"""SELECT {EDGE} FROM graph_edges WHERE target IN (SELECT value FROM {names})
                              ORDER BY target, weight DESC, component""",
            (param,),
        )

    def edges_to(self, components: list[str], limit: int = 200) -> list[dict[str, Any]]:
        """Edges to ``components``: who depends on them, and who is them; the heaviest, newest first."""
        names, param = self._engine.names(components)
        return self._rows(
            f"""SELECT {EDGE} FROM graph_edges WHERE component IN (SELECT value FROM {names})
                              ORDER BY weight DESC, last_seen DESC, target LIMIT ?""",
            (param, limit),
        )

    def opened_between(self, since: float, until: float, limit: int) -> list[Opened]:
        """Incidents opened in [since, until], oldest first."""
        return many(
            Opened,
            self._rows(
                f"""SELECT {", ".join(columns(Opened))} FROM incidents WHERE opened_at >= ? AND opened_at <= ?
                    ORDER BY opened_at, id LIMIT ?""",
                (since, until, limit),
            ),
        )

    def incidents_mentioning(self, components: list[str], *, besides: str, exclude: int | None, limit: int) -> list[tuple[Incident, str]]:
        """Incidents of targets other than ``besides`` whose evidence named one of ``components``: each
        with the component named, once per component, known fixes first among the newest ``WINDOW``."""
        names, param = self._engine.names(components)
        # "+ 0": the mentions of these components, then sorted (SQLite walked the whole primary key backwards)
        return [
            (one(Incident, row), row["component"])
            for row in self._rows(
                f"""SELECT incidents.*, newest.component FROM (
                    SELECT incident_id, component FROM graph_mentions WHERE component IN (SELECT value FROM {names})
                    ORDER BY incident_id + 0 DESC LIMIT ?) AS newest
                JOIN incidents ON incidents.id = newest.incident_id WHERE target != ? AND id != ?
                ORDER BY {BEST_FIRST} LIMIT ?""",
                (param, WINDOW, besides, exclude or -1, limit),
            )
        ]

    def incidents_naming(self, names: list[str], *, besides: str, exclude: int | None, limit: int) -> list[Incident]:
        """Incidents of targets other than ``besides`` whose text holds one of ``names`` as a phrase of the
        full-text index (``pg-main`` is the words pg, main in a row: the caller checks the whole name),
        known fixes first among the newest ``WINDOW``."""
        phrases = [" ".join(re.findall(r"[^\W_]+", name.lower())) for name in names]
        phrases = [phrase for phrase in dict.fromkeys(phrases) if phrase]
        if not phrases:
            return []
        if self._shared:
            query = " || ".join(pg_tsquery(phrase, "phraseto_tsquery") for phrase in phrases)
            # "+ 0": the matches from the index, then sorted; PostgreSQL took a phrase of common words
            # ("auth eu") for a common phrase and walked every incident backwards looking for it (100 ms)
            newest = f"""SELECT incident_id FROM incident_words WHERE words @@ ({query})
                         ORDER BY incident_id + 0 DESC LIMIT ?"""
            match: list[Any] = []
        else:
            newest = "SELECT rowid AS incident_id FROM incidents_fts WHERE incidents_fts MATCH ? ORDER BY rowid DESC LIMIT ?"
            match = [" OR ".join(f'"{phrase}"' for phrase in phrases)]
        return many(
            Incident,
            self._rows(
                f"""SELECT incidents.* FROM ({newest}) AS newest JOIN incidents ON incidents.id = newest.incident_id
                              WHERE target != ? AND id != ? ORDER BY {BEST_FIRST} LIMIT ?""",
                (*match, WINDOW, besides, exclude or -1, limit),
            ),
        )

    def incidents_of(self, targets: list[str], *, exclude: int | None, limit: int) -> list[Incident]:
        """Incidents of ``targets``, known fixes first: the best ``limit`` ids of each target on its index
        (``incidents_target_fixed``), then the rows of the best of those, so that the cost is per target,
        not per incident."""
        if not targets:
            return []
        fixed = "(resolution IS NOT NULL AND resolution != '')"
        each = f"SELECT id, {fixed} AS fixed FROM incidents WHERE target = {{}} AND id != ? ORDER BY {fixed} DESC, id DESC LIMIT ?"
        if self._shared:  # one lateral subquery: a union of 30 took PostgreSQL longer to plan than to run
            best = f"SELECT each.* FROM unnest(?::text[]) AS names(value), LATERAL ({each.format('names.value')}) AS each"
            params: list[Any] = [targets, exclude or -1, limit]
        else:
            best = " UNION ALL ".join([f"SELECT * FROM ({each.format('?')}) AS t{n}" for n in range(len(targets))])
            params = [value for target in targets for value in (target, exclude or -1, limit)]
        return many(
            Incident,
            self._rows(
                f"""SELECT * FROM incidents WHERE id IN (
                                   SELECT id FROM ({best}) AS best ORDER BY fixed DESC, id DESC LIMIT ?)
                               ORDER BY {BEST_FIRST}""",
                (*params, limit),
            ),
        )


class GraphPart(Writing, GraphReader):
    """The fleet's graph: the config's edges, and the components incidents mention."""

    def replace_configured_edges(self, edges: list[Edge]) -> int:
        """Make the ``config`` and ``address`` edges ``edges``, in one transaction; only the difference is
        written, so a reload that changed little writes little. Returns how many rows changed."""
        now, wanted = self._clock(), set(edges)
        with self._transaction() as db:
            stored = {
                tuple(row)
                for row in db.execute("SELECT target, component, source FROM graph_edges WHERE source IN (?, ?)", CONFIGURED).fetchall()
            }
            db.executemany("DELETE FROM graph_edges WHERE target = ? AND component = ? AND source = ?", sorted(stored - wanted))
            db.executemany(
                """INSERT INTO graph_edges (target, component, source, weight, last_seen) VALUES (?, ?, ?, 1, ?)
                   ON CONFLICT (target, component, source) DO NOTHING""",
                [(*edge, now) for edge in sorted(wanted - stored)],
            )
            return len(stored ^ wanted)

    def add_edges(self, edges: list[Edge]) -> None:
        """One more sighting of each edge: its weight grows by 1, its ``last_seen`` is now."""
        now = self._clock()
        with self._transaction() as db:
            db.executemany(
                """INSERT INTO graph_edges (target, component, source, weight, last_seen) VALUES (?, ?, ?, 1, ?)
                   ON CONFLICT (target, component, source) DO UPDATE
                   SET weight = graph_edges.weight + 1, last_seen = excluded.last_seen""",
                [(*edge, now) for edge in dict.fromkeys(edges)],
            )

    def mention(self, incident_id: int, components: list[str]) -> None:
        """Components the evidence of an incident named (what its target answered when it opened)."""
        with self._transaction() as db:
            db.executemany(
                "INSERT INTO graph_mentions (incident_id, component) VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(incident_id, c) for c in dict.fromkeys(components)],
            )
