"""The layout's rules, read off the source: no import cycle, every part in its layer and never importing a part
beside or above it, and the parts that only handle values load no HTTP client."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import monitor

ROOT = Path(monitor.__file__).parent
# The parts, lowest first (README, "Architecture"). A module imports modules of its own part and of the layers below
# it, never of a part beside it or above it. ``monitor`` is the package's own __init__ (its version); ``metrics``
# sits above checks and the store because its collectors read the store at scrape time, and below everything that
# counts; ``listener`` (/metrics, /healthz, heartbeat pings, /probe) above the metrics it serves and the checks it
# runs; ``eval`` beside the daemon, which never imports it; the CLI's text output is its own (cli/report.py; the demo
# is handed it); ``__main__`` is ``python -m monitor``, the one importer of the CLI.
LAYERS: tuple[frozenset[str], ...] = tuple(
    map(
        frozenset,
        (
            {"monitor"},
            {"core"},
            {"config"},
            {"checks", "store", "importers"},  # importers: another tool's setup read into config models
            {"metrics"},
            {"incidents", "listener"},
            {"alerts", "memory"},
            {"agent"},
            {"web"},
            {"daemon", "eval"},
            {"demo", "mcp"},  # mcp: the MCP server reads what the web shows, and investigates as the CLI does
            {"cli"},
            {"__main__"},
        ),
    )
)


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part(module: str) -> str:
    """The part a module belongs to: ``monitor.checks.http`` -> ``checks``; the package itself is ``monitor``."""
    return module.split(".")[1] if "." in module else module


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


def cycle(edges: Mapping[str, Iterable[str]]) -> list[str] | None:
    """One import cycle, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def wrong_way(edges: Mapping[str, Iterable[str]], layers: tuple[frozenset[str], ...]) -> list[str]:
    """Each import of a part beside or above the importer's, as ``importer -> imported (part -> part)``."""
    level = {name: i for i, names in enumerate(layers) for name in names}

    def rank(module: str) -> int:
        return level.get(part(module), len(layers))  # a part in no layer is above all: it may be imported by none

    return [
        f"{name} -> {used} ({part(name)} -> {part(used)})"
        for name, uses in sorted(edges.items())
        for used in sorted(uses)
        if part(used) != part(name) and rank(used) >= rank(name)
    ]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_the_layer_check_finds_an_import_up_or_across() -> None:
    layers = tuple(map(frozenset, ({"monitor"}, {"core"}, {"checks", "store"}, {"cli"})))
    edges = {
        "monitor.core.results": {"monitor.core.errors", "monitor"},
        "monitor.checks.http": {"monitor.core.results"},
        "monitor.cli.main": {"monitor.checks.http", "monitor.store"},
    }
    assert wrong_way(edges, layers) == []
    up = {**edges, "monitor.core.errors": {"monitor.cli.main"}, "monitor.store.base": {"monitor.checks.http"}}
    assert wrong_way(up, layers) == [
        "monitor.core.errors -> monitor.cli.main (core -> cli)",
        "monitor.store.base -> monitor.checks.http (store -> checks)",
    ]


def test_monitor_has_no_import_cycle() -> None:
    assert cycle(graph()) is None


def test_every_part_has_a_layer() -> None:
    assert {part(name) for name in modules()} == set().union(*LAYERS)
    assert sum(map(len, LAYERS)) == len(set().union(*LAYERS)), "a part is in two layers"


def test_no_part_imports_a_part_beside_or_above_it() -> None:
    assert wrong_way(graph(), LAYERS) == []


def test_the_core_needs_nothing_outside_the_standard_library() -> None:
    outside = set()
    for path in (ROOT / "core").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            )
            outside.update(
                f"{path.name}: {n}" for n in names if n.split(".")[0] not in sys.stdlib_module_names and n.split(".")[0] != "monitor"
            )
    assert outside == set()


def test_the_store_metrics_incidents_and_recall_load_no_http_client() -> None:
    code = (
        "import sys, monitor.store, monitor.metrics, monitor.incidents.tracker, monitor.memory.recall\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'httpx', 'httpcore', 'litellm', 'smolagents'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
