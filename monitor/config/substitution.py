"""``${VAR}`` substitution in config values.

``${VAR}`` is the environment variable's value, and an error when it is not set;
``${VAR:-fallback}`` gives a fallback, which may itself hold ``${OTHER}`` (nested
at most 8 deep; a fallback that is not used is not expanded, so its variables
need not be set); ``$${`` is a literal ``${``. Any other ``$`` is kept as written. A value read from the
environment that is a secret (``${DB_PASSWORD}``, or one shaped like a token) is told to
:func:`monitor.core.catalogue.remember`, so that no text shows it (a check's detail names the value it expected).

Inside :func:`unset_allowed` (the commands that only read the database), an unset variable reads as
:func:`placeholder` instead: a heartbeat token or the web UI's token they never use need not be exported.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from monitor.core import catalogue
from monitor.core.redaction import is_secret


class SubstitutionError(ValueError):
    """``where`` (a field's path) holds a ``${`` that cannot be expanded."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(message)
        self.where, self.message = where, message


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_NESTED = 8
_unset: ContextVar[set[str] | None] = ContextVar("monitor_unset_variables", default=None)


@contextlib.contextmanager
def unset_allowed() -> Iterator[set[str]]:
    """Inside, an unset ``${VAR}`` reads as :func:`placeholder` rather than failing; the names read so are added to
    the set this yields."""
    names: set[str] = set()
    token = _unset.set(names)
    try:
        yield names
    finally:
        _unset.reset(token)


def placeholder(name: str) -> str:
    """What an unset variable reads as under :func:`unset_allowed`: a word shaped like a token (it validates where a
    token, a name or a URL's part does), known to anyone, so never used to serve or to send anything."""
    return "unset-" + hashlib.sha256(name.encode()).hexdigest()[:32]


def substitute(node: Any, where: str = "") -> Any:
    """``node`` with every string's ``${...}`` expanded; dict keys are left as written."""
    try:
        return _substitute(node)
    except _Failed as exc:
        path = "".join(reversed(exc.path))
        raise SubstitutionError(where + path if where else path.removeprefix("."), exc.message) from None


class _Failed(ValueError):
    """On its way up, each level adds its key: a path is built only for the one value that failed."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message, self.path = message, list[str]()


def _substitute(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            try:
                out[key] = _substitute(value)
            except _Failed as exc:
                exc.path.append(f".{key}")
                raise
        return out
    if isinstance(node, list):
        items = []
        for index, value in enumerate(node):
            try:
                items.append(_substitute(value))
            except _Failed as exc:
                exc.path.append(f"[{index}]")
                raise
        return items
    if not isinstance(node, str) or "$" not in node:
        return node
    try:
        return _expand(node, 0, 0, live=True)[0]
    except ValueError as exc:
        raise _Failed(str(exc)) from None


def _expand(text: str, i: int, nested: int, *, live: bool) -> tuple[str, int]:
    """Expand ``text`` from ``i``; inside a fallback (``nested``) stop after its closing brace.

    Not ``live``: a fallback that is not used, read only to find where it ends.
    """
    out: list[str] = []
    while i < len(text):
        if nested and text[i] == "}":
            return "".join(out), i + 1
        if text.startswith("$${", i):
            out.append("${")
            i += 3
        elif text.startswith("${", i):
            value, i = _variable(text, i + 2, nested + 1, live=live)
            out.append(value)
        else:
            out.append(text[i])
            i += 1
    if nested:
        raise ValueError("unclosed ${: close it with }, or write $${ for a literal ${")
    return "".join(out), i


def _variable(text: str, i: int, nested: int, *, live: bool) -> tuple[str, int]:
    if nested > _MAX_NESTED:
        raise ValueError(f"${{...}} nested more than {_MAX_NESTED} deep")
    match = _NAME.match(text, i)
    if match is None:
        raise ValueError("unclosed ${: ${ starts an environment variable's name; write $${ for a literal ${")
    name, i = match.group(), match.end()
    if text.startswith("}", i):
        if name in os.environ and live:
            return _secret_kept(name, os.environ[name]), i + 1
        if not live:
            return "", i + 1
        unset = _unset.get()
        if unset is not None:
            unset.add(name)
            return placeholder(name), i + 1
        raise ValueError(f"environment variable ${{{name}}} is not set (set it, or write ${{{name}:-default}})")
    if text.startswith(":-", i):
        fallback, i = _expand(text, i + 2, nested, live=live and name not in os.environ)
        return (_secret_kept(name, os.environ[name]) if name in os.environ and live else fallback), i
    raise ValueError(f"unclosed ${{{name}: write ${{{name}}} or ${{{name}:-default}}")


def _secret_kept(name: str, value: str) -> str:
    """``value``, which ``${name}`` put in the config: a secret (by its name or its shape) is hidden from now on
    wherever a text leaves the process (a condition's expected value is in a check's own words)."""
    catalogue.remember(value, secret=is_secret(name))
    return value
