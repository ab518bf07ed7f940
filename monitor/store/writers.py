"""Named writer parts: one kind of write each, handed explicitly to the one module that makes it.

A reader (the web UI, MCP) holds read-only parts (:mod:`monitor.store.readers`); where it legitimately writes, it
is handed a writer part of its own, which has that write and nothing else::

    WebAudit(store).audit_web_action(...)       the web UI's audit of actions on incidents, done or refused
    ConfigLog(store).record_config_change(...)  the log of config changes (the web's Editor alone)

Incidents themselves change only through the incident writer (:class:`monitor.incidents.writer.Writer`).
"""

from __future__ import annotations

from monitor.store.changes import ChangesPart
from monitor.store.incidents import IncidentsPart


class WebAudit:
    """Who asked the web UI what of an incident, done or refused: ``store.incidents.audit_web_action`` alone."""

    def __init__(self, part: IncidentsPart) -> None:
        self.audit_web_action = part.audit_web_action


class ConfigLog:
    """The log of config changes made from the web UI and the admin API: ``store.changes.record_config_change``
    alone."""

    def __init__(self, part: ChangesPart) -> None:
        self.record_config_change = part.record_config_change
