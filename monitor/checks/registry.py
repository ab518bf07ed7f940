"""Where the :class:`~monitor.checks.engine.Checker` finds a check kind's check (what one is:
:mod:`monitor.checks.context`, whose names this module lends too).

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

from monitor.checks.context import Context, Factory, Kind, Pings
from monitor.core import kinds

__all__ = ["BUILTIN", "Context", "Factory", "Kind", "Pings", "factory", "names"]

# The built-in kinds' modules, which the checker imports itself (_declare): a check of an http URL reads no package metadata.
# monitor's ``monitor.kinds`` entry points name the same (tests/test_plugins.py), for the layers below.
BUILTIN = {name: f"monitor.checks.{name}" for name in kinds.BUILTIN}


def factory(name: str) -> Factory:
    """The check of kind ``name`` (its declaration loaded on first use); ValueError for no such kind."""
    if name in BUILTIN and not kinds.declared(name):
        _declare(name)
    try:
        check = kinds.get(name).check
    except KeyError:
        raise ValueError(f"no check kind {name!r}; known kinds: {', '.join(names())}") from None
    if check is None:
        raise ValueError(f"check kind {name!r} declares no check")
    made: Factory = check  # the core keeps it in the standard library's terms; this is its type
    return made


def _declare(name: str) -> None:
    """Import the built-in kind ``name``'s module, which declares it: that one alone (an http check loads no
    dnspython), each by a statement the layers' linter reads."""
    match name:
        case "http":
            import monitor.checks.http  # noqa: F401
        case "tcp":
            import monitor.checks.tcp  # noqa: F401
        case "tls":
            import monitor.checks.tls  # noqa: F401
        case "dns":
            import monitor.checks.dns  # noqa: F401
        case "icmp":
            import monitor.checks.icmp  # noqa: F401
        case "heartbeat":
            import monitor.checks.heartbeat  # noqa: F401


def names() -> list[str]:
    return sorted(kinds.names())
