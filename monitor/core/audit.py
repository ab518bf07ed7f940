"""The audit: what people asked of the web UI and its admin API, done or refused, one row each. A
:class:`WebAction` is an action on an incident (acknowledge, resolve, silence, a public note, a person's word on a
past incident); a :class:`ConfigChange`, a change to the config file. Both are read from their store rows in one
place (:mod:`monitor.store.rows`) and made JSON in one (``to_json``)."""

from __future__ import annotations

from dataclasses import dataclass

from monitor.core.rows import Row


@dataclass(frozen=True)
class WebAction(Row):
    """One action asked of the web UI. Fields are the ``web_actions`` columns, in their order."""

    id: int
    at: float
    incident_id: int | None
    action: str  # acknowledge, resolve, silence, public_note, same, not
    note: str | None
    ok: int  # 1: done; 0: refused
    detail: str | None  # what was done, or why not
    client: str | None  # the address it came from


@dataclass(frozen=True)
class ConfigChange(Row):
    """One change to the config asked for with a token. Fields are the ``config_changes`` columns, in their order."""

    id: int
    at: float
    actor: str  # the token's name
    action: str
    ok: int  # 1: made; 0: refused
    detail: str
    version_before: str | None
    version_after: str | None
    client: str | None
