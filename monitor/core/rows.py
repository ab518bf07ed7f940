"""A stored row as a value: a frozen dataclass whose fields are its table's columns, in their order.

Each kind of row (an incident, a result, an agent run, a notification in the outbox, ...) extends :class:`Row`;
``monitor.store.rows`` alone makes one from a row the database returns, and :meth:`Row.to_json` is its JSON where
one is made (the API, MCP, exports): every field by name, in its order.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Row:
    """A row of the store as a frozen value."""

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON object: every field by name, in its order."""
        return asdict(self)
