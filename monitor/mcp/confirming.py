"""``confirm_suggestion`` over MCP: a person's word on a past incident the memory asserted or suggested, written as
``monitor incidents confirm`` writes it (:func:`monitor.memory.links.link`, through the incident writer).

Over HTTP it is behind the web token, as every tool is (:mod:`monitor.mcp.http`); over stdio, the client runs
``monitor mcp`` itself, on a database it could write with ``monitor incidents confirm``. Its inputs are bounded:
ids in the database's range, a note of at most :data:`MAX_NOTE` characters.
"""

from __future__ import annotations

from typing import Any

from monitor.incidents.writer import Writer
from monitor.mcp.answers import NotFound
from monitor.web.pages import MAX_ID

MAX_NOTE = 1000  # characters, as the incident page's form allows


def confirm(writer: Writer, incident: int, other: int, same: bool, note: str = "") -> dict[str, Any]:
    """Link ``incident`` to the past incident ``other`` through ``writer``: the same failure (``same``), or not it;
    the link as stored."""
    from monitor.memory.links import link

    for name, value in (("incident", incident), ("other", other)):
        if not 0 < value <= MAX_ID:
            raise ValueError(f"{name}: an incident's number, from 1 to {MAX_ID}, not {value}")
    if len(note) > MAX_NOTE:
        raise ValueError(f"note: {len(note):,} characters, at most {MAX_NOTE:,}")
    try:
        made = link(writer, incident, other, "same" if same else "not", actor="mcp", note=note.strip() or None)
    except LookupError as exc:
        raise NotFound(str(exc).split(" in ")[0]) from None  # not the database's path
    return {"incident": made.incident, "other": made.other, "verdict": made.verdict, "said": made.said(incident), "at": made.at}
