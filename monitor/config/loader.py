"""Reading a config: ``load(path)``, ``parse(text)``, and the ad-hoc configs of ``monitor check URL``.

The file is read as hostile input (see :mod:`monitor.config.safeyaml`), ``${VAR}`` is substituted
(:mod:`monitor.config.substitution`), and every problem found is reported at once, each with its line.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from monitor.config import errors
from monitor.config.addresses import kind_of
from monitor.config.errors import ConfigError
from monitor.config.schema import Config, cross_references
from monitor.config.substitution import SubstitutionError, substitute
from monitor.config.targets import Target

if TYPE_CHECKING:
    from monitor.config.safeyaml import Lines

MAX_BYTES = 1 << 20
MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_CHARS = 8 << 20


def problems(error: ValidationError) -> list[tuple[str, str]]:
    """Each problem of a config as ``(field path, what is wrong (what is allowed))``."""
    return errors.problems(error, Config)


def describe(error: ValidationError, source: str) -> str:
    """One line per problem of a config: ``file: path: what is wrong (what is allowed)``."""
    return errors.describe(error, source, Config)


MAX_PROBLEMS = 50


def _render(source: str, where: str, message: str, line: int | None) -> str:
    at = f"{source}:{line}" if line else source
    where = where if len(where) <= 200 else f"{where[:197]}..."
    return f"{at}: {where}: {message}" if where else f"{at}: {message}"


def parse(text: str, source: str = "<config>") -> Config:
    """Validate config text; every problem is a :class:`ConfigError`."""
    return parse_bytes(text.encode("utf-8", "surrogatepass"), source)


def parse_bytes(data: bytes, source: str = "<config>") -> Config:
    """Validate a config file's bytes; every problem, each with its line, is one :class:`ConfigError`."""
    from monitor.config import safeyaml

    try:
        document, lines = safeyaml.load(data, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, max_nodes=MAX_NODES,
                                        max_chars=MAX_CHARS)
    except safeyaml.YamlError as exc:
        raise ConfigError(_render(source, exc.where, exc.message, exc.line)) from None
    if document is None:
        raise ConfigError(f"{source}: the file is empty (write at least targets: with one target)")
    if not isinstance(document, dict):
        raise ConfigError(f"{source}: the top level must be a mapping (database, defaults, targets, ...)")
    document = {k: v for k, v in document.items() if not str(k).startswith("x-")}  # anchors' place, as in compose
    try:
        expanded = substitute(document)
    except SubstitutionError as exc:
        raise ConfigError(_render(source, exc.where, exc.message, lines.line_of(exc.where))) from None
    found = cross_references(expanded)
    try:
        config = Config.model_validate(expanded, context={"cross_checked": True})
    except ValidationError as exc:
        found = problems(exc) + found
    if found:
        raise ConfigError(_report(_not_inherited(found, lines), lines, source))
    return config


def _report(found: list[tuple[str, str]], lines: Lines, source: str) -> str:
    """Problems in the order of the file, at most ``MAX_PROBLEMS`` of them."""
    ordered = sorted(found, key=lambda problem: lines.line_of(problem[0]) or 0)
    out = [_render(source, where, message, lines.line_of(where)) for where, message in ordered[:MAX_PROBLEMS]]
    if len(ordered) > MAX_PROBLEMS:
        out.append(f"{source}: ... and {len(ordered) - MAX_PROBLEMS} more problems")
    return "\n".join(out)


def _not_inherited(found: list[tuple[str, str]], lines: Lines) -> list[tuple[str, str]]:
    """Without the copies of a bad ``defaults`` field in every target that did not set it."""
    bad_defaults = {where.removeprefix("defaults.") for where, _ in found if where.startswith("defaults.")}

    def inherited(where: str) -> bool:
        match = re.fullmatch(r"targets\[\d+\]\.(.+)", where)
        return match is not None and match.group(1) in bad_defaults and where not in lines.lines

    return [(where, message) for where, message in found if not inherited(where)]


def load(path: str | Path) -> Config:
    """Read and validate a config file. Relative ``database`` paths are relative to the file."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the reload
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise ConfigError(f"{path}: not a regular file")
            data = file.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read config: {exc.strerror or exc}") from None
    config = parse_bytes(data, str(path))
    if config.database not in (None, ":memory:") and not config.database.startswith(("postgresql://", "postgres://")) \
            and not Path(config.database).is_absolute():
        config = config.model_copy(update={"database": str(path.parent / config.database)})
    return config


def with_urls(config: Config, refs: list[str]) -> tuple[Config, list[Target]]:
    """Targets for ``refs``: configured names, or URLs checked with the config's defaults."""
    urls = [r for r in refs if kind_of(r) in ("http", "tcp", "tls", "dns", "icmp")]
    if urls:
        extra = for_urls(urls, **config.defaults.model_dump(exclude_unset=True)).targets
        config = config.model_copy(update={"targets": config.targets + extra})
        named = dict(zip(urls, (t.name for t in extra), strict=True))
        refs = [named.get(r, r) for r in refs]
    return config, [config.target(r) for r in refs]


def for_urls(urls: list[str], dns: dict[str, Any] | None = None, **overrides: Any) -> Config:
    """A config for ad-hoc checks of URLs (``monitor check URL``), each named by its host and path;
    ``dns`` holds the settings of ``dns:`` addresses."""
    targets, seen = [], set()
    for url in urls:
        base = re.sub(r"[^A-Za-z0-9_.:/-]", "_", re.sub(r"^https?://", "", url)).rstrip("/")[:120] or "target"
        name, count = base, 1
        while name in seen:
            count += 1
            name = f"{base}-{count}"
        seen.add(name)
        targets.append({"name": name, "url": url, **({"dns": dns} if dns and kind_of(url) == "dns" else {})})
    data: dict[str, Any] = {"targets": targets}
    if "timeout" in overrides:  # checked once: no interval for the timeout to fit in
        overrides.setdefault("interval", overrides["timeout"])
    if overrides:
        data["defaults"] = overrides
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe(exc, "command line")) from None
