"""Who may change what, read off the source: the rules tests/test_one_writer.py holds ``monitor/`` to.

Outside the store (``monitor/store/``, its implementation) and the composition root (``monitor/wiring.py``):

- a write is called only from the modules that own it (:data:`WRITERS`), whatever its receiver is named;
- nothing names what the store keeps to itself (:data:`SEALED`): the incident-writing part and the writer's hold on
  it, what a part stands on, a transaction, a statement (all SQL lives in the store); nor a class's private, mangled
  name (``_Reads__engine``);
- no attribute is reached by a name made at run time: ``getattr``, ``operator.methodcaller`` and ``attrgetter``,
  ``vars()`` and ``__dict__`` take a name that leads to literals here (a constant, a tuple of them, a loop over one),
  none of them a write or a sealed name; ``__getattribute__`` is never called by hand. An object's own attributes
  (``getattr(self, name)``) are its own business; :data:`DYNAMIC` lists the few places that need more, with why;
- the store, the writer, tracker, recorder, alerts and agent, and what they are made of (:data:`MADE_ONLY_IN_ROOT`),
  are named only in annotations and plain imports: no alias, no module attribute, no call, no ``getattr`` (the root
  makes them).

Python lets any code reach anything at run time; these rules refuse each way of writing it that the source shows.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import monitor

ROOT = Path(monitor.__file__).parent
ROOT_MODULE = "monitor/wiring.py"
WRITER_MODULE = "monitor/incidents/writer.py"

INCIDENT_WRITES = {
    "open_incident",
    "open_incident_unless_open",
    "update_incident",
    "append_incident_note",
    "close_incident",
    "record_diagnosis",
    "add_public_note",
    "mark_interrupted_runs",
    "forget_incidents",
    "add_incident_link",
}
# each write, the modules that may call it (the store's own modules are its implementation)
WRITERS = {
    **dict.fromkeys(INCIDENT_WRITES, {WRITER_MODULE}),
    "load_dump": {WRITER_MODULE},  # an import adds incidents: Writer.import_dump
    "add_results": {"monitor/incidents/recorder.py"},
    "add_rows": {"monitor/incidents/recorder.py"},
    "record_ping": {"monitor/checks/heartbeat.py"},  # a job's pings, which the heartbeat check judges
    "watch_heartbeats": {"monitor/checks/heartbeat.py"},
    "prune": {"monitor/daemon/housekeeping.py"},  # retention
    "drop_hourly_counts": set(),
    "enqueue": set(),
    "enqueue_follow_up": {"monitor/alerts/delivery.py"},
    "record_config_change": {"monitor/web/editor.py"},  # the log of config changes from the web UI and the admin API
}
# What only the store and the root may name (an attribute, an import, a string), and who else may.
SEALED = {
    "IncidentWrites": {WRITER_MODULE},  # the incident-writing part: the root makes it, the writer is handed it
    "_writes": {WRITER_MODULE},  # the writer's own hold on it
    "_db": set(),  # what a part stands on: a reader's, the read-only handle; a writing part's, the store
    "_database": set(),
    "_transaction": set(),  # a part's transaction, and the store's
    "transaction": set(),
    "execute": {"monitor/importers/kuma_db.py"},  # SQL lives in the store; the Kuma importer reads Kuma's own file
    "executemany": set(),
    "executescript": set(),
}
# What only the root makes, each by the module that defines it (IncidentWrites: the incident-writing part, which the
# root hands to the one writer; nothing else has its methods)
MADE_ONLY_IN_ROOT = {
    "Store": "monitor.store",
    "Writer": "monitor.incidents.writer",
    "IncidentWrites": "monitor.store.writes",
    "Tracker": "monitor.incidents.tracker",
    "Recorder": "monitor.incidents.recorder",
    "Alerts": "monitor.alerts.delivery",
    "Routes": "monitor.alerts.routes",
    "Maintenance": "monitor.incidents.maintenance",
    "Publisher": "monitor.incidents.events",
    "Investigator": "monitor.agent.investigator",
    "Toolbox": "monitor.agent.tools.base",
    "WebAudit": "monitor.store.writers",
    "ConfigLog": "monitor.store.writers",
}
# The calls that reach an attribute by a name, and which of their arguments is the name (None: each of them).
BY_NAME: dict[str, int | None] = {"getattr": 1, "getattr_static": 1, "methodcaller": 0, "attrgetter": None}
NEVER = {"__getattribute__", "__getattr__", "getmembers", "getmembers_static"}  # called by hand: refused
# Where a name made at run time reaches an attribute, and why nothing of the store's can be behind it.
DYNAMIC = {
    ("monitor/config/__init__.py", "__getattr__"): "the package's lazy names, each a module of its own (_WHERE)",
    ("monitor/config/rules.py", "receiver_names"): "a raw or validated alerts section's keys",
    ("monitor/config/values.py", "settle"): "a frozen model's derived fields, set while it is being validated",
    ("monitor/agent/models.py", "__getattr__"): "litellm's module, whose attributes the model lends",
    ("monitor/cli/main.py", "command"): "a click command by its entry in COMMANDS",
    ("monitor/cli/common.py", "print_results"): "a Result's own fields (JSON_KEYS: dataclasses.fields)",
    ("monitor/alerts/registry.py", "receivers"): "the alerts config's section of each built-in receiver kind",
    ("monitor/memory/embedding.py", "_field"): "an embedding answer's field, index or embedding",
    ("monitor/memory/embedding.py", "incident_text"): "an incident's text fields (INCIDENT_FIELDS)",
    ("monitor/web/charts.py", "size_chart"): "a memory sample's field the memory page charts (core/memory.MemorySample)",
}


def calls(root: Path = ROOT) -> Iterator[tuple[str, str, str, str]]:
    """(module, the function it is in, receiver, name) of every ``receiver.name(...)`` and ``Name(...)`` under monitor/."""
    for path in sorted(root.rglob("*.py")):
        module = str(path.relative_to(root.parent))
        if not module.startswith("monitor/store/"):  # the store's own modules are its implementation
            yield from calls_in(module, path.read_text())


@functools.cache
def calls_in(module: str, source: str) -> tuple[tuple[str, str, str, str], ...]:
    return tuple(_calls(module, ast.parse(source), ""))


def _calls(module: str, node: ast.AST, function: str) -> Iterator[tuple[str, str, str, str]]:
    for child in ast.iter_child_nodes(node):
        inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
            yield module, inner, ast.unparse(child.func.value), child.func.attr
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            yield module, inner, "", child.func.id
            if child.func.id == "getattr" and len(child.args) > 1 and isinstance(named := child.args[1], ast.Constant):
                yield module, inner, ast.unparse(child.args[0]), str(named.value)  # getattr(db, "close_incident")
        elif isinstance(child, ast.Attribute) and child.attr in WRITERS and not isinstance(child.ctx, ast.Store):
            yield module, inner, ast.unparse(child.value), child.attr  # a write method taken to call later
        yield from _calls(module, child, inner)


def refused(found: Iterable[tuple[str, str, str, str]]) -> list[str]:
    """Each call of a store's write outside the modules that own it, whatever the receiver is named: a write
    is known by its method (``db = site.store.incidents; db.close_incident(...)`` is a write too)."""
    return sorted({f"{m}: {r}.{name}()" for m, _, r, name in found if name in WRITERS and r and m not in WRITERS[name]})


def refusals(root: Path = ROOT, *, dynamic: frozenset[tuple[str, str]] = frozenset(DYNAMIC)) -> list[str]:
    """Everything under the package at ``root`` that the rules refuse, one line each (``module:line: what (why)``);
    ``dynamic``: the places a name made at run time may reach an attribute."""
    found = refused(calls(root))
    for path in sorted(root.rglob("*.py")):
        module = str(path.relative_to(root.parent))
        if not module.startswith("monitor/store/") and module != ROOT_MODULE:
            found += sealed(module, path.read_text(), dynamic)
    return found


@functools.cache
def sealed(module: str, source: str, dynamic: frozenset[tuple[str, str]]) -> list[str]:
    """What ``module`` names that it may not, or reaches by a name made at run time (read once per source)."""
    tree = ast.parse(source)
    return sorted(set(Reading(module, tree, dynamic).refusals(tree, "")))


class Reading:
    """One module as the rules read it: what each local name was imported as, what each variable is bound to, which
    nodes are called, subscripted or inside an annotation."""

    def __init__(self, module: str, tree: ast.AST, dynamic: frozenset[tuple[str, str]] = frozenset(DYNAMIC)) -> None:
        self.module, self.dynamic = module, dynamic
        self.imported: dict[str, str] = {}  # the local name of an import: the name it was imported by
        self.paths: dict[str, str] = {}  # the local name of an import: the dotted path it stands for
        self.here = module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        self.bound: dict[str, list[ast.expr | None]] = {}  # None: bound to what this cannot follow (a parameter)
        self.called: set[int] = set()
        self.keys: dict[int, ast.expr] = {}  # a node subscripted: its key
        self.annotation: set[int] = set()
        self.local: dict[int, ast.expr] = {}  # a name inside a comprehension that binds it: what it is bound to there
        for node in ast.walk(tree):
            self._note(node)

    def _note(self, node: ast.AST) -> None:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                local = alias.asname or alias.name.partition(".")[0]
                self.imported[local] = alias.name.rpartition(".")[2] if alias.asname or isinstance(node, ast.ImportFrom) else local
                self.paths[local] = self._path_of(node, alias)
                self._bind(ast.Name(local), None)
        elif isinstance(node, ast.Call):
            self.called.add(id(node.func))
        elif isinstance(node, ast.Subscript):
            self.keys[id(node.value)] = node.slice
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                self._bind(target, node.value)
        elif isinstance(node, ast.For | ast.AsyncFor):
            self._bind(node.target, node.iter)
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            for generator in node.generators:
                targets = {name.id for name in ast.walk(generator.target) if isinstance(name, ast.Name)}
                for name in ast.walk(node):
                    if isinstance(name, ast.Name) and name.id in targets and isinstance(name.ctx, ast.Load):
                        self.local[id(name)] = generator.iter
        elif isinstance(node, ast.arg):
            self._bind(ast.Name(node.arg), None)
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            self.annotation.update(id(n) for n in ast.walk(node.annotation))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            self.annotation.update(id(n) for n in ast.walk(node.returns))

    def _path_of(self, node: ast.Import | ast.ImportFrom, alias: ast.alias) -> str:
        if isinstance(node, ast.Import):
            return alias.name if alias.asname else alias.name.partition(".")[0]
        base = node.module or ""
        if node.level:  # from . import x, from ..store import Store
            package = self.here if self.module.endswith("__init__.py") else self.here.rpartition(".")[0]
            base = f"{package.rsplit('.', node.level - 1)[0]}.{base}".rstrip(".")
        return f"{base}.{alias.name}"

    def path(self, node: ast.expr, here: str) -> str:
        """What a name or an attribute stands for: an import's path; a name of the module's own (``here``), its own;
        "?" for an object the source does not name (a variable, a call)."""
        if isinstance(node, ast.Name):
            return self.paths.get(node.id, f"{here}.{node.id}")
        if isinstance(node, ast.Attribute):
            return f"{self.path(node.value, '?')}.{node.attr}"
        return "?"

    def made_by_root(self, path: str) -> bool:
        name = path.rpartition(".")[2]
        return name in MADE_ONLY_IN_ROOT and path.startswith(("?", MADE_ONLY_IN_ROOT[name] + "."))

    def _bind(self, target: ast.AST, value: ast.expr | None) -> None:
        for name in ast.walk(target):
            if isinstance(name, ast.Name):
                self.bound.setdefault(name.id, []).append(value)

    def refusals(self, node: ast.AST, function: str) -> Iterator[str]:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            for why in self._refused(child, inner):
                yield f"{self.module}:{getattr(child, 'lineno', 0)}: {ast.unparse(child)[:80]} ({why})"
            yield from self.refusals(child, inner)

    def _refused(self, node: ast.AST, function: str) -> Iterator[str]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                name = alias.name.rpartition(".")[2]
                yield from self._named(name)
                if self.made_by_root(self._path_of(node, alias)) and alias.asname not in (None, name):
                    yield f"{name} under another name: the root makes it"
            return
        if isinstance(node, ast.Call):
            yield from self._by_name(node, function)
        if not isinstance(node, ast.Name | ast.Attribute):
            return
        name = self.imported.get(node.id, node.id) if isinstance(node, ast.Name) else node.attr
        yield from self._named(name)
        if self.made_by_root(self.path(node, self.here)) and id(node) not in self.annotation:
            yield f"{name} outside an annotation: the root makes it"
        if name in {*BY_NAME, "vars"} and id(node) not in self.called:
            yield f"{name} taken as a value: what it reaches cannot be read"
        if name in NEVER:
            yield f"{name}: an attribute by a name made at run time"
        if name == "__dict__":
            yield from self._key(node, function)

    def _named(self, name: str) -> Iterator[str]:
        if name in SEALED and self.module not in SEALED[name]:
            yield f"{name} is the store's own"
        elif re.fullmatch(r"_[A-Za-z]\w*__\w+", name):  # a class's private name, mangled: reader._db._Reads__engine
            yield f"{name} is private to its class"

    def _by_name(self, call: ast.Call, function: str) -> Iterator[str]:
        called = self.imported.get(call.func.id, call.func.id) if isinstance(call.func, ast.Name) else getattr(call.func, "attr", "")
        if called == "vars":
            yield from self._key(call, function)
        if called not in BY_NAME:
            return
        place = BY_NAME[called]
        if place is not None and len(call.args) <= place:
            yield f"{called} with no name this can read"
            return
        if called == "getattr" and isinstance(call.args[0], ast.Name) and call.args[0].id in ("self", "cls"):
            names = self.strings(call.args[1])  # an object's own attributes: a name made at run time is its business
            yield from self._names(names or set(), function)
            return
        yield from self._names(self.strings_of(call.args if place is None else [call.args[place]]), function)

    def _key(self, node: ast.AST, function: str) -> Iterator[str]:
        """``vars(x)[key]`` or ``x.__dict__[key]``: the key as a name; anything else of them, a name made at run time."""
        key = self.keys.get(id(node))
        yield from self._names(None if key is None else self.strings(key), function)

    def _names(self, names: set[str] | None, function: str) -> Iterator[str]:
        if names is None:
            if (self.module, function) not in self.dynamic:
                yield f"an attribute by a name made at run time, in {function or 'the module'}"
            return
        for part in {part for name in names for part in name.split(".")}:
            if part in WRITERS and self.module not in WRITERS[part]:
                yield f"{part}: a write this module does not own"
            if part in MADE_ONLY_IN_ROOT:
                yield f"{part} by a name: the root makes it"
            yield from self._named(part)

    def strings_of(self, nodes: Iterable[ast.expr]) -> set[str] | None:
        found: set[str] = set()
        for node in nodes:
            strings = self.strings(node)
            if strings is None:
                return None
            found |= strings
        return found

    def strings(self, node: ast.expr | None, seen: frozenset[str] = frozenset()) -> set[str] | None:
        """The strings ``node`` may be, as far as literals say (more than it can be, never fewer); None when it
        leads to something this cannot follow (a parameter, a call, an import)."""
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return {node.value} if isinstance(node.value, str) else set()
        if isinstance(node, ast.Name):
            if node.id in seen:
                return set()
            if id(node) in self.local:
                return self.strings(self.local[id(node)], seen | {node.id})
            return self.strings_of_bound(self.bound.get(node.id) or [None], seen | {node.id})
        if isinstance(node, ast.BinOp):  # "close_" + "incident" as a sum, [..] + [..] as a union: both
            left, right = self.strings(node.left, seen), self.strings(node.right, seen)
            if left is None or right is None:
                return None
            return left | right | {a + b for a in left for b in right}
        return self._parts(node, seen)

    def strings_of_bound(self, values: list[ast.expr | None], seen: frozenset[str]) -> set[str] | None:
        found: set[str] = set()
        for value in values:
            strings = None if value is None else self.strings(value, seen)
            if strings is None:
                return None
            found |= strings
        return found

    def _parts(self, node: ast.expr, seen: frozenset[str]) -> set[str] | None:
        parts: list[ast.expr | None]
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            parts = list(node.elts)
        elif isinstance(node, ast.Dict):
            parts = [*node.keys, *node.values]
        elif isinstance(node, ast.JoinedStr):
            return (
                {"".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))}
                if all(isinstance(v, ast.Constant) for v in node.values)
                else None
            )
        elif isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            parts = [node.elt]
        elif isinstance(node, ast.DictComp):
            parts = [node.key, node.value]
        elif isinstance(node, ast.Subscript | ast.Starred):
            parts = [node.value]
        elif isinstance(node, ast.IfExp):
            parts = [node.body, node.orelse]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("items", "keys", "values", "get"):
            parts = [node.func.value, *node.args]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("sorted", "tuple", "list", "set", "frozenset")
        ):
            parts = list(node.args)
        else:
            return None
        return self.strings_of_bound(parts, seen)
