"""The files an importer reads and writes, as hostile input: bounded, regular, never quoted, never through a link.

An import is a pure function of its input, so reading a source file must not hang, fill memory or show the
file's lines in a report (a ``file_sd`` path may name a file of secrets). What is refused, and why:

- anything but a regular file: a FIFO blocks the read for ever, ``/dev/zero`` never ends (opened with
  ``O_NONBLOCK``, then ``fstat`` of the open file, so nothing is swapped in between);
- more than ``MAX_BYTES`` (16 MiB) of YAML, or a document that nests deeper than 64 levels, has more than
  ``MAX_NODES`` nodes or whose aliases expand past them (a 1 KB "billion laughs" is 387 million strings):
  :func:`monitor.config.safeyaml.load` counts before it builds;
- in any message: the file's text. A parse error says the file, line and column, and PyYAML's problem with
  every quoted piece of the file left out.

Writing (:func:`write_text`, :func:`folder`) refuses a path that is a symbolic link, so a link planted where
the config or its target files go cannot send them elsewhere.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

MAX_BYTES = 16 << 20
MAX_NODES = 200_000  # a Gatus endpoint is 10 to 15 nodes: 15,000 endpoints; a 200,000-node file peaks at 130 MB
MAX_CHARS = 32 << 20
MAX_DEPTH = 64
_PARSER = re.compile(r"(?:invalid YAML(?: at column (\d+))?: )?(.*)", re.DOTALL)  # safeyaml's message
_QUOTED = re.compile(r"'(?!<)[^']*'|\"[^\"]*\"")  # PyYAML's quotes of the file's text; '<scalar>' is a token's name


class Unreadable(ValueError):
    """The source could not be read at all (a missing file, not YAML, not a Kuma database): nothing to convert."""


class Refused(Unreadable):
    """A file refused for what it is (not a regular file, too large), not for what it says."""


def read_bytes(path: str | Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit``; :class:`Refused` or :class:`Unreadable` if not."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise Unreadable(f"{path}: cannot read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as file:
        kind = os.fstat(file.fileno()).st_mode
        if not stat.S_ISREG(kind):
            raise Refused(f"{path}: not a regular file ({_kind(kind)}): refused, as reading it could block or never end")
        try:
            data = file.read(limit + 1)
        except OSError as exc:
            raise Unreadable(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise Refused(f"{path}: larger than {_size(limit)}: refused (a config this tool reads is far smaller)")
    return data


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device")):
        if test(mode):
            return name
    return "a directory" if stat.S_ISDIR(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a file"


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"


def load_yaml(path: str | Path, limit: int = MAX_BYTES) -> Any:
    """The YAML document in the file at ``path``, within the bounds above; :class:`Unreadable` if refused."""
    from monitor.config import safeyaml

    data = read_bytes(path, limit)
    try:
        document, _ = safeyaml.load(data, max_bytes=limit, max_depth=MAX_DEPTH, max_nodes=MAX_NODES, max_chars=MAX_CHARS)
    except safeyaml.YamlError as exc:
        at = f" at line {exc.line}" if exc.line else ""
        if exc.bound:
            raise Refused(f"{path}: refused{at}: {exc.message}") from None
        match = _PARSER.fullmatch(unquoted(exc.message))
        column, problem = match.groups() if match else (None, "")
        raise Unreadable(f"{path}: not valid YAML{at}{f', column {column}' if column and at else ''}: {problem}") from None
    return document


def load_json(path: str | Path, limit: int = MAX_BYTES) -> Any:
    """The JSON document in the file at ``path``; :class:`Unreadable` if refused (the message quotes nothing)."""
    import json

    data = read_bytes(path, limit)
    try:
        return json.loads(data)
    except RecursionError:
        raise Refused(f"{path}: refused: nested too deep") from None
    except ValueError as exc:
        line = f" at line {exc.lineno}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise Unreadable(f"{path}: not valid JSON{line}") from None


def unquoted(message: str) -> str:
    """A parser's message without the pieces of the file it quotes (``found undefined alias 'x'``)."""
    return _QUOTED.sub("'…'", message)


def refuse_link(path: Path) -> None:
    """:class:`Refused` if ``path`` is a symbolic link (what it points to is not where the user said)."""
    if path.is_symlink():
        raise Refused(f"{path}: a symbolic link: refused, a converted config is not written through a link (remove it, or name its target)")


def folder(path: Path) -> Path:
    """The folder ``path``, made if missing; :class:`Refused` if it is a symbolic link or not a folder."""
    refuse_link(path)
    path.mkdir(exist_ok=True)
    refuse_link(path)  # made by someone else between the two calls: checked again
    if not path.is_dir():
        raise Refused(f"{path}: not a folder")
    return path


def write_text(path: Path, text: str) -> None:
    """``text`` into the file at ``path``, never through a symbolic link (``O_NOFOLLOW``)."""
    refuse_link(path)
    try:  # non-blocking only to open: a FIFO nobody reads is refused (ENXIO), not waited on
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        raise Refused(f"{path}: cannot write: {exc.strerror or exc}") from None
    os.set_blocking(fd, True)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        file.write(text)
