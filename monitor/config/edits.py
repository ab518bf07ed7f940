"""Edits of a config file's text that leave every line but the edited item's as it was, byte for byte.

An :class:`Edit` names a list of the file (``targets``, each item known by its name; ``maintenance``, each window by
its position) and what to do to one item: add one, replace it (PUT: keys not given go), patch it (PATCH, RFC 7386:
``null`` removes a key) or delete it. Where the item's text is, is read off PyYAML's node marks; that text alone is
read by ruamel.yaml's round-trip loader, changed (its comments and the order of its keys kept), dumped, and spliced
back in place. The rest of the file is never parsed into values or written out again, so ``git diff`` shows the item
and nothing else.

A value sent back as the API showed it, redacted (``https://***@host/``), stands for the value in the file: a client
that reads a target, changes one field and puts the whole target back does not overwrite a secret with stars.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap

from monitor.core.urls import redacted

SECTIONS = ("targets", "maintenance")
Op = Literal["add", "replace", "patch", "delete"]
DASH = re.compile(r"[ ]*-[ ]+")


class EditError(ValueError):
    """An edit that cannot be made; ``status`` is the HTTP answer it calls for (404: no such item, 409: it cannot be
    edited here, 412: the file changed since the version the edit was made against, 422: the result is no config)."""

    def __init__(self, message: str, status: int = 409) -> None:
        super().__init__(message)
        self.message, self.status = message, status


@dataclass(frozen=True)
class Edit:
    """One change to one item: ``key`` is a target's name or a window's index (None to add one)."""

    section: str
    op: Op
    key: str | int | None = None
    value: dict[str, Any] | None = None

    def said(self) -> str:
        """The edit in words, for the log: ``patch targets/api``."""
        return f"{self.op} {self.section}" + ("" if self.key is None else f"/{self.key}")


def item_key(section: str, item: Any, index: int) -> str | int:
    """How an item of ``section`` is named in the API: a target by its name, a window by its position."""
    return str(item.get("name")) if section == "targets" and isinstance(item, dict) else index


def apply(text: str, edit: Edit) -> str:
    """``text`` with ``edit`` made to it; :class:`EditError` when it cannot be."""
    if edit.section not in SECTIONS:
        raise EditError(f"no list {edit.section!r} to edit: one of {', '.join(SECTIONS)}", 404)
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        raise EditError("the config's top level is not a mapping")
    found = next(((k, v) for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == edit.section), None)
    if edit.op == "add":
        return _added(text, edit.section, found, edit.value or {})
    if found is None or not isinstance(found[1], yaml.SequenceNode):
        raise EditError(f"{edit.section} has no item {edit.key!r}", 404)
    item = found[1].value[_index(found[1], edit)]
    start, end, column = _region(text, item)
    if edit.op == "delete" and len(found[1].value) == 1:  # an empty list, not a null one
        return text[: found[0].start_mark.index] + f"{edit.section}: []" + ("\n" if text[:end].endswith("\n") else "") + text[end:]
    if edit.op == "delete":
        return text[:start] + text[end:]
    if item.flow_style:  # the mapping's own text: what follows it on its line stays as it is
        start, end, column = item.start_mark.index, item.end_mark.index, 0
    return text[:start] + _changed(text[start:end], column, edit) + text[end:]


def written(text: str, section: str, key: str | int) -> str:
    """An item's own lines as the file has them, comments kept, at the left margin (what its edit page shows)."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    found = next((v for k, v in getattr(root, "value", []) if isinstance(k, yaml.ScalarNode) and k.value == section), None)
    if not isinstance(found, yaml.SequenceNode):
        raise EditError(f"{section} has no item {key!r}", 404)
    start, end, column = _region(text, found.value[_index(found, Edit(section, "patch", key))])
    return _snippet(text[start:end], column)[1]


def _index(sequence: yaml.SequenceNode, edit: Edit) -> int:
    if sequence.flow_style and sequence.value:
        raise EditError(
            f"{edit.section}: is written as a flow list ([...]): write it as a block list (a line `- ` per item) to edit it here"
        )
    if isinstance(edit.key, int):
        if 0 <= edit.key < len(sequence.value):
            return edit.key
    else:
        for index, node in enumerate(sequence.value):
            if isinstance(node, yaml.MappingNode) and any(k.value == "name" and v.value == edit.key for k, v in node.value):
                return index
    raise EditError(f"{edit.section} has no item {edit.key!r}", 404)


def _region(text: str, item: yaml.Node) -> tuple[int, int, int]:
    """Where an item of a block list is: from the start of its dash's line to the end of its last value's line, and
    the column its text starts at."""
    start = text.rfind("\n", 0, item.start_mark.index) + 1
    if not DASH.fullmatch(text[start : item.start_mark.index]):
        raise EditError(f"the item at line {item.start_mark.line + 1} does not start on its own `- ` line: edit it in the file")
    last = _last_end(item)
    end = last.index if last.column == 0 else _line_end(text, last.index)
    return start, end, item.start_mark.column


def _last_end(node: yaml.Node) -> Any:
    """The mark just after a node's last value (a block mapping's own end mark runs on past the comments after it)."""
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        return _last_end(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and not node.flow_style and node.value:
        return _last_end(node.value[-1])
    return node.end_mark


def _line_end(text: str, index: int) -> int:
    newline = text.find("\n", index)
    return len(text) if newline < 0 else newline + 1


def _changed(region: str, column: int, edit: Edit) -> str:
    """An item's lines, changed by ``edit`` through a round trip of those lines alone."""
    prefix, snippet = _snippet(region, column)
    loader = _yaml(snippet)
    try:
        node = loader.load(snippet)
    except Exception as exc:  # ruamel's errors share no base worth naming; an alias to an anchor elsewhere is one
        raise EditError(f"{edit.said()}: its text cannot be edited on its own ({type(exc).__name__}): edit it in the file") from None
    if not isinstance(node, CommentedMap):
        raise EditError(f"{edit.said()}: the item is not a mapping")
    (_put if edit.op == "replace" else _merge)(node, edit.value or {})
    out = _indented(_dumped(loader, node), column, prefix)
    return out if region.endswith("\n") else out.rstrip("\n")


def _snippet(region: str, column: int) -> tuple[str, str]:
    """An item's lines without their dash (returned apart: ``  - ``) and moved ``column`` to the left."""
    lines = region.splitlines(keepends=True)
    prefix, lines[0] = lines[0][:column], " " * column + lines[0][column:]
    return prefix, "".join(line[min(column, len(line) - len(line.lstrip(" "))) :] for line in lines)


def _put(node: CommentedMap, new: dict[str, Any]) -> None:
    """PUT: the keys of ``new``, each kept as written where its value is the same; the others go."""
    for key in [k for k in node if k not in new]:
        del node[key]
    for key, value in new.items():
        if key not in node or not _same(node[key], value):
            node[key] = value


def _merge(node: CommentedMap, patch: dict[str, Any]) -> None:
    """PATCH (RFC 7386): ``null`` removes a key, a mapping is merged into the one there, anything else replaces."""
    for key, value in patch.items():
        if value is None:
            node.pop(key, None)
        elif isinstance(value, dict) and isinstance(node.get(key), CommentedMap):
            _merge(node[key], value)
        elif key not in node or not _same(node[key], value):
            node[key] = value


def _same(old: Any, new: Any) -> bool:
    """True when ``new`` is the value written, or that value as the API shows it (redacted)."""
    return bool(old == new or redacted(old) == new)


def _added(text: str, section: str, found: tuple[yaml.Node, yaml.Node] | None, value: dict[str, Any]) -> str:
    """``text`` with an item added at the end of ``section``, written as the list's last item is (block or flow)."""
    if found is not None and isinstance(found[1], yaml.SequenceNode) and found[1].value:
        if found[1].flow_style:
            raise EditError(
                f"{section}: is written as a flow list ([...]): write it as a block list (a line `- ` per item) to edit it here"
            )
        start, end, column = _region(text, found[1].value[-1])
        prefix = text[start : start + column]
        rendered = _render(value, column, prefix, flow=bool(found[1].value[-1].flow_style))
        head = text[:end] if text[:end].endswith("\n") else text[:end] + "\n"
        return head + rendered + text[end:]
    listed = f"{section}:\n" + _render(value, 2, "- ", flow=False)
    if found is None:
        return (text if text.endswith("\n") or not text else text + "\n") + listed
    key, empty = found
    if not (isinstance(empty, yaml.SequenceNode) or (isinstance(empty, yaml.ScalarNode) and empty.value in ("", "~", "null"))):
        raise EditError(f"{section}: is not a list")
    end = max(empty.end_mark.index, key.end_mark.index)
    return text[: key.start_mark.index] + listed.rstrip("\n") + text[end:]


def _render(value: dict[str, Any], column: int, prefix: str, *, flow: bool) -> str:
    """A new item's lines, its first behind ``prefix`` (``  - ``)."""
    writer = _yaml("")
    writer.default_flow_style = flow
    return _indented(_dumped(writer, CommentedMap(value)), column, prefix)


def _indented(dumped: str, column: int, prefix: str) -> str:
    body = "".join(" " * column + line if line.strip() else line for line in dumped.splitlines(keepends=True))
    return prefix + body[column:]


def _dumped(writer: YAML, node: Any) -> str:
    out = io.StringIO()
    writer.dump(node, out)
    return out.getvalue().removesuffix("...\n")


def _yaml(snippet: str) -> YAML:
    """A round-trip reader and writer that keeps quotes, long lines, and the snippet's indentation of lists."""
    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096
    offset = _list_offset(snippet)
    rt.indent(mapping=2, sequence=offset + 2, offset=offset)
    return rt


def _list_offset(snippet: str) -> int:
    """How far a list's dashes are indented under their key in ``snippet`` (0 when it has no block list)."""
    lines = snippet.splitlines()
    for above, line in zip(lines, lines[1:], strict=False):
        if above.rstrip().endswith(":") and line.lstrip().startswith("- "):
            return max(0, (len(line) - len(line.lstrip())) - (len(above) - len(above.lstrip())))
    return 0
