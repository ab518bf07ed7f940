"""The imports import-linter cannot see, and the two contract types that hold them (pyproject.toml's
``[tool.importlinter]``; ``lint-imports``, run from the repository root by tests/test_layers.py and .ci/run, imports
this module as ``tests.layering``):

- ``import_machinery`` (:class:`MachineryContract`): the import machinery (``importlib``, ``runpy``, ``pkgutil``,
  ``__import__``, ``exec``, ``eval``, ``sys.modules``) is used only in the few modules the contract allows, each for a
  reason pyproject.toml gives; ``from importlib import resources`` (a package's data) is everyone's.
- ``layers_by_string`` (:class:`LayersContract`): import-linter's layers over a graph that also holds the imports made
  by a string (``importlib.import_module("monitor.cli.main")``), read off the source of every module: each import
  call's argument followed to the literals it is made of. An import whose module cannot be read that way (a name made
  at run time, the machinery under another name) imports ``<container>.?``, a module in no layer, which is refused.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import cast

import grimp
from importlinter.application import output
from importlinter.contracts import layers
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck
from importlinter.domain.helpers import module_expressions_to_modules

# The calls that import a module named by a string: importlib's, the builtin, runpy's, a fork server's preload list, and
# a package's data (``resources.files("monitor.web")`` imports monitor.web). The name is their first argument, or one
# of these keywords.
BY_STRING = {
    "import_module",
    "__import__",
    "find_spec",
    "spec_from_file_location",
    "resolve_name",
    "run_module",
    "run_path",
    "set_forkserver_preload",
    "files",
}
NAMED_BY = ("name", "module", "mod_name", "path_name", "anchor", "module_names")
RUN = {"exec", "eval"}  # their string is Python: its imports are read as the module's own
UNREAD = "?"  # what an import by a string this check cannot follow imports: a module in no layer, so it is refused
# The machinery, refused outside the modules a MachineryContract allows.
MACHINERY = {"importlib", "runpy", "pkgutil", "imp", "zipimport", "builtins"}
DUNDERS = {"__import__", "__builtins__", "__loader__", "__spec__", *RUN}


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(path, root): path for path in root.rglob("*.py")}


def by_string(tree: ast.AST, name: str, known: set[str], *, package: bool = False) -> dict[str, int]:
    """The modules imported by a string, each with the line of its first import: each import call's argument,
    followed to the literals it is made of (a module constant ``KINDS = {"http": "monitor.checks.http"}``, a variable
    assigned from one, an f-string on ``__name__``, a relative name and its package); the imports in a literal that
    ``exec`` or ``eval`` runs; the key of ``sys.modules[...]``. An argument that leads to no literal counts every
    ``monitor.…`` string in the module, and with none it is :data:`UNREAD`; so is an f-string with a part this cannot
    read, and the machinery taken under another name or as a value (``load = import_module``)."""
    home = name if package else name.rpartition(".")[0]
    reading = Strings(tree, {"__name__": name, "__package__": home})
    every = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("monitor")}
    found: dict[str, int] = {}
    for node, named in _imports(tree, reading):
        strings = named or every
        for module in {UNREAD} if not strings or UNREAD in strings else {_module_of(s, known) for s in strings} - {""}:
            found.setdefault(module, getattr(node, "lineno", 1))
    return {module: line for module, line in found.items() if module != name}


def _imports(tree: ast.AST, reading: Strings) -> Iterator[tuple[ast.AST, set[str]]]:
    """Each import by a string in ``tree``, with the strings its module may be (empty: none read)."""
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node.func) in BY_STRING:
            yield node, _named(node, reading)
        elif isinstance(node, ast.Call) and _called(node.func) in RUN:
            yield node, _run(node, reading)
        elif _modules_of_sys(node):
            key = node.slice if isinstance(node, ast.Subscript) else node.args[0] if isinstance(node, ast.Call) and node.args else None
            yield node, {UNREAD} if key is None else reading.strings(key) or {UNREAD}
        elif _as_a_value(node, called):
            yield node, {UNREAD}  # the machinery as a value: what it is called with is not read here
        elif isinstance(node, ast.ImportFrom) and any(a.name in BY_STRING | RUN and a.asname not in (None, a.name) for a in node.names):
            yield node, {UNREAD}  # under another name
        elif _machinery_by_getattr(node):
            yield node, {UNREAD}


def _as_a_value(node: ast.AST, called: set[int]) -> bool:
    """The machinery named and not called: ``load = importlib.import_module``, ``run = exec``."""
    if id(node) in called:
        return False
    if isinstance(node, ast.Name):
        return node.id in (BY_STRING - {"files"}) | RUN
    return isinstance(node, ast.Attribute) and _called(node) in BY_STRING


def _machinery_by_getattr(node: ast.AST) -> bool:
    """``getattr(importlib, "import_module")``, ``getattr(sys, name)``: the machinery by a name."""
    if not (isinstance(node, ast.Call) and _called(node.func) == "getattr" and len(node.args) > 1):
        return False
    named = node.args[1]
    return (isinstance(named, ast.Constant) and named.value in BY_STRING | RUN | MACHINERY | {"modules"}) or _called(
        node.args[0]
    ) in MACHINERY | {"sys"}


def _called(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return "" if func.attr == "files" and ast.unparse(func.value) not in ("resources", "importlib.resources") else func.attr
    return func.id if isinstance(func, ast.Name) and func.id != "files" else ""


def _named(call: ast.Call, reading: Strings) -> set[str]:
    """The modules an import call may name: its first argument (or keyword), a relative one resolved on its package."""
    named = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg in NAMED_BY), None)
    if named is None:
        return {UNREAD}
    strings = reading.strings(named)
    package = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "package"), None)
    relative = {s for s in strings if s.startswith(".")}
    if not relative:
        return {_path_module(s) if _called(call.func) == "run_path" else s for s in strings}
    bases = reading.strings(package) if package is not None else set()
    if not bases or UNREAD in bases:
        return {UNREAD}
    resolved = set()
    for text in relative:
        dots = len(text) - len(text.lstrip("."))
        resolved |= {f"{base.rsplit('.', dots - 1)[0] if dots > 1 else base}.{text.lstrip('.')}".rstrip(".") for base in bases}
    return (strings - relative) | resolved


def _path_module(text: str) -> str:
    """A file ``run_path`` runs as the module it is: ``monitor/cli/main.py`` -> ``monitor.cli.main``."""
    parts = Path(text).with_suffix("").parts
    return ".".join(parts[parts.index("monitor") :]) if "monitor" in parts else UNREAD


def _run(call: ast.Call, reading: Strings) -> set[str]:
    """The modules the Python that ``exec`` or ``eval`` runs imports, when it is a literal."""
    sources = reading.strings(call.args[0]) if call.args else {UNREAD}
    found: set[str] = set()
    for source in sources:
        try:
            code = ast.parse(source, mode="exec")
        except SyntaxError:
            return {UNREAD}
        found |= {alias.name for node in ast.walk(code) if isinstance(node, ast.Import) for alias in node.names}
        found |= {f"{node.module}.{a.name}" for node in ast.walk(code) if isinstance(node, ast.ImportFrom) for a in node.names}
        found |= {s for _, strings in _imports(code, Strings(code, reading.dunders)) for s in strings}
    return found or {UNREAD}


def _modules_of_sys(node: ast.AST) -> bool:
    """``sys.modules[name]``, ``sys.modules.get(name)``, ``.setdefault`` or ``.pop``: a module by a string."""
    if isinstance(node, ast.Subscript):
        target = node.value
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("get", "setdefault", "pop", "__getitem__")
    ):
        target = node.func.value
    else:
        return False
    return isinstance(target, ast.Attribute) and target.attr == "modules" and _called(target.value) == "sys"


class Strings:
    """The strings an expression of one module may be, following names to what they are bound to."""

    def __init__(self, tree: ast.AST, dunders: Mapping[str, str]) -> None:
        self.dunders = dunders
        self.bindings: dict[str, list[ast.AST]] = {}
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign | ast.For) else []
            value = node.iter if isinstance(node, ast.For) else getattr(node, "value", None)
            for target in targets:
                for bound in ast.walk(target):
                    if isinstance(bound, ast.Name) and value is not None:
                        self.bindings.setdefault(bound.id, []).append(value)

    def strings(self, node: ast.AST, seen: frozenset[str] = frozenset()) -> set[str]:
        if isinstance(node, ast.JoinedStr):  # f"{__name__}.{module}": what each part may be; UNREAD for one unknown
            texts = {""}
            for value in node.values:
                if isinstance(value, ast.Constant):
                    parts = {str(value.value)}
                elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name):
                    parts = self.strings(value.value, seen)
                else:
                    parts = set()
                if not parts or UNREAD in parts:
                    return {UNREAD}
                texts = {text + part for text in texts for part in parts}
            return texts
        if isinstance(node, ast.Constant):
            return {node.value} if isinstance(node.value, str) else set()
        if isinstance(node, ast.Name) and node.id in self.dunders:
            return {self.dunders[node.id]}
        if isinstance(node, ast.Name):
            return {s for bound in self.bindings.get(node.id, []) if node.id not in seen for s in self.strings(bound, seen | {node.id})}
        if isinstance(node, ast.Call):  # where.partition(":"), KINDS.get(name): the value's strings, and the arguments'
            receiver = self.strings(node.func.value, seen) if isinstance(node.func, ast.Attribute) else set()
            arguments = {s for child in [*node.args, *(k.value for k in node.keywords)] for s in self.strings(child, seen)}
            return receiver | (arguments - {UNREAD})  # an argument it cannot read is a key, not the value
        return {s for child in ast.iter_child_nodes(node) for s in self.strings(child, seen)}


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
        lines = source.splitlines()
        tree = ast.parse(source, str(path))
        for imported, line in sorted(by_string(tree, name, set(known), package=path.name == "__init__.py").items()):
            found.append((name, f"{root.name}.{imported}" if imported == UNREAD else imported, line, lines[line - 1].strip()))
    return found


def machinery(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each use of the import machinery in a module: an import of it (but ``from importlib import
    resources``, and what only a type checker imports), the builtins that import or run code, and ``sys.modules``
    (but asking whether a module is loaded: ``"httpx" in sys.modules``)."""
    typing_only = {id(n) for node in ast.walk(tree) if _type_checking(node) for n in ast.walk(node)}
    compared = (node for node in ast.walk(tree) if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn))
    asked = {id(c) for node in compared for c in node.comparators}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            yield from ((node.lineno, f"import {a.name}") for a in node.names if a.name.partition(".")[0] in MACHINERY)
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").partition(".")[0] in MACHINERY | {"sys"}:
            names = [a.name for a in node.names]
            if (node.module, names) != ("importlib", ["resources"]) and (node.module != "sys" or "modules" in names):
                yield node.lineno, f"from {node.module} import {', '.join(names)}"
        elif isinstance(node, ast.Name) and node.id in DUNDERS:
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute | ast.Call) and _reaches_machinery(node, asked):
            yield node.lineno, ast.unparse(node)


def _reaches_machinery(node: ast.Attribute | ast.Call, asked: set[int]) -> bool:
    """``x.importlib`` (a module's import of it), ``x.__builtins__``, ``sys.modules`` (but ``name in sys.modules``),
    ``sys.__dict__``, ``getattr(sys, ...)``, ``vars(builtins)``."""
    if isinstance(node, ast.Call):
        return _called(node.func) in ("getattr", "vars") and bool(node.args) and _called(node.args[0]) in ("sys", "builtins")
    if node.attr in MACHINERY | DUNDERS - RUN:
        return True
    return node.attr in ("modules", "__dict__") and _called(node.value) in ("sys", "builtins") and id(node) not in asked


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _package(container: str) -> Path:
    spec = importlib.util.find_spec(container)
    assert spec is not None and spec.submodule_search_locations, f"{container} is no package"
    return Path(next(iter(spec.submodule_search_locations)))


class LayersContract(layers.LayersContract):
    """import-linter's layers contract over a graph that also holds the imports made by a string. An import it cannot
    follow is one of ``<container>.?``, a module in no layer, which an exhaustive contract refuses."""

    type_name = "layers_by_string"

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        for container in module_expressions_to_modules(graph, self.containers or ()):  # type: ignore[arg-type]
            for importer, imported, line, text in imports_by_string(_package(container.name)):
                graph.add_import(importer=importer, imported=imported, line_number=line, line_contents=text)
        return super().check(graph, verbose)


class MachineryContract(Contract):
    """The import machinery only in the modules ``allowed`` (each for a reason pyproject.toml gives), so that every
    other module's imports are statements import-linter reads."""

    type_name = "import_machinery"
    containers = fields.ListField(subfield=fields.StringField())
    allowed = fields.SetField(subfield=fields.StringField(), required=False)

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        # the fields hold the options' values once the contract is made (Contract._populate_fields)
        allowed, containers = set(cast(Iterable[str], self.allowed or ())), cast(list[str], self.containers)
        found: list[tuple[str, int, str]] = []
        using: set[str] = set()
        for container in containers:
            for name, path in sorted(modules(_package(container)).items()):
                uses = sorted(set(machinery(ast.parse(path.read_text(), str(path)))))
                using |= {name} if uses else set()
                found += [] if name in allowed else [(name, line, what) for line, what in uses]
        unused = sorted(allowed - using)
        return ContractCheck(kept=not found and not unused, metadata={"found": found, "unused": unused})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for name, line, what in check.metadata["found"]:
            output.print_error(f"- {name} (l.{line}): {what}", bold=False)
        for name in check.metadata["unused"]:
            output.print_error(f"- {name} is allowed the machinery, and uses none (take it off the list)", bold=False)
        output.new_line()
