"""A target's ``conditions:``, Gatus-like, parsed at config load: each is ``LEFT OP RIGHT``::

    [STATUS] == 200                     [STATUS] == any(200, 204)
    [RESPONSE_TIME] < 300               (milliseconds; 300ms, 1.5s also read)
    [BODY].status == UP                 [BODY].data.items[0].id != 0   (a JMESPath after [BODY])
    len([BODY].data.items) > 0          has([BODY].errors) == false
    [BODY] == pat(*"ok"*)               [BODY] != pat(*error*)          (a glob: contains / does not contain)
    [CERTIFICATE_EXPIRATION] > 48h      [CONNECTED] == true

Operators: ``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``. A right side is a number, a duration (``48h``), a word
(``UP``), a quoted string, ``true``/``false``/``null``, ``pat(GLOB)``, ``any(A, B, ...)``, or a placeholder. A
:class:`Condition` is a value; :mod:`monitor.checks.conditions` judges what a check saw against it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import PlainSerializer, PlainValidator

from monitor.config.errors import shown

PLACEHOLDERS = ("STATUS", "RESPONSE_TIME", "BODY", "CERTIFICATE_EXPIRATION", "CONNECTED")
TIMES = ("RESPONSE_TIME", "CERTIFICATE_EXPIRATION")  # in milliseconds: a duration on the other side is read as one
OPERATORS = ("==", "!=", "<=", ">=", "<", ">")
MAX_CHARS = 1000
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0, "d": 86_400_000.0}
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")
_CLOSING = {"[": "]", "(": ")", "{": "}"}
EXAMPLE = "e.g. [STATUS] == 200, [RESPONSE_TIME] < 300 or len([BODY].items) > 0"


@dataclass(frozen=True)
class Operand:
    """One side: a placeholder (with a JSON path for BODY), ``len``/``has`` of one, a literal, ``pat`` or ``any``."""

    form: str  # placeholder, len, has, literal, pat, any
    text: str  # as written
    name: str = ""  # the placeholder's name
    path: str = ""  # the JMESPath after [BODY], "" for the whole body
    values: tuple[Any, ...] = ()  # a literal's value, pat's glob, any's choices

    @property
    def numeric(self) -> bool:
        """Whether the operand is a number by construction (a time, a status, a length)."""
        return (
            self.form == "len"
            or (self.form == "placeholder" and self.name in (*TIMES, "STATUS"))
            or (self.form == "literal" and isinstance(self.values[0], (int, float)) and not isinstance(self.values[0], bool))
        )


@dataclass(frozen=True)
class Condition:
    text: str
    left: Operand
    operator: str
    right: Operand

    def __str__(self) -> str:
        return self.text

    @property
    def placeholders(self) -> set[str]:
        return {side.name for side in (self.left, self.right) if side.name}


def parse(text: Any) -> Condition:
    """A condition, or a ValueError that says what is wrong with it."""
    if isinstance(text, Condition):
        return text
    if not isinstance(text, str):
        raise ValueError(f"a condition is text like {EXAMPLE}, not {shown(text)}")
    text = text.strip()
    if not text or len(text) > MAX_CHARS:
        raise ValueError(f"a condition is 1 to {MAX_CHARS} characters, {EXAMPLE}")
    at, operator = _operator(text)
    left, right = _operand(text[:at].strip(), text), _operand(text[at + len(operator) :].strip(), text)
    if left.form in ("pat", "any", "literal"):
        raise ValueError(f"{shown(text)}: the left side must be a placeholder, len() or has() ({EXAMPLE})")
    if right.form in ("pat", "any") and operator not in ("==", "!="):
        raise ValueError(f"{shown(text)}: {right.form}() goes with == or != only")
    if operator not in ("==", "!=") and not (left.numeric or right.numeric):
        raise ValueError(f"{shown(text)}: {operator} compares numbers: one side must be a number, a time, [STATUS] or len()")
    return Condition(text, left, operator, _as_time(right) if left.name in TIMES else right)


def _operator(text: str) -> tuple[int, str]:
    """Where the one top-level operator is, outside brackets and quotes."""
    found: list[tuple[int, str]] = []
    stack: list[str] = []
    quote, index = "", 0
    while index < len(text):
        char = text[index]
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char in _CLOSING:
            stack.append(_CLOSING[char])
        elif stack and char == stack[-1]:
            stack.pop()
        elif not stack:
            operator = next((op for op in OPERATORS if text.startswith(op, index)), None)
            if operator is not None:
                found.append((index, operator))
                index += len(operator)
                continue
        index += 1
    if quote or stack:
        raise ValueError(f"{shown(text)}: an unclosed {quote or 'bracket'}")
    if len(found) != 1:
        raise ValueError(
            f"{shown(text)}: a condition is LEFT OP RIGHT with one of {', '.join(OPERATORS)} "
            f"({'none' if not found else len(found)} found), {EXAMPLE}"
        )
    return found[0]


def _operand(side: str, text: str) -> Operand:
    if not side:
        raise ValueError(f"{shown(text)}: a side of the comparison is empty ({EXAMPLE})")
    call = re.fullmatch(r"(len|has|pat|any)\((.*)\)", side, re.DOTALL)
    if call is not None:
        function, inside = call.group(1), call.group(2).strip()
        if function in ("len", "has"):
            inner = _placeholder(inside, text)
            if inner is None:
                raise ValueError(f"{shown(text)}: {function}() takes a placeholder, e.g. {function}([BODY].items)")
            return Operand(function, side, inner.name, inner.path)
        if function == "pat":
            return Operand("pat", side, values=(_unquoted(inside),))
        choices = tuple(_literal(choice.strip()) for choice in inside.split(",") if choice.strip())
        if not choices:
            raise ValueError(f"{shown(text)}: any() needs at least one value, e.g. any(200, 204)")
        return Operand("any", side, values=choices)
    return _placeholder(side, text) or Operand("literal", side, values=(_literal(side),))


def _placeholder(side: str, text: str) -> Operand | None:
    match = re.fullmatch(r"\[([A-Za-z_]+)\](.*)", side, re.DOTALL)
    if match is None:
        return None
    name, path = match.group(1), match.group(2).strip()
    if name not in PLACEHOLDERS:
        raise ValueError(
            f"{shown(text)}: unknown placeholder [{shown(name, 40)[1:-1]}] (known: {', '.join(f'[{p}]' for p in PLACEHOLDERS)})"
        )
    if path and name != "BODY":
        raise ValueError(f"{shown(text)}: only [BODY] takes a path, e.g. [BODY].data.id")
    if path:
        path = json_path(path, text)
    return Operand("placeholder", side, name, path)


def json_path(path: str, text: str) -> str:
    """The JMESPath after ``[BODY]`` (``.data.items[0]`` -> ``data.items[0]``), compiled to find its errors."""
    import jmespath
    from jmespath.exceptions import JMESPathError

    if not path.startswith((".", "[")):
        raise ValueError(f"{shown(text)}: a path after [BODY] starts with . or [, e.g. [BODY].data.items[0]")
    expression = path[1:] if path.startswith(".") else path
    try:
        jmespath.compile(expression)
    except JMESPathError as exc:
        reason = str(exc).splitlines()[0]
        raise ValueError(f"{shown(text)}: {shown(expression, 80)} is not a JMESPath expression: {reason}") from None
    return expression


def _literal(word: str) -> Any:
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"":
        return word[1:-1]
    if word in ("true", "false", "null"):
        return json.loads(word)
    if _NUMBER.match(word):
        number = float(word)
        return int(word) if re.fullmatch(r"-?\d{1,18}", word) else number
    return word


def _unquoted(word: str) -> str:
    return word[1:-1] if len(word) >= 2 and word[0] == word[-1] and word[0] in "'\"" else word


def _as_time(side: Operand) -> Operand:
    """A duration beside a time placeholder (``48h``, ``300ms``) in milliseconds."""
    if side.form != "literal" or not isinstance(side.values[0], str):
        return side
    match = _DURATION.match(side.values[0])
    if match is None:
        raise ValueError(f"{side.text!r} is not a time: write milliseconds (300) or a duration (300ms, 2s, 48h, 30d)")
    return Operand("literal", side.text, values=(float(match.group(1)) * _UNIT_MS[match.group(2)],))


def unavailable(condition: Condition, kind: str, url: str) -> str | None:
    """Why ``condition`` cannot be judged on a ``kind`` target (a placeholder it does not see), or None."""
    seen = {"http": set(PLACEHOLDERS), "tls": {"RESPONSE_TIME", "CONNECTED", "CERTIFICATE_EXPIRATION"}}.get(
        kind, {"RESPONSE_TIME", "CONNECTED"} if kind != "heartbeat" else set()
    )
    if kind == "http" and not url.lower().startswith("https:"):
        seen = seen - {"CERTIFICATE_EXPIRATION"}
    missing = sorted(condition.placeholders - seen)
    if not missing:
        return None
    where = "an http:// target" if kind == "http" else f"a {kind} target"
    return f"{shown(condition.text)}: {where} has no [{missing[0]}] (it has {', '.join(f'[{p}]' for p in sorted(seen)) or 'none'})"


ConditionText = Annotated[Condition, PlainValidator(parse), PlainSerializer(str, return_type=str)]
