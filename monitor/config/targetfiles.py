"""Target files: a fleet listed in files beside the config, as Prometheus' ``file_sd`` lists scrape targets.

``target_files: [targets/*.yaml, fleet.json]`` in the config names them by glob, relative to the config
file's directory (``**`` crosses directories). Each file is a list of targets in the schema of ``targets:``
(``- {name: web-1, url: 'http://10.0.0.1/health'}``): YAML, or JSON when its name ends in ``.json`` (read by
the standard library's parser: 50,000 targets load in half the time of YAML's, see bench/target_files.py). ``defaults`` and
``${VAR}`` apply as to the config's own targets. The loader (:mod:`monitor.config.loader`) validates them
and checks names across every file; this module finds and reads the files.

A file is hostile input with bounds of its own, larger than a config file's: ``MAX_FILE_BYTES``,
``MAX_FILE_NODES`` (a target is about 5 nodes, 10 with a heartbeat), nesting of ``MAX_DEPTH``. At most
``MAX_FILES`` files and ``MAX_TARGETS`` targets in all. The globs walk each real directory once, so a
symlink loop ends, and read at most :data:`monitor.config.globs.WALK_LIMIT` directory entries; a file
named twice (through a link) is read once.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from monitor.config.errors import ConfigError, shown
from monitor.config.globs import TooLarge, Walk
from monitor.config.safeyaml import Lines, YamlError, decode
from monitor.config.substitution import SubstitutionError, substitute

MAX_FILES = 10_000
MAX_FILE_BYTES = 16 << 20
MAX_FILE_NODES = 1_000_000
MAX_FILE_CHARS = 64 << 20
MAX_DEPTH = 64
MAX_TARGETS = 100_000

Problem = tuple[str, str]  # (field path, what is wrong), as pydantic's problems are rendered


@dataclass(frozen=True)
class TargetFile:
    """One file's targets as written (after ``${VAR}``), and the line of each field."""

    source: str
    targets: list[Any]
    lines: Lines


class FileError(ConfigError):
    """A file that cannot be read as a list of targets: ``line`` when known."""

    def __init__(self, message: str, line: int | None = None, where: str = "") -> None:
        super().__init__(message)
        self.message, self.line, self.where = message, line, where


def read_bytes(path: Path, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of a regular file (a FIFO would block a reload); :class:`FileError` if not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise FileError("not a regular file")
            return file.read(limit + 1)
    except OSError as exc:
        raise FileError(f"cannot read: {exc.strerror or exc}") from None


def expand(patterns: list[str], base: Path) -> tuple[list[Path], list[Problem]]:
    """The files the globs name, each once (by its real path), in order (sorted within a glob); a plain path
    that is missing is a problem, a glob that matches nothing is not (its files may come later, as with file_sd)."""
    found: dict[str, Path] = {}
    problems: list[Problem] = []
    walk = Walk()
    for index, pattern in enumerate(patterns):
        if re.search(r"[*?\[]", pattern):
            try:
                matches = walk.glob(pattern, base)
            except TooLarge as exc:
                problems.append((f"target_files[{index}]", f"{shown(pattern)}: {exc}; name the files more narrowly"))
                break
        elif (base / pattern).exists():
            matches = [base / pattern]
        else:
            problems.append(
                (
                    f"target_files[{index}]",
                    f"{shown(pattern)}: no such file (paths are relative to the config file's directory, {shown(str(base))})",
                )
            )
            continue
        for path in matches:
            if not path.is_dir():
                found.setdefault(os.path.realpath(path), path)
        if len(found) > MAX_FILES:
            problems.append(
                (f"target_files[{index}]", f"more than {MAX_FILES:,} target files (the most a config reads); put more targets in each")
            )
            break
    return list(found.values()), problems


def read(path: Path) -> TargetFile:
    """One target file, within its bounds; :class:`FileError` with the line when it cannot be used."""
    text = _text(read_bytes(path, MAX_FILE_BYTES))
    targets, lines = _json(text) if path.suffix.lower() == ".json" else _yaml(text)
    if targets is None:
        targets = []
    if not isinstance(targets, list):
        raise FileError(
            "a target file holds a list of targets (- {name: web-1, url: 'http://...'}), "
            f"not {'a mapping' if isinstance(targets, dict) else type(targets).__name__}"
        )
    try:
        return TargetFile(str(path), substitute(targets), lines)
    except SubstitutionError as exc:
        raise FileError(exc.message, lines.line_of(exc.where), exc.where) from None


def _text(data: bytes) -> str:
    try:
        return decode(data, MAX_FILE_BYTES)
    except YamlError as exc:
        raise FileError(_bounded(exc), exc.line) from None


def _bounded(exc: YamlError) -> str:
    return f"{exc.message}, the most a target file holds: split it into more files" if exc.bound else exc.message


def _yaml(text: str) -> tuple[Any, Lines]:
    from monitor.config import safeyaml

    try:
        return safeyaml.load(
            text.encode(), max_bytes=MAX_FILE_BYTES, max_depth=MAX_DEPTH, max_nodes=MAX_FILE_NODES, max_chars=MAX_FILE_CHARS
        )
    except YamlError as exc:
        raise FileError(_bounded(exc), exc.line, exc.where) from None


_SPACE = re.compile(r"[ \t\n\r]*")


class _DuplicateKey(ValueError):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


def _json(text: str) -> tuple[Any, Lines]:
    """The list in a JSON file, read one target at a time so that each target's line is known."""
    decoder = json.JSONDecoder(object_pairs_hook=_unique)
    start = _SPACE.match(text).end()  # type: ignore[union-attr]
    if not text.startswith("[", start):
        return _json_value(decoder, text, start, 1)[0], Lines()
    targets: list[Any] = []
    lines: dict[str, int] = {}
    at, line, counted = _SPACE.match(text, start + 1).end(), 1, 0  # type: ignore[union-attr]
    while not (at < len(text) and text[at] == "]" and not targets):
        line, counted = line + text.count("\n", counted, at), at
        lines[f"[{len(targets)}]"] = line
        target, at = _json_value(decoder, text, at, line)
        targets.append(target)
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text.startswith(",", at):
            at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
        elif text.startswith("]", at):
            break
        else:
            raise FileError(
                f"invalid JSON at column {at - text.rfind(chr(10), 0, at)}: Expecting ',' delimiter", text.count("\n", 0, at) + 1
            )
    return _bounded_json(targets, text, at, lines)


def _json_value(decoder: json.JSONDecoder, text: str, at: int, line: int) -> tuple[Any, int]:
    try:
        value, end = decoder.raw_decode(text, at)
        return value, end
    except json.JSONDecodeError as exc:
        raise FileError(f"invalid JSON at column {exc.colno}: {exc.msg}", exc.lineno) from None
    except _DuplicateKey as exc:
        raise FileError(f"duplicate key {shown(str(exc))} in one object; write each key once", line) from None
    except RecursionError:
        raise FileError(f"nested deeper than {MAX_DEPTH} levels", line) from None


def _bounded_json(targets: list[Any], text: str, at: int, lines: dict[str, int]) -> tuple[Any, Lines]:
    """What YAML's reader refuses, a JSON file is refused too: trailing text, too deep, too many nodes."""
    rest = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
    if rest < len(text):
        raise FileError(f"invalid JSON: text after the list ({shown(text[rest : rest + 20])})", text.count("\n", 0, rest) + 1)
    nodes, stack = 1, [(target, 2, lines[f"[{index}]"]) for index, target in enumerate(targets)]
    while stack:
        value, depth, line = stack.pop()
        nodes += 1 + (len(value) if isinstance(value, dict) else 0)  # a key is a node, as in YAML
        if nodes > MAX_FILE_NODES:
            raise FileError(f"more than {MAX_FILE_NODES:,} nodes, the most a target file holds: split it into more files", line)
        if depth > MAX_DEPTH and isinstance(value, (dict, list)):
            raise FileError(f"nested deeper than {MAX_DEPTH} levels", line)
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((child, depth + 1, line) for child in children)
    return targets, Lines(lines)
