"""Agent runs and their steps, diagnoses, and the remediations they called."""

from __future__ import annotations

from typing import Any

from monitor.core.runs import NewStep, Run, Step, StepStats
from monitor.store import rows
from monitor.store.base import NO_ID, Part, Writing, inserted


class RunsReader(Part):
    """Agent runs and their steps, as pages, recall and the CLI read them."""

    def run(self, run_id: int) -> Run | None:
        return rows.maybe(Run, self._one("SELECT * FROM agent_runs WHERE id = ?", (run_id,)))

    def last_run_id(self) -> int | None:
        value = self._scalar("SELECT max(id) FROM agent_runs")
        return int(value) if value is not None else None

    def recent_runs(self, limit: int = 20) -> list[Run]:
        return rows.many(Run, self._rows("SELECT * FROM agent_runs ORDER BY id DESC LIMIT ?", (limit,)))

    def runs_since(self, since: float) -> int:
        """Agent runs this replica started since ``since``: ``agent.max_runs_per_hour`` is each daemon's."""
        return int(self._scalar("SELECT count(*) FROM agent_runs WHERE started_at >= ? AND replica = ?", (since, self._replica)))

    def runs_started(self, since: float) -> list[Run]:
        """Agent runs started since ``since``, oldest first."""
        return rows.many(Run, self._rows("SELECT * FROM agent_runs WHERE started_at >= ? ORDER BY started_at, id", (since,)))

    def steps(self, run_id: int) -> list[Step]:
        return rows.many(Step, self._rows("SELECT * FROM agent_steps WHERE run_id = ? ORDER BY step_number, id", (run_id,)))

    def step_stats(self) -> list[StepStats]:
        """Per step kind: count, bytes of text, tool successes and tool seconds."""
        return rows.many(
            StepStats,
            self._rows(
                """SELECT kind, count(*) AS steps,
                      sum(length(coalesce(model_output, '')) + length(coalesce(tool_calls, ''))
                          + length(coalesce(observations, '')) + length(coalesce(error, ''))) AS bytes,
                      count(tool_ok) AS tool_calls, sum(coalesce(tool_ok, 0)) AS tool_ok,
                      sum(coalesce(tool_seconds, 0)) AS tool_seconds
               FROM agent_steps GROUP BY kind ORDER BY kind"""
            ),
        )

    def running_incidents(self) -> list[int]:
        """The incidents of this replica's runs still marked 'running'."""
        return [
            int(row["incident_id"])
            for row in self._rows(
                """SELECT DISTINCT incident_id FROM agent_runs WHERE state = 'running' AND replica = ?
               AND incident_id IS NOT NULL ORDER BY incident_id""",
                (self._replica,),
            )
        ]

    def runs_page(self, *, limit: int = 50, before: int | None = None, incident_id: int | None = None) -> list[Run]:
        """Agent runs newest first, with ids below ``before``; only ``incident_id``'s when given."""
        if incident_id is not None:
            found = self._rows(
                "SELECT * FROM agent_runs WHERE incident_id = ? AND id < ? ORDER BY id DESC LIMIT ?", (incident_id, before or NO_ID, limit)
            )
        else:
            found = self._rows("SELECT * FROM agent_runs WHERE id < ? ORDER BY id DESC LIMIT ?", (before or NO_ID, limit))
        return rows.many(Run, found)

    def recall_steps(self, run_ids: list[int]) -> list[Step]:
        """The recalled past incidents that were put in front of these runs (one 'recall' step each)."""
        if not run_ids:
            return []
        return rows.many(
            Step,
            self._rows(
                f"""SELECT * FROM agent_steps WHERE kind = 'recall'
                              AND run_id IN ({", ".join("?" * len(run_ids))}) ORDER BY run_id""",
                run_ids,
            ),
        )

    def remediations(self) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM remediations ORDER BY id")


class RunsPart(Writing, RunsReader):
    """Agent runs, steps and remediations, written by the agent (a diagnosis and an interrupted run change
    incidents: they are the incident writer's part's)."""

    def start_run(self, task: str, *, target: str | None = None, incident_id: int | None = None, model: str | None = None) -> int:
        with self._transaction() as db:
            cursor = db.execute(
                """INSERT INTO agent_runs (incident_id, target, task, model, state, started_at, replica)
                   VALUES (?, ?, ?, ?, 'running', ?, ?) RETURNING id""",
                (incident_id, target, task, model, self._clock(), self._replica),
            )
            return inserted(cursor) or 0

    def add_step(self, run_id: int, step: NewStep) -> None:
        """Save one finished step, and add its tokens to the run, in one transaction."""
        names = rows.columns(NewStep)
        with self._transaction() as db:
            db.execute(
                f"INSERT INTO agent_steps (run_id, {', '.join(names)}) VALUES (?, {', '.join('?' * len(names))})",
                (run_id, *(getattr(step, name) for name in names)),
            )
            db.execute(
                """UPDATE agent_runs SET input_tokens = input_tokens + ?, output_tokens = output_tokens + ?
                   WHERE id = ?""",
                (step.input_tokens or 0, step.output_tokens or 0, run_id),
            )

    def finish_run(self, run_id: int, state: str, final_answer: str | None = None, error: str | None = None) -> None:
        with self._transaction() as db:
            db.execute(
                "UPDATE agent_runs SET state = ?, final_answer = ?, error = ?, ended_at = ? WHERE id = ?",
                (state, final_answer, error, self._clock(), run_id),
            )

    def audit_remediation(self, target: str, action: str, *, dry_run: bool, ok: bool, detail: str, run_id: int | None = None) -> int:
        with self._transaction() as db:
            cursor = db.execute(
                """INSERT INTO remediations (target, action, run_id, dry_run, ok, detail, at)
                   VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id""",
                (target, action, run_id, int(dry_run), int(ok), detail, self._clock()),
            )
            return inserted(cursor) or 0

    def claim_remediation(
        self, target: str, action: str, *, detail: str, run_id: int | None, incident_id: int | None, per_incident: int, per_hour: int
    ) -> int | None:
        """The write-ahead audit row of a real remediation call, or None when a limit is reached.

        Limits count real calls (``dry_run = 0``) of the incident (of the run, without one) and of the last
        hour; counting and claiming is one transaction, so calls made in parallel cannot all pass.
        """
        now = self._clock()
        with self._transaction() as db:
            self._engine.lock_table(db, "remediations")  # SQLite's BEGIN IMMEDIATE already holds every table
            hour = db.execute("SELECT count(*) FROM remediations WHERE dry_run = 0 AND at > ?", (now - 3600,)).fetchone()[0]
            mine = db.execute(
                """SELECT count(*) FROM remediations WHERE dry_run = 0 AND (run_id = ? OR run_id IN
                   (SELECT id FROM agent_runs WHERE incident_id = ?))""",
                (run_id, incident_id),
            ).fetchone()[0]
            if hour >= per_hour or mine >= per_incident:
                return None
            cursor = db.execute(
                """INSERT INTO remediations (target, action, run_id, dry_run, ok, detail, at)
                   VALUES (?, ?, ?, 0, 0, ?, ?) RETURNING id""",
                (target, action, run_id, detail, now),
            )
            return inserted(cursor) or 0

    def complete_remediation(self, remediation_id: int, *, ok: bool, detail: str) -> None:
        with self._transaction() as db:
            db.execute("UPDATE remediations SET ok = ?, detail = ? WHERE id = ?", (int(ok), detail, remediation_id))
