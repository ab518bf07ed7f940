"""The fleet: a config's own targets and its target files' together, each known by the file and line it came from.

The loader reads the config file, then hands its document to a :class:`Fleet`, which reads the target files
(:mod:`monitor.config.targetfiles`), validates each file's targets on top of ``defaults``, and checks
what spans them all (unique names and heartbeat tokens, dependencies, maintenance windows). Every problem
is a :class:`Located`: the file, the line, the field's path in that file, and what is wrong.
"""

from __future__ import annotations

import bisect
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import TypeAdapter, ValidationError

from monitor.config import errors, targetfiles
from monitor.config.defaults import with_defaults
from monitor.config.errors import ConfigError
from monitor.config.safeyaml import Lines
from monitor.config.schema import cross_references
from monitor.config.targetfiles import MAX_TARGETS, TargetFile
from monitor.config.targets import Target

_TARGETS = TypeAdapter(list[Target])


class Located(NamedTuple):
    """A problem, where it was written: ``written`` is false for a field the file left to ``defaults``."""

    source: str
    line: int | None
    where: str
    message: str
    written: bool = True

    @classmethod
    def at(cls, source: str, lines: Lines, where: str, message: str) -> Located:
        return cls(source, lines.line_of(where), where, message, where in lines.lines)


class Fleet:
    """The targets of one config file (``document``, as read) and of the target files it names."""

    def __init__(self, source: str, lines: Lines, document: dict[str, Any]) -> None:
        self.source, self.lines, self.document = source, lines, document
        self.files: list[TargetFile] = []
        self.order = {source: 0}  # problems are shown by file: the config first, then the files in order
        own = document.get("targets")
        self.own: list[Any] = own if isinstance(own, list) else []

    def read(self, base: Path) -> list[Located]:
        """Read the target files (relative to ``base``); the problems of those that cannot be read."""
        patterns = self.document.get("target_files")
        if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
            return []  # the config's validation says what is wrong with the field
        paths, problems = targetfiles.expand(patterns, base)
        found = [Located.at(self.source, self.lines, where, message) for where, message in problems]
        itself = Path(self.source).resolve()
        for path in paths:
            if path.resolve() == itself:  # target_files: ['*.yaml'] beside monitor.yaml
                continue
            self.order[str(path)] = len(self.order)
            try:
                self.files.append(targetfiles.read(path))
            except targetfiles.FileError as exc:
                found.append(Located(str(path), exc.line, exc.where, exc.message))
        total = len(self.own) + sum(len(file.targets) for file in self.files)
        if total > MAX_TARGETS:
            raise ConfigError(f"{self.source}: target_files: {total:,} targets, more than the {MAX_TARGETS:,} a config may hold")
        return found

    def validate(self) -> tuple[list[Target], list[Located]]:
        """The target files' targets, each on top of ``defaults`` (and its ``detectors`` on the config's); or the
        problems, at their files and lines."""
        defaults, detectors = self.document.get("defaults"), self.document.get("detectors")
        defaults = defaults if isinstance(defaults, dict) else {}
        detectors = detectors if isinstance(detectors, dict) else None
        targets: list[Target] = []
        found: list[Located] = []
        for file in self.files:
            try:
                targets += _TARGETS.validate_python(with_defaults(defaults, file.targets, detectors))
            except ValidationError as exc:
                found += [Located.at(file.source, file.lines, where, message) for where, message in errors.problems(exc, Target)]
        return targets, found

    def cross_references(self) -> list[Located]:
        """Names, tokens, dependencies and maintenance windows across the config and every target file."""
        everything = self.own + [target for file in self.files for target in file.targets]
        starts = [0, len(self.own)]
        for file in self.files:
            starts.append(starts[-1] + len(file.targets))

        def where_is(index: int) -> tuple[str, Lines, str]:
            """The file of target ``index`` of them all, its lines, and the target's path in that file."""
            part = bisect.bisect_right(starts, index) - 1
            if part == 0:
                return self.source, self.lines, f"targets[{index}]"
            file = self.files[part - 1]
            return file.source, file.lines, f"[{index - starts[part]}]"

        def located(index: int) -> str:
            source, lines, where = where_is(index)
            return f"{source}:{lines.line_of(where)}"

        found = []
        for where, message in cross_references({**self.document, "targets": everything}, located):
            if not where.startswith("targets["):
                found.append(Located.at(self.source, self.lines, where, message))
                continue
            index, _, rest = where.removeprefix("targets[").partition("]")
            source, lines, prefix = where_is(int(index))
            found.append(Located.at(source, lines, prefix + rest, message))
        return found
