"""Where a config's database is: a SQLite file named relative to the config file, as tools that read a config
file resolve the paths it names; ``monitor.db`` beside the config file when it names none.

Before this rule a config that named no database used ``monitor.db`` in the directory monitor ran in. A daemon
that has kept its results there goes on with them: while the file beside the config does not exist and the one
in the working directory does, the working directory's is used, and a warning names both absolute paths.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

DEFAULT = "monitor.db"
URLS = ("postgresql://", "postgres://")

log = logging.getLogger("monitor.config")


def located(written: str | None, config_file: Path) -> str:
    """The database of the config at ``config_file`` that names ``written`` (None: none), as an absolute path, a
    ``postgresql://`` URL or ``:memory:``."""
    if written is not None and (written == ":memory:" or written.startswith(URLS) or Path(written).is_absolute()):
        return written
    name = written or DEFAULT
    beside = os.path.abspath(config_file.parent / name)
    old = os.path.abspath(name)
    if old != beside and not os.path.exists(beside) and os.path.isfile(old):
        log.warning("%s", moved(config_file, old, beside))
        return old
    return beside


def moved(config_file: Path, old: str, beside: str) -> str:
    """The warning for a database found where monitor looked before a config's database was relative to it."""
    return (
        f"database {old}: read from the directory monitor runs in, where it was looked for before; {config_file} "
        f"names its database relative to itself now, {beside}. Stop the daemon and move the file there (with its "
        f"-wal and -shm files), or write `database: {old}` in {config_file}: this fallback will go"
    )
