"""Reading a config: ``load(path)``, ``parse(text)``, and the ad-hoc configs of ``monitor check URL``.

The file is read as hostile input (see :mod:`monitor.config.safeyaml`), ``${VAR}`` is substituted
(:mod:`monitor.config.substitution`), and every problem found is reported at once, each with its line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from monitor.config import adhoc, database, errors
from monitor.config.addresses import kind_of
from monitor.config.errors import ConfigError
from monitor.config.fleet import Fleet, Located
from monitor.config.schema import Config
from monitor.config.substitution import SubstitutionError, substitute
from monitor.config.targetfiles import FileError, read_bytes
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


def parse_bytes(data: bytes, source: str = "<config>", base: Path | None = None) -> Config:
    """Validate a config file's bytes, and the target files it names (globs relative to ``base``, else the
    working directory); every problem, each with its file and line, is one :class:`ConfigError`."""
    document, lines = _document(data, source)
    try:
        expanded = substitute(document)
    except SubstitutionError as exc:
        raise ConfigError(_render(source, exc.where, exc.message, lines.line_of(exc.where))) from None
    fleet = Fleet(source, lines, expanded)
    found = fleet.read(base or Path.cwd())
    found += fleet.cross_references()
    config = None
    try:
        config = Config.model_validate(expanded, context={"cross_checked": True})
    except ValidationError as exc:
        found = [Located.at(source, lines, where, message) for where, message in problems(exc)] + found
    targets, more = fleet.validate()
    found += more
    if found or config is None:
        raise ConfigError(_report(_not_inherited(found), fleet.order))
    return config.with_target_files(targets, len(fleet.files)) if config.target_files else config


def _document(data: bytes, source: str) -> tuple[dict[str, Any], Lines]:
    """The config file's mapping, read as hostile input, without its ``x-`` keys."""
    from monitor.config import safeyaml

    try:
        document, lines = safeyaml.load(data, max_bytes=MAX_BYTES, max_depth=MAX_DEPTH, max_nodes=MAX_NODES, max_chars=MAX_CHARS)
    except safeyaml.YamlError as exc:
        message = f"{exc.message}{TOO_BIG}" if exc.bound else exc.message
        raise ConfigError(_render(source, exc.where, message, exc.line)) from None
    if document is None:
        raise ConfigError(f"{source}: the file is empty (write at least targets: with one target)")
    if not isinstance(document, dict):
        raise ConfigError(f"{source}: the top level must be a mapping (database, defaults, targets, ...)")
    return {k: v for k, v in document.items() if not str(k).startswith("x-")}, lines  # anchors' place, as in compose


TOO_BIG = (
    f", the most a config file holds ({MAX_BYTES >> 20} MiB, {MAX_NODES:,} nodes; a target is 5 to 10 "
    f"nodes: {MAX_NODES // 10:,} to {MAX_NODES // 5:,} targets). List a larger fleet in target_files "
    "(target_files: [targets/*.yaml]): files of targets with bounds of their own"
)


def _report(found: list[Located], order: dict[str, int]) -> str:
    """Problems by file (the config first) and line, at most ``MAX_PROBLEMS`` of them."""
    ordered = sorted(found, key=lambda problem: (order.get(problem.source, 0), problem.line or 0))
    out = [_render(p.source, p.where, p.message, p.line) for p in ordered[:MAX_PROBLEMS]]
    if len(ordered) > MAX_PROBLEMS:
        out.append(f"{ordered[0].source}: ... and {len(ordered) - MAX_PROBLEMS} more problems")
    return "\n".join(out)


_A_TARGETS_FIELD = re.compile(r"(?:targets)?\[\d+\]\.(.+)")


def _not_inherited(found: list[Located]) -> list[Located]:
    """Without the copies of a bad ``defaults`` field in every target that did not set it."""
    bad_defaults = {p.where.removeprefix("defaults.") for p in found if p.where.startswith("defaults.")}

    def inherited(problem: Located) -> bool:
        match = _A_TARGETS_FIELD.fullmatch(problem.where)
        return match is not None and match.group(1) in bad_defaults and not problem.written

    return [problem for problem in found if not inherited(problem)]


def load(path: str | Path) -> Config:
    """Read and validate a config file and its target files. Relative paths (``database``, ``target_files``)
    are relative to the file; the database is always named, by an absolute path or a URL
    (:func:`monitor.config.database.located`)."""
    path = Path(path)
    try:
        data = read_bytes(path, MAX_BYTES)
    except FileError as exc:
        raise ConfigError(f"{path}: {exc.message.replace('cannot read', 'cannot read config')}") from None
    config = parse_bytes(data, str(path), base=path.parent)
    return config.model_copy(update={"database": database.located(config.database, path)})


def with_urls(config: Config, refs: list[str]) -> tuple[Config, list[Target]]:
    """Targets for ``refs``: configured names, or URLs checked with the config's defaults."""
    urls = [r for r in refs if kind_of(r) not in (None, "heartbeat")]
    if urls:
        extra = for_urls(urls, **config.defaults.model_dump(exclude_unset=True)).targets
        config = config.model_copy(update={"targets": config.targets + extra})
        named = dict(zip(urls, (t.name for t in extra), strict=True))
        refs = [named.get(r, r) for r in refs]
    return config, [config.target(r) for r in refs]


def for_urls(urls: list[str], dns: dict[str, Any] | None = None, **overrides: Any) -> Config:
    """A config for ad-hoc checks of URLs (``monitor check URL``): the targets of :func:`monitor.config.adhoc.written`,
    each named by its host and path; ``dns`` holds the settings of ``dns:`` addresses."""
    try:
        return Config.model_validate(adhoc.written(urls, dns, **overrides))
    except ValidationError as exc:
        raise ConfigError(describe(exc, "command line")) from None
