"""The configuration reference, generated from the pydantic models of ``monitor.config`` at build time.

A MkDocs hook (``hooks:`` in mkdocs.yml): on ``configuration/reference.md`` it replaces ``MARKER`` with one
section per model reachable from :class:`monitor.config.Config`, each a table of every field: its key, type,
default and what it means. The meaning is the field's own ``description=`` where the model gives one, else
``fields.yaml`` beside this file. ``tests/test_docs.py`` holds that every field has one, so the page cannot drift.
"""

from __future__ import annotations

import datetime
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from monitor.config import Config
from monitor.config.conditions import Condition
from monitor.core import kinds

PAGE = "configuration/reference.md"
MARKER = "<!-- generated: the configuration reference -->"
FIELDS = Path(__file__).with_name("fields.yaml")
DURATION_PARSERS = {"parse_duration", "parse_wait"}


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """MkDocs' hook: the reference page gets its tables."""
    if page.file.src_uri != PAGE:
        return markdown
    return markdown.replace(MARKER, render())


def models(root: type[BaseModel] = Config) -> dict[type[BaseModel], list[str]]:
    """Every model reachable from ``root``, in the order first met, with the YAML paths where it appears."""
    found: dict[type[BaseModel], list[str]] = {root: [""]}
    pending = [(root, "")]
    while pending:
        model, path = pending.pop(0)
        for name, field in written(model):
            for child, suffix in nested(field.annotation):
                where = f"{path}.{key_of(name, field)}{suffix}".lstrip(".")
                if child not in found:
                    found[child] = []
                    pending.append((child, where))
                if where not in found[child]:
                    found[child].append(where)
    for kind in kinds.names():  # a kind's own section (``icmp:``) is declared by its module, not by Target
        settings = kinds.get(kind).settings
        if settings is not None and issubclass(settings, BaseModel) and settings not in found:
            found[settings] = [f"targets[].{kind}", f"probe.modules.<name>.{kind}"]
    return found


def written(model: type[BaseModel]) -> list[tuple[str, FieldInfo]]:
    """The fields a config writes: not those kept out of YAML (``exclude``), such as a kind's parsed section."""
    return [(name, field) for name, field in model.model_fields.items() if not field.exclude]


def nested(annotation: Any, suffix: str = "") -> Iterator[tuple[type[BaseModel], str]]:
    """The models inside an annotation, each with what follows the key in its path (``[]``, ``.<name>``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, suffix
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        yield from nested(args[0], suffix)
    elif origin in (list, tuple, frozenset, set):
        for arg in args:
            yield from nested(arg, suffix + "[]")
    elif origin is dict:
        yield from nested(args[1], suffix + ".<name>")
    else:
        for arg in args:
            yield from nested(arg, suffix)


def key_of(name: str, field: FieldInfo) -> str:
    """The key as written in YAML (``json`` for ``json_``)."""
    return field.alias or name


def descriptions() -> dict[str, dict[str, Any]]:
    loaded: dict[str, dict[str, Any]] = yaml.safe_load(FIELDS.read_text())
    return loaded


def described(model: type[BaseModel], name: str, table: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """What ``model.name`` means (``text``, and ``default`` where given): its own description, or fields.yaml's
    entry for the model or the first base that has one."""
    field = model.model_fields[name]
    if field.description:
        return {"text": field.description}
    for base in model.__mro__:
        entry = table.get(base.__name__, {}).get(name)
        if entry is not None:
            return entry if isinstance(entry, dict) else {"text": entry}
    return None


def missing() -> list[str]:
    """``Model.field`` of every field with no description."""
    table = descriptions()
    return [f"{m.__name__}.{n}" for m in models() for n, _ in written(m) if described(m, n, table) is None]


def stale() -> list[str]:
    """``Model.field`` of every description in fields.yaml that names no field of a model reached from Config."""
    names = {m.__name__: m for m in models()}
    return [
        f"{model}.{field}"
        for model, entries in descriptions().items()
        for field in entries
        if model not in names or field not in names[model].model_fields
    ]


def render() -> str:
    """The reference: a section per model, a row per field."""
    table = descriptions()
    found = models()
    sections = [section(model, paths, table, found) for model, paths in found.items()]
    return "\n".join(sections)


def section(model: type[BaseModel], paths: list[str], table: dict[str, dict[str, Any]], found: dict[type[BaseModel], list[str]]) -> str:
    title = "The top level" if paths == [""] else f"`{paths[0]}`"
    lines = [f"## {title} {{#{anchor(model)}}}", ""]
    if len(paths) > 1:
        lines += ["Also at " + ", ".join(f"`{p}`" for p in paths[1:]) + ".", ""]
    lines += ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name, field in written(model):
        entry = described(model, name, table) or {"text": ""}
        default = entry["default"] if "default" in entry else default_of(field)
        row = [f"`{key_of(name, field)}`", type_of(field.annotation, field.metadata, found), default, one_line(entry["text"])]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    return "\n".join(lines) + "\n"


def anchor(model: type[BaseModel]) -> str:
    return model.__name__.lower()


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def type_of(annotation: Any, metadata: list[Any], found: dict[type[BaseModel], list[str]]) -> str:
    """A reader's name for a field's type, with its bounds."""
    named = name_of(annotation, metadata, found)
    bounds = bounds_of(metadata)
    return f"{named} ({bounds})" if bounds else named


def name_of(annotation: Any, metadata: list[Any], found: dict[type[BaseModel], list[str]]) -> str:
    parsers = {getattr(getattr(m, "func", None), "__name__", "") for m in metadata}
    if parsers & DURATION_PARSERS:
        return "duration"
    if "parse_workers" in parsers:
        return "integer or `auto`"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{anchor(annotation)})" if annotation in found else annotation.__name__
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return name_of(args[0], [*metadata, *args[1:]], found)
    if origin is typing.Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        kinds = [name_of(a, metadata, found) for a in args if a is not type(None)]
        return " or ".join(kinds) + (" or none" if type(None) in args else "")
    if origin in (list, tuple, frozenset, set):
        return "list of " + name_of(args[0], [], found)
    if origin is dict:
        return "map of " + name_of(args[1], [], found)
    return SIMPLE.get(annotation, getattr(annotation, "__name__", str(annotation)))


SIMPLE: dict[Any, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "text",
    SecretStr: "secret text",
    datetime.datetime: "date and time (ISO 8601)",
    typing.Any: "any value",
    Condition: "condition (text, Gatus' syntax)",
}


def bounds_of(metadata: list[Any]) -> str:
    said = []
    for m in metadata:
        for kind, attribute, word in ((Ge, "ge", "≥"), (Gt, "gt", ">"), (Le, "le", "≤"), (Lt, "lt", "<")):
            if isinstance(m, kind):
                said.append(f"{word} {getattr(m, attribute)}")
        if isinstance(m, MinLen):
            said.append(f"at least {m.min_length} long")
        if isinstance(m, MaxLen):
            said.append(f"at most {m.max_length} long")
        if getattr(m, "pattern", None):
            said.append(f"matching `{m.pattern}`")
    return ", ".join(said)


def default_of(field: FieldInfo) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "its own defaults"
    return shown(value, duration=any(getattr(getattr(m, "func", None), "__name__", "") in DURATION_PARSERS for m in field.metadata))


def shown(value: Any, *, duration: bool = False) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if duration and isinstance(value, int | float):
        return f"`{seconds(float(value))}`"
    if isinstance(value, (list, tuple, frozenset, set)) and not value:
        return "`[]`"
    if isinstance(value, dict) and not value:
        return "`{}`"
    if value == "":
        return '`""`'
    return f"`{value}`"


def seconds(value: float) -> str:
    """A duration as written in a config: ``200ms``, ``30s``, ``10m``, ``1d``."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if value >= size and value % size == 0:
            return f"{int(value // size)}{unit}"
    if value < 1:
        return f"{round(value * 1000)}ms"
    return f"{value:g}s"
