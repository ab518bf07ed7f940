"""Judging a target's ``conditions`` (:mod:`monitor.config.conditions`) against what one check saw.

Every condition is judged, and each that fails is named with what was seen, in the check's own words
(``[RESPONSE_TIME] (412ms) < 300 failed``); a value from the body is the target's text, so it is quoted in
the excerpt, never in the detail. A body that is not JSON, nested too deeply or too odd for a path is a
failed condition, never an exception. A failure that involves only times (``[RESPONSE_TIME]``,
``[CERTIFICATE_EXPIRATION]``) is a WARNING, as ``expect.max_latency`` is; any other is CRITICAL.
"""

from __future__ import annotations

import fnmatch
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from monitor.config.conditions import TIMES, Condition, Operand
from monitor.core import errors
from monitor.core.results import CRITICAL, OK, WARNING

QUOTE_CHARS = 200
SEVERITY_ORDER = {OK: 0, WARNING: 1, CRITICAL: 2}


class Missing(Exception):
    """A side that has no value in this check (no certificate, a body that is not JSON); its words are ours."""


@dataclass
class Seen:
    """What a check saw, as the placeholders read it."""

    latency_ms: float
    connected: bool = True
    status: int | None = None
    body: bytes | None = None
    cert_expires_at: float | None = None
    now: float = 0.0
    _document: Any = field(default=None, repr=False)
    _parsed: bool = field(default=False, repr=False)

    def document(self) -> Any:
        """The body as JSON, parsed once; Missing if it is none."""
        if not self._parsed:
            self._parsed = True
            try:
                self._document = Missing("the body is not JSON") if self.body is None else json.loads(self.body)
            except (ValueError, UnicodeDecodeError):
                self._document = Missing("the body is not JSON")
            except RecursionError:
                self._document = Missing("the body is JSON nested too deeply to read")
        if isinstance(self._document, Missing):
            raise self._document
        return self._document


@dataclass(frozen=True)
class Failure:
    detail: str  # our words: the condition and the numbers we measured
    quote: str | None  # the target's text it saw, for the excerpt
    severity: str


def failures(conditions: Sequence[Condition], seen: Seen) -> list[Failure]:
    """The conditions that failed, in order, each with what was seen."""
    out = []
    for condition in conditions:
        failure = judge(condition, seen)
        if failure is not None:
            out.append(failure)
    return out


def judge(condition: Condition, seen: Seen) -> Failure | None:
    severity = WARNING if condition.placeholders and condition.placeholders <= set(TIMES) else CRITICAL
    try:
        left = value(condition.left, seen)
        if _holds(left, condition.operator, condition.right, seen):
            return None
        shown, quote = _shown(condition.left, left)
        return Failure(f"{_named(condition, shown)} failed", quote, severity)
    except Missing as missing:
        return Failure(f"{condition.text} failed: {missing}", None, severity)
    except (RecursionError, ValueError, TypeError, OverflowError, MemoryError) as exc:
        return Failure(f"{condition.text} failed: could not be judged ({type(exc).__name__})", None, severity)
    except Exception as exc:  # JMESPath's own errors at search time (a function given the wrong type)
        if type(exc).__module__.startswith("jmespath"):
            return Failure(f"{condition.text} failed: the path does not apply to this body ({type(exc).__name__})", None, severity)
        raise


def value(side: Operand, seen: Seen) -> Any:
    """What a side stands for in this check."""
    if side.form == "literal":
        return side.values[0]
    if side.form == "has":
        try:
            return _placeholder(side, seen) is not None
        except Missing:
            return False
    found = _placeholder(side, seen)
    if side.form != "len":
        return found
    if found is None:
        raise Missing(f"{side.text[4:-1]} is missing")
    return len(found) if isinstance(found, (str, list, dict)) else len(_text(found))


def _placeholder(side: Operand, seen: Seen) -> Any:
    if side.name == "STATUS":
        return seen.status
    if side.name == "RESPONSE_TIME":
        return seen.latency_ms
    if side.name == "CONNECTED":
        return seen.connected
    if side.name == "CERTIFICATE_EXPIRATION":
        if seen.cert_expires_at is None:
            raise Missing("no certificate was seen")
        return (seen.cert_expires_at - seen.now) * 1000
    if not side.path:
        return (seen.body or b"").decode("utf-8", "replace")
    import jmespath

    return jmespath.search(side.path, seen.document())


def _holds(left: Any, operator: str, right_side: Operand, seen: Seen) -> bool:
    if right_side.form == "pat":
        matched = fnmatch.fnmatchcase(_text(left), str(right_side.values[0]))
        return matched == (operator == "==")
    if right_side.form == "any":
        matched = any(_equal(left, choice) for choice in right_side.values)
        return matched == (operator == "==")
    right = value(right_side, seen)
    if operator == "==":
        return _equal(left, right)
    if operator == "!=":
        return not _equal(left, right)
    a, b = _number(left), _number(right)
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[operator]


def _number(found: Any) -> float:
    if isinstance(found, bool) or found is None:
        raise Missing(f"{_text(found)} is not a number")
    if isinstance(found, (int, float)):
        return float(found)
    try:
        number = float(str(found)) if isinstance(found, str) and len(found) < 100 else math.nan
    except ValueError:
        number = math.nan
    if math.isnan(number):
        raise Missing("a value compared as a number is not one")
    return number


def _equal(a: Any, b: Any) -> bool:
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
    return float(a) == float(b) if numbers else _text(a) == _text(b)


def _text(found: Any) -> str:
    """A value as Gatus compares it: strings as they are, JSON's words for the rest, 5.0 as 5."""
    if isinstance(found, str):
        return found
    if isinstance(found, float) and found.is_integer() and abs(found) < 1e18:
        return str(int(found))
    return json.dumps(found, separators=(",", ":"))


def _shown(side: Operand, found: Any) -> tuple[str | None, str | None]:
    """What the left side was, for the detail (numbers we measured) or for the excerpt (the target's text)."""
    if side.name in TIMES and side.form == "placeholder":
        return _duration(found), None
    if side.name in ("STATUS", "CONNECTED") or side.form in ("len", "has"):
        return _text(found), None
    text = _text(found)
    return None, f"{side.text} is {text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + '…'}"


def _duration(ms: float) -> str:
    if abs(ms) < 10_000:
        return f"{ms:.0f}ms"
    return f"{ms / 3_600_000:.1f}h" if abs(ms) < 172_800_000 else f"{ms / 86_400_000:.1f}d"


def _named(condition: Condition, shown: str | None) -> str:
    """``[RESPONSE_TIME] (412ms) < 300``: the condition with what its left side was."""
    if shown is None:
        return condition.text
    return f"{condition.left.text} ({shown}) {condition.operator} {condition.right.text}"


def merged(verdict: tuple[str, str | None, str, str | None], failed: list[Failure]) -> tuple[str, str | None, str, str | None]:
    """An ``expect`` verdict (severity, error, detail, quote) with the conditions that failed added to it."""
    if not failed:
        return verdict
    severity, error, detail, quote = verdict
    worst = max([severity, *(f.severity for f in failed)], key=SEVERITY_ORDER.__getitem__)
    words = "; ".join(f.detail for f in failed)
    quotes = [q for q in (quote, *(f.quote for f in failed)) if q]
    return (
        worst,
        error if severity != OK else errors.CONDITION,
        f"{detail}; {words}" if severity != OK else words,
        "\n".join(quotes) or None,
    )
