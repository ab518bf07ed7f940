"""The layout's rules, read off the source: no import cycle, lower parts never import higher ones,
and the parts that only handle values load no HTTP client."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import monitor

ROOT = Path(monitor.__file__).parent
# Lowest first: a part may import its own modules and those of parts before it, never one after it.
LOWER = {"core": {"core"}, "checks": {"core", "config", "checks"}}
# Import edges of a cycle known and being removed: ``monitor review`` takes main's shared options while main
# registers it; the CLI's split into command modules (shared options in a module of their own) ends it.
KNOWN_CYCLE_EDGES = {("monitor.cli.review", "monitor.cli.main")}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in ROOT.rglob("*.py")}


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The monitor modules ``path`` imports, anywhere in it (a lazy import inside a function counts)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])])
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    return {m for m in found if m in known and m != name}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(path, name, set(known)) for name, path in known.items()}


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_monitor_has_no_import_cycle() -> None:
    edges = {name: {used for used in uses if (name, used) not in KNOWN_CYCLE_EDGES} for name, uses in graph().items()}
    assert cycle(edges) is None


def test_core_and_checks_import_no_higher_part() -> None:
    wrong = [(name, used) for name, used_all in graph().items() for used in sorted(used_all)
             if name.split(".")[1:2] and name.split(".")[1] in LOWER
             and used.split(".")[1] not in LOWER[name.split(".")[1]]]
    assert wrong == []


def test_the_core_needs_nothing_outside_the_standard_library() -> None:
    outside = set()
    for path in (ROOT / "core").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            outside.update(f"{path.name}: {n}" for n in names
                           if n.split(".")[0] not in sys.stdlib_module_names and n.split(".")[0] != "monitor")
    assert outside == set()


def test_the_store_metrics_and_incidents_load_no_http_client() -> None:
    code = ("import sys, monitor.store, monitor.metrics, monitor.incidents.tracker\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'httpx', 'httpcore', 'litellm', 'smolagents'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
