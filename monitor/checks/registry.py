"""Check kinds, by name: the registry the :class:`~monitor.checks.engine.Checker` finds a kind's check in.

A kind is a module that declares itself (:mod:`monitor.core.kinds`: its scheme, settings, errors, probe series)
and registers a factory under its name when it is imported::

    class Ping:
        def __init__(self, context: Context) -> None: ...
        async def check(self, target: Target, *, worker: int) -> Result: ...
        async def aclose(self) -> None: ...

    kinds.declare(kinds.Kind("ping", schemes=("ping",)))
    register("ping", Ping)

The built-in kinds (http, tcp, tls, dns, icmp, heartbeat) are imported on first use, so a process that
checks only http targets never loads dnspython. The checker makes one instance of each kind it
meets and closes it with itself; ``worker`` says which of its concurrent workers asks, for a kind
that keeps connections per worker.
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

BUILTIN = {name: module for name, (module, _) in kinds.BUILTIN.items()}  # the one list: monitor.core.kinds


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
_KINDS: dict[str, Factory] = {}


def register(name: str, factory: Factory) -> None:
    """Make ``name`` a check kind, checked by what ``factory(context)`` returns."""
    known = _KINDS.get(name)
    if known is not None and known is not factory:
        raise ValueError(f"check kind {name!r} is already registered (by {known!r})")
    _KINDS[name] = factory


def unregister(name: str) -> None:
    _KINDS.pop(name, None)


def factory(name: str) -> Factory:
    """The factory of kind ``name``; a built-in kind's module is imported on first use."""
    if name not in _KINDS and name in BUILTIN:
        importlib.import_module(BUILTIN[name])  # it registers itself
    try:
        return _KINDS[name]
    except KeyError:
        raise ValueError(f"no check kind {name!r}; known kinds: {', '.join(names())}") from None


def names() -> list[str]:
    return sorted({*BUILTIN, *_KINDS})
