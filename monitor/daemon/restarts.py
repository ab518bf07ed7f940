"""What a reload cannot apply: settings read once at start (the database, the listeners' addresses, the workers)."""

from __future__ import annotations

from monitor.config import Config
from monitor.store.engines import shown


def restart_needed(old: Config, new: Config, *, database: str) -> list[str]:
    """What of ``new`` takes a restart, in words (``database``: the one open now); empty when nothing does."""
    said = []
    if new.database not in (None, old.database):
        said.append(f"database {shown(new.database)} is still {database} until a restart")
    if new.metrics != old.metrics:
        said.append(f"metrics settings change at the next restart (still {old.metrics.host}:{old.metrics.port})")
    if (new.web.enabled, new.web.listen, new.web.status_listen) != (old.web.enabled, old.web.listen, old.web.status_listen):
        said.append("the web UI's listener changes at the next restart (its pages follow now)")
    if (new.workers, new.workers_by_demand) != (old.workers, old.workers_by_demand):
        still = f"auto, at most {old.workers}" if old.workers_by_demand else old.workers
        said.append(f"workers change at the next restart (still {still})")
    return said
