"""YAML read as hostile input: bounded in size, depth and alias expansion, with the line of every field.

``load(data)`` returns the document and a :class:`Lines` that maps a field's path
(``targets[2].expect.status``) to the line it was written on, or raises
:class:`YamlError` with that line. What it refuses, and why:

- more than ``max_bytes`` (a config is a few KB; this bounds everything else);
- text that is not UTF-8;
- nesting deeper than ``max_depth``, or more than ``max_nodes`` nodes, counted on the event stream
  before a tree is built (a composer recurses once per level: deep nesting is a RecursionError);
- aliases that expand past ``max_nodes`` nodes or ``max_chars`` characters (a 1 KB "billion laughs"
  is cheap for the parser, but every consumer that copies the tree pays for it in full), and
  recursive aliases;
- a key written twice in one mapping (YAML says it is an error; PyYAML keeps the last silently).

Booleans are YAML 1.2's: only ``true`` and ``false``. ``on``, ``off``, ``yes`` and ``no`` stay strings,
which is what someone writing ``mode: off`` means.
"""

from __future__ import annotations

import functools
import re
from typing import Any


class YamlError(ValueError):
    """The document cannot be read; ``line`` is 1-based, when known."""

    def __init__(self, message: str, line: int | None = None, where: str = "", *, bound: bool = False) -> None:
        super().__init__(message)
        self.message, self.line, self.where = message, line, where
        self.bound = bound  # refused for its size (bytes, nodes, expanded text), not for what it says


def join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


class Lines:
    """Where each field was written: ``line_of("targets[0].url")``, else its nearest written ancestor."""

    _LAST = re.compile(r"(\.[^.\[]*|\[\d+\])$")

    def __init__(self, lines: dict[str, int] | None = None) -> None:
        self.lines = lines or {}

    def line_of(self, where: str) -> int | None:
        while where:
            if where in self.lines:
                return self.lines[where]
            shorter = self._LAST.sub("", where)
            if shorter == where:
                return None
            where = shorter
        return None


def load(
    data: bytes, *, max_bytes: int = 1 << 20, max_depth: int = 64, max_nodes: int = 100_000, max_chars: int = 8 << 20
) -> tuple[Any, Lines]:
    """The document in ``data`` (None when empty) and where its fields are; :class:`YamlError` if refused."""
    import yaml

    text = decode(data, max_bytes)
    try:
        _prescan(text, max_depth, max_nodes)
        return _compose_and_construct(text, max_depth, max_nodes, max_chars)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        at = f" at column {mark.column + 1}" if mark else ""
        raise YamlError(f"invalid YAML{at}: {problem}", mark.line + 1 if mark else None) from None


def decode(data: bytes, max_bytes: int) -> str:
    """The text of a file of at most ``max_bytes`` of UTF-8; :class:`YamlError` otherwise."""
    if len(data) > max_bytes:
        raise YamlError(
            f"the file is larger than {max_bytes >> 20} MiB" if max_bytes >= 1 << 20 else f"the file is larger than {max_bytes} bytes",
            bound=True,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x}); save the file as UTF-8", data[: exc.start].count(b"\n") + 1
        ) from None


def _prescan(text: str, max_depth: int, max_nodes: int) -> None:
    """Depth and node count from the event stream, before any tree is built.

    The events come from libyaml when it is there: PyYAML's own scanner takes 16 s over a 1 MiB
    flow list, and its composer recurses once per level.
    """
    import yaml

    starts, ends = (yaml.MappingStartEvent, yaml.SequenceStartEvent), (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    nodes = (yaml.ScalarEvent, yaml.AliasEvent, *starts)
    parser = _loader_class()(text)
    depth = count = 0
    try:
        while parser.check_event():
            event = parser.get_event()
            if isinstance(event, nodes):
                count += 1
                if count > max_nodes:
                    raise YamlError(f"more than {max_nodes:,} nodes", _line(event), bound=True)
            if isinstance(event, starts):
                depth += 1
                if depth > max_depth:
                    raise YamlError(f"nested deeper than {max_depth} levels", _line(event))
            elif isinstance(event, ends):
                depth -= 1
    finally:
        parser.dispose()


def _line(event: Any) -> int | None:
    return event.start_mark.line + 1 if event.start_mark is not None else None


def _compose_and_construct(text: str, max_depth: int, max_nodes: int, max_chars: int) -> tuple[Any, Lines]:
    loader = _loader_class()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, Lines()
        lines: dict[str, int] = {}
        _Walk(max_depth, max_nodes, max_chars).check(node, "", lines)
        return loader.construct_document(node), Lines(lines)
    finally:
        loader.dispose()


class _Walk:
    """One pass over the composed nodes: expanded size, depth, cycles, duplicate keys and lines."""

    def __init__(self, max_depth: int, max_nodes: int, max_chars: int) -> None:
        self.max_depth, self.max_nodes, self.max_chars = max_depth, max_nodes, max_chars
        self.sizes: dict[int, tuple[int, int, int]] = {}  # id(node) -> nodes, chars, depth once expanded
        self.open: set[int] = set()

    def check(self, node: Any, where: str, lines: dict[str, int]) -> None:
        nodes, chars, depth = self.size(node, where, lines)
        line = node.start_mark.line + 1
        if depth > self.max_depth:
            raise YamlError(f"aliases nest the document deeper than {self.max_depth} levels", line)
        if nodes > self.max_nodes or chars > self.max_chars:
            raise YamlError(
                f"aliases expand to more than {self.max_nodes:,} nodes or {self.max_chars >> 20} MiB "
                f"of text ({nodes:,} nodes, {chars:,} characters)",
                line,
                bound=True,
            )

    def size(self, node: Any, where: str, lines: dict[str, int]) -> tuple[int, int, int]:
        """Computed once per node object, so aliases cost nothing here however far they expand."""
        import yaml

        key = id(node)
        if key in self.sizes:
            return self.sizes[key]
        if key in self.open:
            raise YamlError("a recursive alias (an anchor used inside itself)", node.start_mark.line + 1)
        self.open.add(key)
        nodes, chars, depth = 1, 0, 0
        if isinstance(node, yaml.ScalarNode):
            chars = len(node.value)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                path = f"{where}[{index}]"
                lines.setdefault(path, item.start_mark.line + 1)
                nodes, chars, depth = self.add((nodes, chars, depth), self.size(item, path, lines))
        else:
            self.unique_keys(node, where)
            for key_node, value in node.value:
                path = join(where, str(key_node.value)) if isinstance(key_node, yaml.ScalarNode) else where
                lines.setdefault(path, key_node.start_mark.line + 1)
                nodes, chars, depth = self.add((nodes, chars, depth), self.size(key_node, path, lines))
                nodes, chars, depth = self.add((nodes, chars, depth), self.size(value, path, lines))
        self.open.discard(key)
        self.sizes[key] = (nodes, chars, depth + 1)
        if nodes > self.max_nodes or chars > self.max_chars or depth > self.max_depth:
            self.check(node, where, lines)
        return self.sizes[key]

    @staticmethod
    def add(total: tuple[int, int, int], part: tuple[int, int, int]) -> tuple[int, int, int]:
        return total[0] + part[0], total[1] + part[1], max(total[2], part[2])

    @staticmethod
    def unique_keys(node: Any, where: str) -> None:
        import yaml

        seen: dict[tuple[str, str], int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            ident, line = (key_node.tag, key_node.value), key_node.start_mark.line + 1
            if ident in seen:
                raise YamlError(f"duplicate key (first at line {seen[ident]}); write each key once", line, join(where, str(key_node.value)))
            seen[ident] = line


@functools.cache
def _loader_class() -> Any:
    import yaml

    bool_tag = "tag:yaml.org,2002:bool"
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        yaml_implicit_resolvers = {
            first: [(tag, regexp) for tag, regexp in resolvers if tag != bool_tag]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            try:
                return super().construct_object(node, deep)
            except yaml.YAMLError:
                raise
            except Exception as exc:  # a timestamp like 2030-13-45, an int past Python's digit limit
                value = repr(node.value)
                value = value if len(value) <= 60 else f"{value[:57]}..."
                raise yaml.constructor.ConstructorError(None, None, f"{value}: {exc}", node.start_mark) from None

    Loader.add_implicit_resolver(bool_tag, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))
    return Loader
