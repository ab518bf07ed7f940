"""Message templates: a webhook's ``body`` written as a Jinja2 template, rendered in a sandbox.

Jinja2 is a dependency already (the web UI's pages), and its :class:`~jinja2.sandbox.SandboxedEnvironment` is
made for templates people other than the code's authors write: no attribute of Python's internals, ``range``
capped, no file or import. A template sees only plain values (strings, numbers, booleans, dicts of them), and
each value it writes out is redacted as the rest of an alert is (:func:`monitor.core.redaction.redact_text`). A
template that is JSON (its text starts with ``{`` or ``[``, or the webhook sends ``Content-Type: ...json``)
gets each string escaped for a JSON string literal (``"text": "{{ summary }}"`` stays JSON whatever the summary
says), booleans and numbers as JSON, and dicts and lists as JSON objects and arrays; a text template gets them
as they are (dicts and lists as JSON). What it renders is cut at ``LIMIT`` characters.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from jinja2 import TemplateError
from jinja2.sandbox import SandboxedEnvironment

from monitor.core.redaction import redact_text

__all__ = ["LIMIT", "TemplateError", "check", "is_json", "render"]

LIMIT = 256 * 1024  # characters a rendered body may have


def is_json(template: str, headers: dict[str, str] | None = None) -> bool:
    """Whether values are written into ``template`` as JSON (see the module's docstring)."""
    typed = any(key.lower() == "content-type" and "json" in value.lower() for key, value in (headers or {}).items())
    return typed or template.lstrip().startswith(("{", "["))


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {str(key): _redacted(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redacted(item) for item in value]
    return value


def _as_json(value: Any) -> str:
    value = _redacted(value)
    if value is None:
        return ""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)[1:-1]  # inside the template's own quotes
    return json.dumps(value, ensure_ascii=False, default=str)


def _as_text(value: Any) -> str:
    value = _redacted(value)
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


@functools.cache
def _environment(json_body: bool) -> SandboxedEnvironment:
    return SandboxedEnvironment(autoescape=False, finalize=_as_json if json_body else _as_text, keep_trailing_newline=True)


def check(template: str) -> None:
    """Raise :class:`TemplateError` (a ``ValueError`` to the config) if ``template`` does not compile."""
    _environment(False).from_string(template)


def render(template: str, values: dict[str, Any], *, json_body: bool) -> str:
    """``template`` with ``values`` written in (see the module's docstring)."""
    made = _environment(json_body).from_string(template).render(values)
    return made[:LIMIT]
