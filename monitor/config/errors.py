"""What a bad config says: :class:`ConfigError`, and one rendering of a pydantic error for every loader.

A pydantic :class:`~pydantic.ValidationError` becomes lines of ``source: field.path: what is wrong``; an
unknown field lists the fields allowed at its place. The config loader and the eval's scenario loader
both render their errors here, so that both read the same.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

# pydantic's own steps in an error's location (a validator, a union's branch), not fields the user wrote
_INTERNAL = ("function-", "json-or-python", "union[", "list[", "literal[")


class ConfigError(Exception):
    """Bad configuration: the message is meant for the user, as it is."""


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut short: an error message echoes what was written, never a megabyte of it."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def field_path(loc: tuple[Any, ...]) -> str:
    """``('targets', 2, 'expect', 'status')`` -> ``targets[2].expect.status``, as the user wrote the names."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not str(part).startswith(_INTERNAL):
            name = str(part).removesuffix("_")  # json_ is written json: the trailing _ only dodges a Python name
            out = f"{out}.{name}" if out else name
    return out or "(top level)"


def allowed_fields(root: type[BaseModel], loc: tuple[Any, ...], hidden: tuple[str, ...] = ()) -> str:
    """The fields the model at ``loc`` (a path from ``root``) takes, as they are written; "" if unknown."""
    model: Any = root
    for part in loc:
        if isinstance(part, int):
            continue
        if part not in model.model_fields and hasattr(model, "section_model"):  # a declared kind's own section
            model = model.section_model(part)
        else:
            annotation = getattr(model.model_fields.get(part), "annotation", None)
            candidates = [annotation, *(getattr(annotation, "__args__", ()) or ())]
            candidates += [a for c in candidates for a in (getattr(c, "__args__", ()) or ())]
            model = next((c for c in candidates if isinstance(c, type) and issubclass(c, BaseModel)), None)
        if model is None:
            return ""
    written = {f.alias or n for n, f in model.model_fields.items() if n not in hidden and not f.exclude}
    return ", ".join(sorted(written | set(getattr(model, "sections", list)())))


def problems(error: ValidationError, root: type[BaseModel], *, hidden: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """Each problem as ``(field path, what is wrong)``; an unknown field says what is allowed there."""
    out = []
    for item in error.errors():
        loc = item["loc"]
        if item["type"] == "extra_forbidden":
            message = f"unknown field (allowed here: {allowed_fields(root, loc[:-1], hidden)})"
        elif item["type"] == "missing":
            message = "is required"
        else:
            message = item["msg"].removeprefix("Value error, ")
        out.append((field_path(loc), message))
    return out


def describe(error: ValidationError, source: str, root: type[BaseModel], *, hidden: tuple[str, ...] = ()) -> str:
    """One line per problem: ``source: field.path: what is wrong (what is allowed)``."""
    return "\n".join(f"{source}: {where}: {message}" for where, message in problems(error, root, hidden=hidden))
