"""What a check kind's check is, and what the :class:`~monitor.checks.engine.Checker` lends it: the kind modules
stand on this, and the registry (:mod:`monitor.checks.registry`) that imports them on first use stands on it too.

A kind's check is made with the checker's :class:`Context` and checks one target at a time::

    class Ping:
        def __init__(self, context: Context) -> None: ...
        async def check(self, target: Target, *, worker: int) -> Result: ...
        async def aclose(self) -> None: ...
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from monitor.checks.network import ANY_ADDRESS, Dialer

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
