"""Prometheus' ``file_sd_configs`` files, read as hostile input for ``monitor import blackbox``.

A scrape config's ``files:`` are globs relative to its own folder. Only files under that folder are read
unless the user asks (``--allow-outside``): an absolute path, a ``../`` or a link that leads out is refused
and named, so an import cannot be made to read ``~/.aws/credentials`` and show it back. Each file is read as
:mod:`monitor.importers.files` reads any source (a regular file, bounded, its lines never quoted), at most
``MAX_FILES`` of them and ``MAX_BYTES`` each.
"""

from __future__ import annotations

import glob
import itertools
import os
from pathlib import Path
from typing import Any

from monitor.importers import files
from monitor.importers.report import Import

MAX_FILES = 10_000
MAX_BYTES = 4 << 20  # a file of 10,000 targets is about 1 MiB


class Finder:
    """The target groups of a job's ``file_sd_configs``, from files under ``base`` (anywhere: ``anywhere=True``)."""

    def __init__(self, base: Path, *, anywhere: bool = False) -> None:
        self.base, self.anywhere = base, anywhere
        self.real = os.path.realpath(base)
        self.read = 0

    def groups(self, imported: Import, where: str, sd: Any) -> list[Any]:
        """Every target group in the files the config's globs name; each file refused or unreadable is reported."""
        found: list[Any] = []
        patterns = sd.get("files") if isinstance(sd, dict) else None
        for pattern in patterns if isinstance(patterns, list) else []:
            for path in self._paths(imported, f"{where}.files", str(pattern)):
                found += self._file(imported, f"{where}: {path}", path)
        return found

    def _paths(self, imported: Import, where: str, pattern: str) -> list[Path]:
        outside = Path(pattern).is_absolute() or ".." in Path(pattern).parts
        if outside and not self.anywhere:
            imported.refuse(f"{where}: {pattern}", self._why("it names a file outside"))
            return []
        matches = sorted(itertools.islice(glob.iglob(pattern, root_dir=self.base), MAX_FILES + 1))
        if len(matches) > MAX_FILES:
            imported.skip(f"{where}: {pattern}", f"names more than {MAX_FILES:,} files: none read; name them more narrowly")
            return []
        paths = []
        for match in matches:
            path = self.base / match
            if not self.anywhere and not self._inside(path):
                imported.refuse(f"{where}: {path}", self._why("a link leads it outside"))
            elif not path.is_dir():
                paths.append(path)
        return paths

    def _why(self, what: str) -> str:
        return f"{what} the Prometheus config's folder ({self.base}): not read; --allow-outside reads it"

    def _inside(self, path: Path) -> bool:
        return os.path.commonpath([self.real, os.path.realpath(path)]) == self.real

    def _file(self, imported: Import, where: str, path: Path) -> list[Any]:
        if self.read >= MAX_FILES:
            imported.skip(where, f"more than {MAX_FILES:,} files in all: not read")
            return []
        self.read += 1
        try:
            groups = files.load_json(path, MAX_BYTES) if path.suffix == ".json" else files.load_yaml(path, MAX_BYTES)
        except files.Refused as exc:
            imported.refuse(where, str(exc).removeprefix(f"{path}: "))
            return []
        except files.Unreadable as exc:
            imported.skip(where, f"not read: {str(exc).removeprefix(f'{path}: ')}")
            return []
        if not isinstance(groups, list):
            imported.skip(where, "not a list of target groups: not read")
            return []
        return groups
