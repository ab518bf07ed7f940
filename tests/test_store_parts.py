"""The store as parts: each part is a class of its own with its own methods over one shared engine, readers get
its reads' class, which cannot write, and what changes incidents is in no part: in the incident-writing part alone,
which only the composition root makes (for the one writer)."""

from __future__ import annotations

import ast
import inspect
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from owners import INCIDENT_WRITES, WRITERS

from monitor.store import Base, Part, Store, parts
from monitor.store.parts import PARTS, members
from monitor.store.readers import ReadOnly
from monitor.store.writes import IncidentWrites

WRITES_SQL = ("INSERT ", "UPDATE ", "DELETE ", "DROP ", "CREATE ")
# Each part's class by its name, and the incident-writing part beside them (made for the writer, handed out by no store).
CLASSES: dict[str, type[Part]] = {**{name: part for name, (_, part) in PARTS.items()}, "incident writes": IncidentWrites}


def implemented(part: type[Part]) -> dict[str, str]:
    """Every public method and property of a part's class (its reads' class included), and the module it is in."""
    return {
        name: cls.__module__
        for cls in reversed(part.__mro__)
        if issubclass(cls, Part) and cls is not Part
        for name in vars(cls)
        if not name.startswith("_")
    }


def found(method: str) -> Any:
    """The function behind ``method`` of whichever part has it."""
    owner = next(part for part in CLASSES.values() if method in members(part))
    value = inspect.getattr_static(owner, method)
    return value.fget if isinstance(value, property) else value


def test_every_method_belongs_to_exactly_one_part() -> None:
    owners: dict[str, list[str]] = {}
    for name, part in CLASSES.items():
        for method in members(part):
            owners.setdefault(method, []).append(name)
    assert {m: o for m, o in owners.items() if len(o) > 1} == {}
    assert members(IncidentWrites) == INCIDENT_WRITES | {"load_dump"}  # every write the one-writer rule gives the writer alone


def test_the_store_is_an_engine_that_hands_out_parts_and_has_no_method_of_its_own() -> None:
    """No costume: the store's public surface is the engine's and the parts it hands out, each a class of its own."""
    handed = {name for name, value in vars(Store).items() if not name.startswith("_")}
    assert handed == set(PARTS) | {"read_only"}
    assert not any(hasattr(Store, method) for part in CLASSES.values() for method in members(part) - set(vars(Base)))
    for part in CLASSES.values():
        assert not hasattr(part, "__getattr__") and Part in part.__mro__, part


def test_a_part_is_its_own_class_and_refuses_the_others_methods(db_path: str) -> None:
    store = Store(db_path)
    assert type(store.incidents).__name__ == "IncidentsPart" and store.incidents is store.incidents  # made once per store
    incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
    assert store.incidents.incident(incident) is not None and store.outbox.told(incident) is False
    with pytest.raises(AttributeError, match="'IncidentsPart' object has no attribute 'add_results'"):
        store.incidents.add_results  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match="'ResultsPart' object has no attribute 'close_incident'"):
        store.results.close_incident  # type: ignore[attr-defined]  # noqa: B018


def test_a_part_is_made_once_per_store_however_many_threads_ask_first(db_path: str) -> None:
    store, other = Store(db_path), Store(db_path)
    with ThreadPoolExecutor(8) as pool:
        handed = {id(part) for part in pool.map(lambda _: store.results, range(32))}
    assert handed == {id(store.results)} and other.results is not store.results and other.results._db is other.reads


def test_no_part_a_store_hands_out_changes_incidents(db_path: str) -> None:
    """Incidents change only through the incident-writing part: no part of the store, nor the store, has a write of it."""
    store = Store(db_path)
    for name in PARTS:
        assert members(type(getattr(store, name))) & members(IncidentWrites) == set(), name
    assert [method for method in members(IncidentWrites) if hasattr(store, method)] == []


def test_the_parts_share_one_engine(db_path: str) -> None:
    store = Store(db_path)
    incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
    with store.transaction():  # one lock: another part's read waits for nothing the same thread holds
        assert store.incidents.count_open_incidents() == 1 and store.read_only().incidents.incident(incident) is not None
    engines = {id(part._engine) for part in (store.incidents, store.results, IncidentWrites(store))}
    assert engines == {id(store.engine)} and store.read_only().vectors._db is store.incidents._db is store.reads


def test_a_reader_sees_every_part_and_can_write_to_none(db_path: str) -> None:
    store = Store(db_path)
    incident = IncidentWrites(store).open_incident("api", "consecutive", "down")
    reader = store.read_only()
    assert [i.id for i in reader.incidents.open_incidents()] == [incident]
    assert reader.incidents.install_id == store.incidents.install_id
    assert reader.results.count_results() == 0
    for name, (view, whole) in PARTS.items():
        if view is None:
            continue
        seen = getattr(reader, name)
        for method in members(whole) - members(view) | members(IncidentWrites):
            with pytest.raises(AttributeError, match=f"'{type(seen).__name__}' object has no attribute '{method}'"):
                getattr(seen, method)


def public(reader: object) -> set[str]:
    """Every public attribute of ``reader``."""
    return {name for name in dir(reader) if not name.startswith("_")}


def test_each_reader_is_its_parts_reads_and_nothing_else(db_path: str) -> None:
    """A read-only part is its part's reads' class (the part extends it with its writes): it holds exactly its reads,
    none of them a write (the one-writer rule's, or any part's), and the reader holds only read-only parts."""
    store = Store(db_path)
    reader = store.read_only()
    reads = {method for view, _ in PARTS.values() if view is not None for method in members(view)}
    writes = set(WRITERS) | ({method for part in CLASSES.values() for method in members(part)} - reads)
    assert public(reader) == {name for name, (view, _) in PARTS.items() if view is not None} | {"clock", "size_bytes"}
    for name, (view, whole) in PARTS.items():
        if view is None:
            continue
        part = getattr(reader, name)
        assert type(part) is view and issubclass(whole, view), name
        assert public(part) == set(members(view)), name
        assert public(part) & writes == set(), name
    assert reader.size_bytes() == store.size_bytes() and reader.clock is store.clock


def test_a_part_and_its_read_only_twin_share_what_they_keep(db_path: str) -> None:
    """The vectors' index in memory is the database's, not each part's: a reader's search builds no second copy."""
    store = Store(db_path)
    assert store.vectors._vector_indexes is store.read_only().vectors._vector_indexes
    assert store.incidents._word_counts is ReadOnly(store.reads).incidents._word_counts


def test_the_web_ui_reads_through_read_only_views(db_path: str) -> None:
    from monitor.config import Config
    from monitor.web.pages import Pages
    from monitor.web.site import Site

    reader = Store(db_path).read_only()
    site = Site(reader, Pages(reader, Config.model_validate({"targets": []})))
    assert site.reader.runs.runs_page() == []
    with pytest.raises(AttributeError, match="no attribute 'audit_web_action'"):
        site.reader.incidents.audit_web_action  # type: ignore[attr-defined]  # noqa: B018


# Where the web UI and MCP hold a whole store: where they open it and make their parts of it, where the agent runs
# (``investigate``, through the composition root), and recall, which indexes incidents by meaning as it reads.
HOLD_A_STORE = {"web/app.py", "web/server.py", "mcp/source.py", "mcp/investigating.py", "mcp/likeness.py"}


def test_the_web_ui_and_mcp_read_through_read_only_parts_only() -> None:
    """Pages, routes, status pages and the MCP answers name no ``Store``: they are handed read-only parts, and
    their writes come as named writer parts (the web's ``Actions``, the ``Editor``'s ``ConfigLog``, MCP's writer)."""
    root = Path(parts.__file__).parent.parent
    holding = set()
    for path in sorted([*(root / "web").rglob("*.py"), *(root / "mcp").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "monitor.store" and any(a.name == "Store" for a in node.names):
                holding.add(str(path.relative_to(root)))
    assert holding == HOLD_A_STORE


@pytest.mark.parametrize("name", [name for name, (view, _) in PARTS.items() if view is not None])
def test_a_reads_class_names_no_method_that_writes(name: str) -> None:
    view, _ = PARTS[name]
    assert view is not None
    writing = [method for method in sorted(members(view)) if any(sql in inspect.getsource(found(method)) for sql in WRITES_SQL)]
    assert writing == []


def test_a_part_holds_what_its_module_holds() -> None:
    """Each part's methods are implemented in its own module (``store.graph`` in graph.py), words' in incidents'."""
    home = {"words": "incidents", "writes": "incident writes"}
    for name, part in CLASSES.items():
        for method, module in implemented(part).items():
            where = module.rsplit(".", 1)[1]
            assert home.get(where, where) == name, method


def test_no_interface_repeats_the_parts_methods() -> None:
    """The parts are the classes themselves: the parts module lists them and declares no protocol of their methods."""
    declared = [node.name for node in ast.parse(Path(parts.__file__).read_text()).body if isinstance(node, ast.ClassDef)]
    assert declared == []


DOC = Path(__file__).parent.parent / "docs" / "architecture" / "store.md"
BEGIN, END = "<!-- the parts: generated by `python tests/test_store_parts.py` -->", "<!-- end of the parts -->"


def described(method: str) -> str:
    """``name(arguments)``: the first paragraph of what the method says it does."""
    function = found(method)
    shown = "" if _is_property(method) else f"({arguments(function)})"
    doc = (inspect.getdoc(function) or "").split("\n\n")[0].replace("\n", " ")
    doc = re.sub(r":\w+:`~?([^`]+)`", r"``\1``", doc)  # Sphinx's roles, as code
    return f"- `{method}{shown}`" + (f": {doc}" if doc else "")


def _is_property(method: str) -> bool:
    owner = next(part for part in CLASSES.values() if method in members(part))
    return isinstance(inspect.getattr_static(owner, method), property)


def arguments(function: Any) -> str:
    """The arguments as written (annotations are strings here), ``self`` left out."""
    shown, star = [], False
    for param in list(inspect.signature(function).parameters.values())[1:]:
        if param.kind is param.KEYWORD_ONLY and not star:
            shown.append("*")
        star = star or param.kind in (param.KEYWORD_ONLY, param.VAR_POSITIONAL)
        prefix = "*" if param.kind is param.VAR_POSITIONAL else "**" if param.kind is param.VAR_KEYWORD else ""
        text = f"{prefix}{param.name}: {param.annotation}"
        shown.append(text if param.default is param.empty else f"{text} = {param.default!r}")
    return ", ".join(shown)


def surface() -> str:
    """Each part's reads and writes, as docs/architecture/store.md lists them."""
    lines = []
    for name, (view, whole) in [*PARTS.items(), ("incident writes", (None, IncidentWrites))]:
        reads = members(view) if view is not None else frozenset()
        title = f"`store.{name}`" if name in PARTS else "The incident-writing part (`IncidentWrites`, the writer's alone)"
        lines += [f"### {title}", "", inspect.cleandoc(whole.__doc__ or ""), ""]
        for title, names in (("Reads", reads), ("Writes", members(whole) - reads)):
            if names:
                lines += [f"{title}:", "", *(described(m) for m in sorted(names)), ""]
    return "\n".join(lines).rstrip() + "\n"


def test_the_docs_list_each_parts_surface_as_the_code_declares_it() -> None:
    text = DOC.read_text()
    assert BEGIN in text and END in text
    assert text.split(BEGIN)[1].split(END)[0].strip() == surface().strip(), "run: python tests/test_store_parts.py"


if __name__ == "__main__":
    text = DOC.read_text()
    DOC.write_text(text.split(BEGIN)[0] + BEGIN + "\n\n" + surface() + "\n" + END + text.split(END)[1])
