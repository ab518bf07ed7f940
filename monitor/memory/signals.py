"""A failing signal: what one check failed on, as a key that says when the same failure comes back.

People's word about a past incident ("this was the same as #12", "#4 was wrong for this") holds for a
failing signal: the target, the status code, the error kind, the kinds of failure the answer states in its
protocol's terms (:mod:`monitor.memory.kinds`) and the start of what it said, with its numbers, ids and
quoted values written as placeholders, so that a timestamp or a request id does not make another signal.

    key(target, status_code, error, text, cause)   the key of one failing signal
    of_incident(row)                               the key of a past incident's signal, from its kept evidence
    of_evidence(evidence)                          the key of an investigation's signal
"""

from __future__ import annotations

import hashlib
import re

from monitor.core.incidents import Incident
from monitor.incidents.evidence import read
from monitor.memory import kinds
from monitor.memory.evidence import Evidence, evidence_of

VARYING = re.compile(r"0x[0-9a-f]+|[0-9a-f]{8,}(?:-[0-9a-f]{4,})*|\d+(?:[.:,]\d+)*", re.IGNORECASE)
QUOTED = re.compile(r"\"[^\"]{0,80}\"|'[^']{0,80}'")
FIRST = 160  # characters of the answer, on one line, that name the failure (an incident keeps 240)


def start(text: str) -> str:
    """The start of ``text`` on one line, as an incident keeps it (its status line dropped)."""
    return re.sub(r"^HTTP \d{3} ", "", " ".join(str(text or "").split()))[:FIRST]


def fingerprint(line: str) -> str:
    """A :func:`start` in lower case, its numbers, hex ids and quoted values as ``#``."""
    return " ".join(VARYING.sub("#", QUOTED.sub("#", line.lower())).split())


def key(target: str, status_code: int | None, error: str | None, text: str) -> str:
    """The key of one failing signal (a short hash of its parts, stable across processes and versions).
    ``text``: what the target answered, else what the checker saw (not its restating of the status)."""
    line = start(text)
    stated = kinds.of(f"{error or ''}\n{line}", None, status_code)
    parts = [target, str(status_code or ""), error or "", ";".join(f"{f}={k}" for f, k in sorted(stated.items())), fingerprint(line)]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


def of_incident(row: Incident) -> str:
    """The key of a past incident's failing signal: its kept evidence (what its target answered when it
    opened), else its summary."""
    opened = read(row)
    if not opened:
        return key(str(row.target), None, None, str(row.summary or ""))
    status = opened.get("status_code")
    code = status if isinstance(status, int) else None
    return of_evidence(evidence_of(str(row.target), code, opened.get("error"), str(opened.get("detail") or ""), opened.get("excerpt")))


def of_evidence(evidence: Evidence) -> str:
    """The key of this investigation's failing signal."""
    return key(evidence.target, evidence.status_code, evidence.error, evidence.answer or evidence.detail)
