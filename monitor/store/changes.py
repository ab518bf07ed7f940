"""Changes to the config made from the web UI and the admin API: who (the token's name), when, what, and how it went."""

from __future__ import annotations

from monitor.core.audit import ConfigChange
from monitor.core.urls import redact_text
from monitor.store.base import Part, Writing, inserted
from monitor.store.rows import many


class ChangesReader(Part):
    """The log of config changes made from the web UI and the admin API."""

    def config_changes(self, limit: int = 50) -> list[ConfigChange]:
        """The latest changes, newest first."""
        return many(ConfigChange, self._rows("SELECT * FROM config_changes ORDER BY id DESC LIMIT ?", (limit,)))


class ChangesPart(Writing, ChangesReader):
    """Config changes: one row per change asked for with a token, made or refused; only the web's editor records one."""

    def record_config_change(
        self,
        actor: str,
        action: str,
        *,
        ok: bool,
        detail: str,
        before: str | None = None,
        after: str | None = None,
        client: str | None = None,
    ) -> int:
        """A change asked for by the holder of token ``actor`` (its name), made or refused; its id."""
        with self._transaction() as db:
            cursor = db.execute(
                """INSERT INTO config_changes (at, actor, action, ok, detail, version_before, version_after, client)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id""",
                (self._clock(), actor[:64], action[:200], int(ok), redact_text(detail)[:2000], before, after, client),
            )
            return inserted(cursor) or 0
