"""The house's size limits, read off the source: no module under monitor/ over 400 lines, no function over 40.

A function is counted from its ``def`` to its last line (decorators not counted), each nested function on its own
as well as within the one that holds it."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import monitor

ROOT = Path(monitor.__file__).parent
MODULE_LINES = 400
FUNCTION_LINES = 40


def function_sizes(source: str) -> Iterator[tuple[str, int, int]]:
    """Each function's (name, first line, lines) in ``source``, methods and nested functions included."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            assert node.end_lineno is not None
            yield node.name, node.lineno, node.end_lineno - node.lineno + 1


def sources() -> dict[str, str]:
    return {str(path.relative_to(ROOT.parent)): path.read_text() for path in sorted(ROOT.rglob("*.py"))}


def test_a_function_is_counted_from_its_def_to_its_last_line() -> None:
    source = (
        "@decorated\n@twice\ndef outer(x):\n    def inner():\n        return x\n\n    return inner\n\n\n"
        "class A:\n    async def method(self):\n        pass\n"
    )
    assert sorted(function_sizes(source)) == [("inner", 4, 2), ("method", 11, 2), ("outer", 3, 5)]


def test_no_module_is_over_400_lines() -> None:
    long = {name: lines for name, text in sources().items() if (lines := len(text.splitlines())) > MODULE_LINES}
    assert long == {}


def test_no_function_is_over_40_lines() -> None:
    long = [
        f"{name}:{line} {function} ({lines} lines)"
        for name, text in sources().items()
        for function, line, lines in function_sizes(text)
        if lines > FUNCTION_LINES
    ]
    assert long == []
