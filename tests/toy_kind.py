"""A toy check kind, as a new kind is added: one module that registers a factory under the kind's name.

A ``toy`` target passes while the file its URL names (``toy:/path/to/file``) holds ``up``; anything
else, or no file, is a critical failure with the error kind ``toy_down``.
"""

from __future__ import annotations

from pathlib import Path

from monitor.checks import registry
from monitor.config import Target
from monitor.core.results import CRITICAL, OK, Result

TOY_DOWN = "toy_down"
MADE: list[Toy] = []  # every instance, so a test can see the checker close what it opened


class Toy:
    """The toy kind: reads a file; keeps nothing open."""

    def __init__(self, context: registry.Context) -> None:
        self.clock = context.clock
        self.closed = False
        MADE.append(self)

    async def check(self, target: Target, *, worker: int = 0) -> Result:
        path = Path(target.url.removeprefix("toy:"))
        said = path.read_text().strip() if path.is_file() else "nothing"
        severity = OK if said == "up" else CRITICAL
        return Result(
            name=target.name,
            url=target.url,
            ok=severity == OK,
            severity=severity,
            status_code=None,
            latency_ms=0.0,
            error=None if severity == OK else TOY_DOWN,
            detail=f"the file says {said}",
            checked_at=self.clock(),
            kind="toy",
        )

    async def aclose(self) -> None:
        self.closed = True


registry.register("toy", Toy)
