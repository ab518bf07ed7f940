"""What a check kind's check is, and where the :class:`~monitor.checks.engine.Checker` finds it.

A kind is a module that declares itself once (:mod:`monitor.core.kinds`: its scheme, settings, errors, probe
series and its check), named in the ``monitor.kinds`` entry point group of its distribution::

    class Ping:
        def __init__(self, context: Context) -> None: ...
        async def check(self, target: Target, *, worker: int) -> Result: ...
        async def aclose(self) -> None: ...

    kinds.declare(kinds.Kind("ping", schemes=("ping",), check=Ping))

A kind is loaded on first use, so a process that checks only http targets never loads dnspython. The checker
makes one instance of each kind it meets and closes it with itself; ``worker`` says which of its concurrent
workers asks, for a kind that keeps connections per worker.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from monitor.checks.network import ANY_ADDRESS, Dialer
from monitor.core import kinds

if TYPE_CHECKING:
    from monitor.config import Target
    from monitor.core.results import Result


class Pings(Protocol):
    """The pings heartbeat targets are judged on (``heartbeat.Heartbeats``)."""

    def state(self, name: str) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class Context:
    """What the checker that runs a kind lends it."""

    clock: Callable[[], float]
    reach: Callable[[str], bool] | None = None  # None: a redirect may go anywhere http(s); else every hop must satisfy it
    pings: Pings | None = None
    dialer: Dialer = ANY_ADDRESS  # how a host's addresses are found, and which of them a check may connect to


class Kind(Protocol):
    """The check of one kind of target; never raises for what a target does (a failure is a Result)."""

    async def check(self, target: Target, *, worker: int) -> Result: ...

    async def aclose(self) -> None: ...


Factory = Callable[[Context], Kind]
# The built-in kinds' modules, which the checker loads itself: a check of an http URL reads no package metadata.
# monitor's ``monitor.kinds`` entry points name the same (tests/test_plugins.py), for the layers below.
BUILTIN = {name: f"monitor.checks.{name}" for name in kinds.BUILTIN}


def factory(name: str) -> Factory:
    """The check of kind ``name`` (its declaration loaded on first use); ValueError for no such kind."""
    if name in BUILTIN and not kinds.declared(name):
        importlib.import_module(BUILTIN[name])  # it declares itself
    try:
        check = kinds.get(name).check
    except KeyError:
        raise ValueError(f"no check kind {name!r}; known kinds: {', '.join(names())}") from None
    if check is None:
        raise ValueError(f"check kind {name!r} declares no check")
    made: Factory = check  # the core keeps it in the standard library's terms; this is its type
    return made


def names() -> list[str]:
    return sorted(kinds.names())
