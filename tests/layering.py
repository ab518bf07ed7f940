"""The imports import-linter cannot see: those made by a string (``importlib.import_module("monitor.cli.main")``), read
off the source, and a contract type that adds them to its graph before it checks the layers.

pyproject.toml's ``[tool.importlinter]`` names :class:`LayersContract` as ``layers_by_string``; ``lint-imports``, run
from the repository root (tests/test_layers.py, .ci/run), imports this module as ``tests.layering``."""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Mapping
from pathlib import Path

import grimp
from importlinter.contracts import layers
from importlinter.domain.contract import ContractCheck
from importlinter.domain.helpers import module_expressions_to_modules

# The calls that import a module named by a string (their first argument): importlib's, the builtin, runpy's, and a fork
# server's preload list.
BY_STRING = {"import_module", "__import__", "find_spec", "spec_from_file_location", "resolve_name", "run_module", "set_forkserver_preload"}
UNREAD = "?"  # what an import by a string this check cannot follow imports: a module in no layer, so it is refused


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(path, root): path for path in root.rglob("*.py")}


def by_string(tree: ast.AST, name: str, known: set[str], *, package: bool = False) -> dict[str, int]:
    """The modules imported by a string, each with the line of its first import: each import call's argument,
    followed to the literals it is made of (a module constant ``KINDS = {"http": "monitor.checks.http"}``, a variable
    assigned from one, an f-string on ``__name__``). An argument that leads to no literal counts every ``monitor.…``
    string in the module; with none, it is :data:`UNREAD`."""
    home = name if package else name.rpartition(".")[0]
    bindings: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign | ast.For) else []
        value = node.iter if isinstance(node, ast.For) else getattr(node, "value", None)
        for target in targets:
            for bound in ast.walk(target):
                if isinstance(bound, ast.Name) and value is not None:
                    bindings.setdefault(bound.id, []).append(value)
    found: dict[str, int] = {}
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and call.args and _called(call.func) in BY_STRING:
            strings = _strings(call.args[0], bindings, {"__name__": name, "__package__": home}, set())
            if not strings:
                strings = {
                    n.value
                    for n in ast.walk(tree)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("monitor")
                }
            for module in ({_module_of(s, known) for s in strings} - {""}) if strings else {UNREAD}:
                found.setdefault(module, call.lineno)
    return {module: line for module, line in found.items() if module != name}


def _called(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _strings(node: ast.AST, bindings: Mapping[str, list[ast.AST]], dunders: Mapping[str, str], seen: set[str]) -> set[str]:
    """The strings ``node`` may be made of, following names to what they are bound to."""
    if isinstance(node, ast.JoinedStr):  # f"{__name__}.{module}": what is known of it, up to the first unknown
        text = ""
        for value in node.values:
            if isinstance(value, ast.Constant):
                text += str(value.value)
            elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name) and value.value.id in dunders:
                text += dunders[value.value.id]
            else:
                break
        return {text.rstrip(".")} if text else set()
    found: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            found.add(child.value)
        elif isinstance(child, ast.Name) and child.id in dunders:
            found.add(dunders[child.id])
        elif isinstance(child, ast.Name) and child.id not in seen:
            for bound in bindings.get(child.id, []):
                found |= _strings(bound, bindings, dunders, seen | {child.id})
    return found


def _module_of(text: str, known: set[str]) -> str:
    """The monitor module a string names, as far as it names one: ``monitor.cli.main:main`` and ``monitor.cli.``
    -> ``monitor.cli.main`` and ``monitor.cli``; ``mcp`` -> nothing."""
    text = text.partition(":")[0].rstrip(".")
    while text and text not in known:
        text = text.rpartition(".")[0]
    return text


def imports_by_string(root: Path) -> list[tuple[str, str, int, str]]:
    """Every import by a string under the package at ``root``: (importer, imported, line, that line's text)."""
    known = modules(root)
    found = []
    for name, path in sorted(known.items()):
        source = path.read_text()
        if not any(call in source for call in BY_STRING):
            continue
        lines = source.splitlines()
        tree = ast.parse(source, str(path))
        for imported, line in sorted(by_string(tree, name, set(known), package=path.name == "__init__.py").items()):
            found.append((name, f"{root.name}.{imported}" if imported == UNREAD else imported, line, lines[line - 1].strip()))
    return found


class LayersContract(layers.LayersContract):
    """import-linter's layers contract over a graph that also holds the imports made by a string. An import it cannot
    follow is one of ``<container>.?``, a module in no layer, which an exhaustive contract refuses."""

    type_name = "layers_by_string"

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        for container in module_expressions_to_modules(graph, self.containers or ()):  # type: ignore[arg-type]
            spec = importlib.util.find_spec(container.name)
            assert spec is not None and spec.submodule_search_locations, f"{container.name} is no package"
            for importer, imported, line, text in imports_by_string(Path(next(iter(spec.submodule_search_locations)))):
                graph.add_import(importer=importer, imported=imported, line_number=line, line_contents=text)
        return super().check(graph, verbose)
