"""What an investigation has seen of its target: the values it measured and what the target answered.

    Evidence          the status, the error kind, the detail and the answer, and what they name and state
    evidence_of(...)  the evidence of one check result
    answer_of(...)    the target's answer from a check's excerpt, its status line dropped

Recall (:mod:`monitor.memory.recall`) compares past incidents with it; never a tool's wording around the values.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from monitor.core.causes import NOT_ACTIONABLE
from monitor.memory import components, kinds
from monitor.memory.embedding import evidence_text

WORD = re.compile(r"[^\W_][\w-]*[^\W_]|[^\W_\d]", re.UNICODE)


def words(text: str) -> set[str]:
    return {w for w in WORD.findall(text.lower()) if len(w) > 1 or not w.isascii()}


@dataclass(frozen=True)
class Evidence:
    """What this investigation has seen of the target: the values, not any tool's wording around them."""

    target: str
    reading: str | None = None  # the literal root cause of the check history (patterns.read_cause)
    status_code: int | None = None
    error: str | None = None
    detail: str = ""
    answer: str = ""  # what the target answered (status line dropped: status_code says it)
    rechecked: bool = False  # from a re-check in this investigation, not only from stored results

    @functools.cached_property
    def names(self) -> frozenset[str]:
        """The components the answer and detail name (:func:`monitor.memory.components.written`): hosts,
        upstreams, clusters, services' names; not a header's name, a ticket or an English compound."""
        return frozenset(components.written(f"{self.answer}\n{self.detail}"))

    def kinds(self, cause: str | None) -> dict[str, str]:
        """The kinds of failure this evidence states under ``cause`` (:func:`monitor.memory.kinds.of`)."""
        return kinds.of(f"{self.error or ''}\n{self.detail}\n{self.answer}", cause, self.status_code)

    def text(self) -> str:
        return evidence_text(status_code=self.status_code, error=self.error, body=self.answer, hosts=sorted(self.names), detail=self.detail)

    @property
    def actionable(self) -> bool:
        return self.reading not in NOT_ACTIONABLE


def evidence_of(
    target: str,
    status_code: int | None,
    error: str | None,
    detail: str,
    excerpt: str | None,
    *,
    reading: str | None = None,
    rechecked: bool = False,
) -> Evidence:
    """Evidence from one check result. A detail that only restates the status ("status 503 not in expected
    codes") is the checker's wording, not evidence, and is left out."""
    own = "" if error == "unexpected_status" else detail
    return Evidence(target, reading, status_code, error, own, answer_of(excerpt), rechecked)


def answer_of(excerpt: str | None) -> str:
    """The target's answer from a check's excerpt, less its ``HTTP 503`` status line (or the status that starts it,
    as an incident's evidence keeps an excerpt: on one line)."""
    lines = (excerpt or "").splitlines()
    if lines and re.fullmatch(r"HTTP \d{3}", lines[0]):
        return "\n".join(lines[1:]).strip()
    return re.sub(r"^HTTP \d{3} ", "", "\n".join(lines)).strip()
