from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from servers import Misbehaving  # noqa: E402


@pytest.fixture(scope="session")
def web() -> Iterator[Misbehaving]:
    """One misbehaving loopback server for the whole session."""
    with Misbehaving() as server:
        yield server


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "monitor.db")
