"""What an investigation found, in one sentence: what a diagnosis says when the model's own words are dropped.

It is built from the evidence's values (:class:`monitor.memory.recall.Evidence`), never from its text: the
root cause in plain words, the status, the error kind, the condition the checker found failed, and a short
quote of the body, redacted (:func:`monitor.core.urls.redact_text`). Never the answer's headers (a server's
name and version) nor a whole body::

    >>> sentence(Evidence("api", status_code=503, error="unexpected_status",
    ...                   answer="Server: nginx/1.25.3\\n\\nupstream pg-main:5432 refused"), "server_error")
    'api: the application answers with 5xx error statuses. Seen: HTTP 503 (unexpected_status); it said: "upstream pg-main:5432 refused".'
"""

from __future__ import annotations

import re

from monitor.core.causes import ROOT_CAUSES
from monitor.core.urls import redact_text
from monitor.memory.recall import Evidence

QUOTE_CHARS = 120  # of the body quoted
DETAIL_CHARS = 160  # of the checker's own words on what failed
# The headers a check's excerpt keeps (monitor.checks.http.EXCERPT_HEADERS) and the status line, as the excerpt
# writes them, on lines of their own before the body, or as an incident's evidence keeps them, on one line.
HEADER_NAMES = r"(?:content-type|server|retry-after|location|www-authenticate)"
HEAD_LINE = re.compile(rf"^(?:HTTP \d{{3}}|{HEADER_NAMES}:.*)$", re.IGNORECASE)
HEADS_IN_LINE = re.compile(  # a value's first word, then its products (Python/3.11.7), comments and parameters
    rf"(?<!\S)(?:HTTP \d{{3}}\s+)?(?:{HEADER_NAMES}:\s*\S+"
    r"(?:\s+(?:[^\s/]+/\S+|\([^)]*\)|[\w-]+=(?:\"[^\"]*\"|[^\s,]+),?))*(?:\s+|$))+",
    re.IGNORECASE,
)


def sentence(evidence: Evidence, cause: str, focus: str | None = None) -> str:
    """``focus: <the cause in plain words>. Seen: HTTP 503 (timeout); failed: <detail>; it said: "<quote>".``"""
    head = f"{focus or evidence.target or 'the target'}: {ROOT_CAUSES.get(cause, cause)}."
    status, error = evidence.status_code, evidence.error
    seen = f"HTTP {status}" + (f" ({error})" if error else "") if status else error or ""
    parts = [f"Seen: {seen}" if seen else "", f"failed: {cut(evidence.detail, DETAIL_CHARS)}" if evidence.detail else ""]
    said = cut(body(evidence.answer), QUOTE_CHARS)
    parts.append(f'it said: "{said}"' if said else "")
    found = "; ".join(part for part in parts if part)
    return f"{head} {found}." if found else head


def body(answer: str) -> str:
    """The body of an answer, on one line: its status line and headers left out."""
    lines = answer.splitlines()
    blank = next((n for n, line in enumerate(lines) if not line.strip()), None)
    if blank is not None:
        lines = [line for line in lines[:blank] if not HEAD_LINE.match(line.strip())] + lines[blank + 1 :]
    return HEADS_IN_LINE.sub("", " ".join(" ".join(lines).split())).strip()


def cut(text: str, limit: int) -> str:
    """``text`` redacted, on one line, cut at a word to ``limit`` characters (redacted first: a cut URL
    keeps no part of its secrets)."""
    line = " ".join(redact_text(text).split())
    if len(line) <= limit:
        return line
    return (line[:limit].rsplit(" ", 1)[0] or line[:limit]).rstrip(" ,;:") + "…"
