"""The layout's rules, read off the source: every part in its layer and never importing a part beside or above it
(import-linter's contracts in pyproject.toml, imports made by a string included: tests/layering.py), the import
machinery only where it is needed, no import cycle, and the parts that only handle values load no HTTP client."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest
from layering import UNREAD, by_string, imports_by_string, modules

import monitor

ROOT = Path(monitor.__file__).parent
PROJECT = ROOT.parent


def lint_imports(project: Path = PROJECT) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` as CI runs it, in ``project`` (its pyproject.toml's contracts, over its ``monitor/``)."""
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    return subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True, timeout=60)


def scratch_copy(tmp_path: Path) -> Path:
    """A copy of the project's package, its contracts and their contract type, for a change the contracts must refuse."""
    shutil.copytree(ROOT, tmp_path / "monitor", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tests").mkdir()
    shutil.copy(Path(__file__).with_name("layering.py"), tmp_path / "tests")
    shutil.copy(PROJECT / "pyproject.toml", tmp_path)
    return tmp_path


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The monitor modules ``path`` imports, anywhere in it (a lazy import inside a function counts), by a
    statement or by a string (:func:`layering.by_string`)."""
    package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    home = name if package else name.rpartition(".")[0]
    found: set[str] = set(by_string(tree, name, known, package=package))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*home.split(".")[: len(home.split(".")) - node.level + 1], *filter(None, [base])])
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)
    return {m for m in found if (m in known or m == UNREAD) and m != name}


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


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_monitor_has_no_import_cycle() -> None:
    """A package's ``__init__`` and one of its modules importing each other included, which import-linter's
    acyclic_siblings contract does not see (it compares siblings)."""
    assert cycle(graph()) is None


def test_the_import_contracts_are_kept() -> None:
    run = lint_imports()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Contracts: 3 kept, 0 broken." in run.stdout


def test_the_core_needs_nothing_outside_the_standard_library() -> None:
    outside: set[str] = set()
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


# The machinery, each way the review found lint-imports passed, as written at the end of a module of the core.
MACHINE = {
    "an f-string on the root": (
        '\n\ndef _cli(x: str) -> object:\n    import importlib\n\n    return importlib.import_module(f"monitor.{x}")\n'
    ),
    "a relative name": '\n\ndef _cli() -> object:\n    import importlib\n\n    return importlib.import_module(".cli.main", "monitor")\n',
    "a keyword": '\n\ndef _cli() -> object:\n    import importlib\n\n    return importlib.import_module(name="monitor.cli.main")\n',
    "another name": '\n\ndef _cli() -> object:\n    from importlib import import_module as load\n\n    return load("monitor.cli.main")\n',
    "a variable": (
        '\n\ndef _cli() -> object:\n    import importlib\n\n    im = importlib.import_module\n    return im("monitor.cli.main")\n'
    ),
    "getattr": '\n\ndef _cli() -> object:\n    import importlib\n\n    return getattr(importlib, "import_module")("monitor.cli.main")\n',
    "exec": '\n\ndef _cli() -> None:\n    exec("import monitor.cli.main")\n',
    "runpy": '\n\ndef _cli() -> object:\n    import runpy\n\n    return runpy.run_path("monitor/cli/main.py")\n',
    "sys.modules": '\n\ndef _cli() -> object:\n    import sys\n\n    return sys.modules["monitor.cli.main"]\n',
}

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
    "an argument it cannot follow": "import importlib\n\ndef load(module):\n    return importlib.import_module(module)\n",
    **{how: code.replace("\n\n\ndef _cli", "\n\ndef _cli") for how, code in MACHINE.items()},
}
UNFOLLOWED = {"an argument it cannot follow", "an f-string", "an f-string on the root", "another name", "a variable", "getattr"}


@pytest.mark.parametrize("how", BY_A_STRING)
def test_an_import_by_a_string_is_an_import(how: str) -> None:
    found = by_string(ast.parse(BY_A_STRING[how]), "monitor.core.state", set(modules(ROOT)))
    # one it cannot follow to a module (a name it was not given, a call in an f-string, the machinery under another
    # name or as a value) is refused as well
    assert set(found) == ({UNREAD} if how in UNFOLLOWED else {"monitor.cli.main"})


# Bypasses of the layers, each as written into monitor/core/state.py of a scratch copy, and what lint-imports says.
BYPASSES = {
    "a statement": (
        "\n\ndef _cli() -> object:\n    from monitor.cli import main\n\n    return main\n",
        "monitor.core.state -> monitor.cli.main",
    ),
    "a string": (
        '\n\ndef _cli() -> object:\n    import importlib\n\n    return importlib.import_module("monitor.cli.main")\n',
        "monitor.core.state -> monitor.cli.main",
    ),
    "a string it cannot follow": (
        "\n\ndef _load(module: str) -> object:\n    import importlib\n\n    return importlib.import_module(module)\n",
        "monitor.?",
    ),
}


@pytest.mark.parametrize("how", BYPASSES)
def test_the_contracts_fail_on_a_scratch_copy_whose_core_imports_the_cli(tmp_path: Path, how: str) -> None:
    code, said = BYPASSES[how]
    project = scratch_copy(tmp_path)
    with (project / "monitor" / "core" / "state.py").open("a") as state:
        state.write(code)
    run = lint_imports(project)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "included) BROKEN" in run.stdout and said in run.stdout, run.stdout


def test_the_contracts_fail_on_a_scratch_copy_with_a_part_in_no_layer(tmp_path: Path) -> None:
    project = scratch_copy(tmp_path)
    (project / "monitor" / "extras").mkdir()
    (project / "monitor" / "extras" / "__init__.py").write_text('"""A part nobody placed."""\n')
    run = lint_imports(project)
    assert run.returncode == 1 and "- monitor.extras" in run.stdout, run.stdout + run.stderr


# Modules of the core where the machinery is not allowed: one scratch copy holds each way of MACHINE in one of them,
# and one run of lint-imports must name every one (a run costs seconds; one per way made the suite minutes longer).
UNALLOWED = ("state", "audit", "batches", "catalogue", "causes", "cpus", "diagnoses", "errors", "members")


def test_the_machinery_contract_fails_on_a_scratch_copy_whose_core_uses_it(tmp_path: Path) -> None:
    """Where the machinery is not allowed, any use of it breaks the machinery contract: each way, in its own module."""
    project = scratch_copy(tmp_path)
    placed = dict(zip(MACHINE, UNALLOWED, strict=True))
    for how, module in placed.items():
        with (project / "monitor" / "core" / f"{module}.py").open("a") as source:
            source.write(MACHINE[how])
    run = lint_imports(project)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "only where it is needed BROKEN" in run.stdout, run.stdout
    missed = [how for how, module in placed.items() if f"- monitor.core.{module} (l." not in run.stdout]
    assert not missed, run.stdout


def test_the_machinery_contract_is_kept_by_the_modules_the_scratch_copy_changes() -> None:
    """Without the ways written into them, those modules keep the contract (so each one above is named for its way)."""
    run = lint_imports()
    assert not any(f"- monitor.core.{module} (l." in run.stdout for module in UNALLOWED), run.stdout


@pytest.mark.parametrize("how", MACHINE)
def test_the_layers_contract_reads_the_machinery_where_it_is_allowed(tmp_path: Path, how: str) -> None:
    """Where the machinery is allowed (monitor/core/plugins.py, for entry points), what it imports is what the layers
    contract adds to import-linter's graph: the CLI from the core, which the layers refuse, or ``monitor.?``, a module
    in no layer, for an import it cannot read (lint-imports runs on a string read this way in the bypasses above)."""
    project = scratch_copy(tmp_path)
    with (project / "monitor" / "core" / "plugins.py").open("a") as plugins:
        plugins.write(MACHINE[how])
    added = {(importer, imported) for importer, imported, _, _ in imports_by_string(project / "monitor")}
    assert ("monitor.core.plugins", "monitor.?" if how in UNFOLLOWED else "monitor.cli.main") in added
