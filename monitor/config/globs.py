"""A bounded glob: the paths a ``target_files`` pattern names, as :func:`glob.glob` (``recursive=True``) finds them,
without its two hazards for a file a reload reads unattended.

* A directory symlink that loops (``ln -s . targets/self``) made ``**`` walk without end: two such links
  double the paths at each level. Here ``**`` enters each real directory once (by its resolved path), so a
  loop ends where it starts and two names of one directory are walked once.
* A tree of a million entries made a reload take minutes. Here a walk reads at most ``limit`` directory
  entries, then stops with :class:`TooLarge`.

As in :mod:`glob`, ``*`` and ``?`` do not match a leading dot (hidden names) unless the pattern's part starts
with one, and ``**`` as a whole part crosses any number of directories, none included.
"""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path

WALK_LIMIT = 100_000  # directory entries read for one config's target_files, in all


class TooLarge(Exception):
    """A walk that read more than its limit of directory entries."""


class Walk:
    """The directories one config's globs read: each real one once under ``**``, ``limit`` entries in all."""

    def __init__(self, limit: int = WALK_LIMIT) -> None:
        self.limit, self.read = limit, 0
        self._entered: set[tuple[str, int]] = set()
        self._names: dict[str, list[str]] = {}  # each real directory is read once, whatever its parts match

    def glob(self, pattern: str, base: Path) -> list[Path]:
        """The existing paths ``pattern`` names (relative to ``base`` unless absolute), sorted."""
        path = Path(pattern)
        start, parts = (Path(path.anchor), path.parts[1:]) if path.is_absolute() else (base, path.parts)
        found: list[Path] = []
        stack = [(start, 0)] if parts else []
        while stack:
            directory, index = stack.pop()
            found += self._step(directory, parts, index, stack)
        return sorted(set(found), key=str)

    def _step(self, directory: Path, parts: tuple[str, ...], index: int, stack: list[tuple[Path, int]]) -> list[Path]:
        """Match ``parts[index]`` in ``directory``: the paths it completes; the directories to go on in, on ``stack``."""
        part, last = parts[index], index == len(parts) - 1
        if part == "**":
            if not self._enter(directory, index):
                return []
            children = self._children(directory, "*")
            stack += [(sub, index) for sub in children if sub.is_dir()]
            if last:
                return children
            stack.append((directory, index + 1))
            return []
        if not re.search(r"[*?\[]", part):
            candidate = directory / part
            if last:
                return [candidate] if candidate.exists() else []
            if candidate.is_dir():
                stack.append((candidate, index + 1))
            return []
        matches = self._children(directory, part)
        if last:
            return matches
        stack += [(sub, index + 1) for sub in matches if sub.is_dir()]
        return []

    def _enter(self, directory: Path, index: int) -> bool:
        """Whether ``**`` at ``index`` has not been in this real directory yet (a loop comes back to one it has)."""
        key = (os.path.realpath(directory), index)
        if key in self._entered:
            return False
        self._entered.add(key)
        return True

    def _children(self, directory: Path, part: str) -> list[Path]:
        """The entries of ``directory`` whose names match ``part`` (hidden ones only if ``part`` starts with a dot)."""
        hidden = part.startswith(".")
        return [
            directory / name for name in self._list(directory) if (hidden or not name.startswith(".")) and fnmatch.fnmatchcase(name, part)
        ]

    def _list(self, directory: Path) -> list[str]:
        real = os.path.realpath(directory)
        if real not in self._names:
            names = []
            try:
                with os.scandir(directory) as entries:
                    for entry in entries:
                        self.read += 1
                        if self.read > self.limit:
                            raise TooLarge(f"more than {self.limit:,} files and directories walked")
                        names.append(entry.name)
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                pass
            self._names[real] = names
        return self._names[real]
