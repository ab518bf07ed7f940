"""A toy check kind, as a new kind is added: one module that declares the kind, its check with it.

A ``toy:/path/to/file`` target passes while the file holds its ``toy.word`` (``up`` unless the target says
otherwise); anything else, or no file, is a critical failure with the error kind ``toy_down``. Its address must
be an absolute path, its settings are the ``toy:`` section of the target, and a /probe answer about it carries
``probe_toy_word_found``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from monitor.checks import registry
from monitor.config import Strict, Target
from monitor.core import kinds
from monitor.core.results import CRITICAL, OK, Result

TOY_DOWN = "toy_down"
MADE: list[Toy] = []  # every instance, so a test can see the checker close what it opened


class ToySettings(Strict):
    """A ``toy:`` section: the word the file must hold."""

    word: str = Field(default="up", pattern=r"^[a-z]{1,20}$")


def toy_path(address: str) -> str:
    """``toy:/path`` -> ``/path``; a ValueError unless the path is absolute."""
    path = address.removeprefix("toy:")
    if not path.startswith("/"):
        raise ValueError(f"{address!r} is not a toy address: write it toy:/absolute/path")
    return path


class Toy:
    """The toy kind: reads a file; keeps nothing open."""

    def __init__(self, context: registry.Context) -> None:
        self.clock = context.clock
        self.closed = False
        MADE.append(self)

    async def check(self, target: Target, *, worker: int = 0) -> Result:
        path, word = Path(toy_path(target.url)), target.settings_as(ToySettings).word
        said = path.read_text().strip() if path.is_file() else "nothing"
        severity = OK if said == word else CRITICAL
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


KIND = kinds.Kind(
    "toy",
    schemes=("toy",),
    settings=ToySettings,
    address=toy_path,
    errors={TOY_DOWN: "the file does not hold the word"},
    probe=kinds.Probe(
        "toy:/probe.invalid",
        address=lambda target: f"toy:{target}",
        series=(kinds.Series("probe_toy_word_found", "Whether the file held the word", lambda r: int(r.ok)),),
    ),
    check=Toy,
)
kinds.declare(KIND)
