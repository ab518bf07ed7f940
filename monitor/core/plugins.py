"""The extension points, and what the installed distributions name in them: one entry point group each.

monitor has four places a package adds to: a check kind, an agent tool, an alert receiver and a web page. Each has
one registry (:mod:`monitor.core.kinds`, :mod:`monitor.agent.tools`, :mod:`monitor.config.alerts`'s receiver kinds,
:mod:`monitor.web.routes`), and each registry finds what it holds in one entry point group of the installed
distributions' metadata, monitor's own built-ins and a plugin's alike (``pyproject.toml``)::

    [project.entry-points."monitor.tools"]
    pass_rate = "monitor_example:PassRate"

A built-in name is always monitor's own entry point, whoever else names it: a plugin adds, it never replaces. The
metadata is read on the first question about a plugin, never at import, and once per process (:func:`rescan`
reads it again).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable
    from importlib.metadata import EntryPoint

T = TypeVar("T")

DISTRIBUTION = "monitor-agent"  # monitor's own distribution, which names the built-ins
KINDS = "monitor.kinds"
TOOLS = "monitor.tools"
RECEIVERS = "monitor.receivers"
PAGES = "monitor.pages"
GROUPS = (KINDS, TOOLS, RECEIVERS, PAGES)


@functools.cache
def _installed(group: str) -> tuple[EntryPoint, ...]:
    from importlib.metadata import entry_points  # on first ask: a check of an http URL reads no metadata

    return tuple(entry_points(group=group))


@functools.cache
def table(group: str, builtin: tuple[str, ...] = ()) -> dict[str, EntryPoint]:
    """The installed distributions' entry points of ``group`` by name: the ``builtin`` names first, in their order,
    each monitor's own, then the others in the order the metadata lists them (the first of a name wins)."""
    ours = {point.name: point for point in _installed(group) if is_ours(point)}
    found = {name: ours[name] for name in builtin if name in ours}
    for point in _installed(group):
        if point.name not in builtin:
            found.setdefault(point.name, point)
    return found


def is_ours(point: EntryPoint) -> bool:
    """Whether monitor's own distribution names ``point``."""
    return point.dist is not None and point.dist.name == DISTRIBUTION


def missing(group: str, name: str) -> LookupError:
    """What a built-in ``name`` that no installed monitor names in ``group`` says: monitor's metadata is stale."""
    return LookupError(f"{name!r} is built in, but no installed {DISTRIBUTION} names it in {group}: reinstall monitor (pip install -e .)")


def gather(group: str, builtin: tuple[str, ...], registered: dict[str, T], load: Callable[[EntryPoint], T]) -> list[T]:
    """Every item of a registry whose ``group`` holds ``builtin``: the built-in ones in their order, then each
    installed package's, then those in ``registered`` only; an entry point is loaded by ``load`` on first ask and kept
    in ``registered``."""
    points = table(group, builtin)
    for name in builtin:
        if name not in points:
            raise missing(group, name)
    for name, point in points.items():
        if name not in registered:
            registered[name] = load(point)
    return [*(registered[name] for name in builtin), *(item for name, item in registered.items() if name not in builtin)]


def rescan() -> None:
    """Read the installed distributions' entry points again (after a package is installed in this process)."""
    _installed.cache_clear()
    table.cache_clear()
