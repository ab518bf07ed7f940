"""The layout's rules, read off the source: no import cycle, every part in its layer and never importing a part
beside or above it, and the parts that only handle values load no HTTP client."""

from __future__ import annotations

import ast
import shutil
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
            {"wiring"},  # the composition root: every process's writer, tracker, recorder, alerts and agent made there
            {"web"},
            {"daemon", "eval"},
            {"demo", "mcp"},  # mcp: the MCP server reads what the web shows, and investigates as the CLI does
            {"cli"},
            {"__main__"},
        ),
    )
)


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def part(module: str) -> str:
    """The part a module belongs to: ``monitor.checks.http`` -> ``checks``; the package itself is ``monitor``."""
    return module.split(".")[1] if "." in module else module


def modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(path, root): path for path in root.rglob("*.py")}


# The calls that import a module named by a string (their first argument): importlib's, the builtin, runpy's, and a fork
# server's preload list.
BY_STRING = {"import_module", "__import__", "find_spec", "spec_from_file_location", "resolve_name", "run_module", "set_forkserver_preload"}
UNREAD = "?"  # what an import by a string this check cannot follow imports: a part above all, so it is refused


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The monitor modules ``path`` imports, anywhere in it (a lazy import inside a function counts), by a
    statement or by a string (:func:`by_string`)."""
    return imports_in(ast.parse(path.read_text(), str(path)), name, known, package=path.name == "__init__.py")


def imports_in(tree: ast.AST, name: str, known: set[str], *, package: bool = False) -> set[str]:
    home = name if package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*home.split(".")[: len(home.split(".")) - node.level + 1], *filter(None, [base])])
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    found.update(by_string(tree, name, home, known))
    return {m for m in found if (m in known or m == UNREAD) and m != name}


def by_string(tree: ast.AST, name: str, home: str, known: set[str]) -> set[str]:
    """The modules imported by a string: each import call's argument, followed to the literals it is made of
    (a module constant ``KINDS = {"http": "monitor.checks.http"}``, a variable assigned from one, an f-string on
    ``__name__``). An argument that leads to no literal counts every ``monitor.…`` string in the module; with none,
    it is :data:`UNREAD`."""
    bindings: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign | ast.For) else []
        value = node.iter if isinstance(node, ast.For) else getattr(node, "value", None)
        for target in targets:
            for bound in ast.walk(target):
                if isinstance(bound, ast.Name) and value is not None:
                    bindings.setdefault(bound.id, []).append(value)
    found: set[str] = set()
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and call.args and _called(call.func) in BY_STRING:
            strings = _strings(call.args[0], bindings, {"__name__": name, "__package__": home}, set())
            if not strings:
                strings = {
                    n.value
                    for n in ast.walk(tree)
                    if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.startswith("monitor")
                }
            found.update(({_module_of(s, known) for s in strings} - {""}) if strings else {UNREAD})
    return found


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
            for value in bindings.get(child.id, []):
                found |= _strings(value, bindings, dunders, seen | {child.id})
    return found


def _module_of(text: str, known: set[str]) -> str:
    """The monitor module a string names, as far as it names one: ``monitor.cli.main:main`` and ``monitor.cli.``
    -> ``monitor.cli.main`` and ``monitor.cli``; ``mcp`` -> nothing."""
    text = text.partition(":")[0].rstrip(".")
    while text and text not in known:
        text = text.rpartition(".")[0]
    return text


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    known = modules(root)
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


def old_imports(tree: ast.AST, known: set[str]) -> set[str]:
    """The rule as it was: import statements only."""
    found = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    found |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    return found & known


# Ways to import the CLI from the core by a string, each as it could be written into monitor/core/state.py.
BY_A_STRING = {
    "a literal": 'import importlib\nimportlib.import_module("monitor.cli.main")\n',
    "a module constant": 'import importlib\nCLI = "monitor.cli.main"\n\ndef load():\n    return importlib.import_module(CLI)\n',
    "a table of them": (
        'from importlib import import_module\nKINDS = {"http": ("monitor.cli.main", ("http",))}\n\n'
        "def get(name):\n    module, _ = KINDS[name]\n    return import_module(module)\n"
    ),
    "the builtin": '__import__("monitor.cli.main")\n',
    "importlib.util": (
        'import importlib.util\nspec = importlib.util.find_spec("monitor.cli.main")\nmodule = importlib.util.module_from_spec(spec)\n'
        "spec.loader.exec_module(module)\n"
    ),
    "an f-string": "import importlib\nimportlib.import_module(f\"{__package__.rpartition('.')[0]}.cli.main\")\n",
    "an argument": 'import importlib\nWHERE = "monitor.cli.main"\n\ndef load(module):\n    return importlib.import_module(module)\n',
}


def test_an_import_by_a_string_is_an_import() -> None:
    known = set(modules())
    layers = tuple(map(frozenset, ({"monitor"}, {"core"}, {"cli"})))
    for how, source in BY_A_STRING.items():
        tree = ast.parse(source)
        assert "monitor.cli.main" not in old_imports(tree, known), how  # the old rule let it through
        edges = {"monitor.core.state": imports_in(tree, "monitor.core.state", known)}
        assert wrong_way(edges, layers) in (
            ["monitor.core.state -> monitor.cli.main (core -> cli)"],
            [f"monitor.core.state -> {UNREAD} (core -> {UNREAD})"],  # one it cannot follow is refused as well
        ), how


def test_the_layer_check_fails_on_a_scratch_copy_that_imports_the_cli_by_a_string(tmp_path: Path) -> None:
    copy = tmp_path / "monitor"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    with (copy / "core" / "state.py").open("a") as state:
        state.write('\n\ndef _cli() -> object:\n    import importlib\n\n    return importlib.import_module("monitor.cli.main")\n')
    assert wrong_way(graph(copy), LAYERS) == ["monitor.core.state -> monitor.cli.main (core -> cli)"]
