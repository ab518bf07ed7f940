"""An incident's evidence: what its target answered when it opened, as alerts quote it.

Kept with the incident (a JSON column), so every message about it, the first or a reminder hours later,
names the same URL (redacted), status code, error kind and excerpt, and says since when it fails.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from monitor.core import urls
from monitor.core.incidents import Incident
from monitor.core.results import Checked, Result

EXCERPT = 240  # characters of the answer quoted in a message


def failing_since(rows: Sequence[Checked]) -> float | None:
    """When the current run of failures began (rows newest first); None when the newest check passed."""
    failing = getattr(rows, "failing", None)  # a window's history: the run counted whole, past the rows it holds
    if failing:
        return float(failing[1])
    since = None
    for row in rows:
        if row.ok:
            break
        since = row.checked_at
    return since


def excerpt(text: str | None) -> str | None:
    """The start of an answer, on one line, secrets in its URLs hidden."""
    if not text:
        return None
    line = " ".join(urls.redact_text(text).split())
    return line if len(line) <= EXCERPT else line[: EXCERPT - 1] + "…"


def evidence(rows: Sequence[Checked], result: Result | None) -> str:
    """The evidence of an incident opening now, from the target's rows (newest first) and its newest result."""
    newest = rows[0] if rows else None
    found = {
        "url": urls.redact(result.url) if result is not None else None,
        "status_code": newest.status_code if newest else None,
        "error": newest.error if newest else None,
        "detail": excerpt(newest.detail if newest else None),
        "excerpt": excerpt(result.excerpt if result is not None else None),
        "failing_since": failing_since(rows) or (newest.checked_at if newest else None),
    }
    return json.dumps(found)


def read(incident: Incident) -> dict[str, Any]:
    """An incident's evidence as stored (empty when it has none: opened by hand, or before it was kept)."""
    try:
        found = json.loads(incident.evidence or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}
