"""The one writer of config changes from the web UI and the admin API.

An :class:`Editor` holds the daemon's config file (:class:`~monitor.config.configfile.ConfigFile`), its log of changes and its
reload. Each change asked for with a token goes through :meth:`Editor.change`: made to the file (validated first,
written atomically, refused when the file moved on since the version the change was made against), then reloaded by
the daemon at once, and logged in the store with the token's name, made or refused, in one place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from monitor.config.configfile import ConfigFile
from monitor.config.edits import Edit, EditError
from monitor.store.writers import ConfigLog

log = logging.getLogger("monitor.web")

# what the admin pages and API say where there is no editor: ``monitor web``, or a daemon started without a config file
READ_ONLY = (
    "this web UI does not edit the config (monitor web only reads): edit it from the daemon's own web UI "
    "(web.enabled in the config of monitor run --config), which reloads what it writes"
)


@dataclass(frozen=True)
class Outcome:
    """How a change went: ``status`` is its HTTP answer (200 done, 201 added, else why not: ``message``)."""

    status: int
    message: str
    version: str | None = None
    diff: str = ""
    reloaded: bool = False

    @property
    def ok(self) -> bool:
        return self.status < 300


class Editor:
    """Changes to the config file at ``path``, reloaded through ``reload`` (the daemon's), each logged in ``changes``."""

    def __init__(self, path: str | Path, changes: ConfigLog, reload: Callable[[], bool]) -> None:
        self.file, self.changes, self.reload = ConfigFile(path), changes, reload

    def refusal(self) -> str | None:
        """Why no change can be made now (the UI says it above the list), or None."""
        try:
            return self.file.unwritable()
        except EditError as exc:
            return exc.message

    def change(self, edit: Edit, expected: str | None, *, actor: str, client: str | None = None) -> Outcome:
        """Make ``edit`` for the holder of token ``actor`` if the file is still at version ``expected``; reload; log it."""
        outcome = self._made(edit, expected)
        self.changes.record_config_change(
            actor,
            edit.said(),
            ok=outcome.ok,
            detail=outcome.message,
            before=expected,
            after=outcome.version if outcome.ok else None,
            client=client,
        )
        log.info("config change by %s: %s: %s", actor, edit.said(), outcome.message.splitlines()[0] if outcome.message else outcome.status)
        return outcome

    def _made(self, edit: Edit, expected: str | None) -> Outcome:
        if not expected:
            return Outcome(
                428, "say which version of the config the change is made to: If-Match (the ETag of a GET), or the form's version"
            )
        try:
            changed = self.file.change(edit, expected)
        except EditError as exc:
            return Outcome(exc.status, exc.message)
        reloaded = self.reload()
        said = f"{edit.said()}: written" + (" and reloaded" if reloaded else ", but the reload failed: see the daemon's log")
        return Outcome(201 if edit.op == "add" else 200, said, changed.after, changed.diff, reloaded)
