"""The store as parts: each part answers its own methods and no others, readers get views that cannot
write, and every public method of the store belongs to one part (or to the engine)."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from test_one_writer import WRITERS

from monitor.store import Base, Store, parts
from monitor.store.parts import PARTS, members

WRITES_SQL = ("INSERT ", "UPDATE ", "DELETE ", "DROP ", "CREATE ")


def implemented() -> dict[str, str]:
    """Every public method and property of the store's parts (its mixins, not the engine), and the module it is in."""
    engine = set(vars(Base))
    found: dict[str, str] = {}
    for cls in Store.__mro__[1:]:
        if not cls.__module__.startswith("monitor.store.") or cls is Base:
            continue
        for name, value in vars(cls).items():
            if not name.startswith("_") and name not in engine and (callable(value) or isinstance(value, property)):
                found.setdefault(name, cls.__module__)
    return found


def source(method: str) -> str:
    found = inspect.getattr_static(Store, method)
    return inspect.getsource(found.fget if isinstance(found, property) else found)


def test_every_method_of_the_store_belongs_to_exactly_one_part() -> None:
    owners: dict[str, list[str]] = {}
    for name, (_, whole) in PARTS.items():
        for method in members(whole):
            owners.setdefault(method, []).append(name)
    assert {m: o for m, o in owners.items() if len(o) > 1} == {}
    assert sorted(set(implemented()) - set(owners)) == []  # a new method is given to a part
    assert sorted(set(owners) - set(implemented())) == []  # a part names nothing the store lacks


def test_a_part_answers_its_own_methods_and_refuses_the_others(db_path: str) -> None:
    store = Store(db_path)
    incident = store.incidents.open_incident("api", "consecutive", "down")
    assert store.incidents.incident(incident)["target"] == "api"  # type: ignore[index]
    assert store.outbox.told(incident) is False
    with pytest.raises(AttributeError, match="IncidentsPart has no 'add_results'"):
        store.incidents.add_results  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match="ResultsPart has no 'close_incident'"):
        store.results.close_incident  # type: ignore[attr-defined]  # noqa: B018
    assert store.incidents is store.incidents  # made once per store


def test_a_reader_sees_every_part_and_can_write_to_none(db_path: str) -> None:
    store = Store(db_path)
    incident = store.incidents.open_incident("api", "consecutive", "down")
    reader = store.read_only()
    assert reader.incidents.open_incidents()[0]["id"] == incident
    assert reader.incidents.install_id == store.install_id
    assert reader.results.count_results() == 0
    for name, (view, whole) in PARTS.items():
        if view is None:
            continue
        seen = getattr(reader, name)
        for method in members(whole) - members(view):
            with pytest.raises(AttributeError, match=f"'{type(seen).__name__}' object has no attribute '{method}'"):
                getattr(seen, method)


def public(reader: object) -> set[str]:
    """Every public attribute of ``reader``: its class's and the ones bound at construction."""
    return {name for name in dir(reader) if not name.startswith("_")}


def test_each_reader_is_a_class_of_its_views_reads_and_nothing_else(db_path: str) -> None:
    """A read-only part is its own class, not a proxy over the store: it holds exactly its view's methods, none of
    them a write (the one-writer rule's writes, or any other part's), and the reader holds only read-only parts."""
    store = Store(db_path)
    reader = store.read_only()
    reads = {method for view, _ in PARTS.values() if view is not None for method in members(view)}
    writes = set(WRITERS) | ({method for _, whole in PARTS.values() for method in members(whole)} - reads)
    assert public(reader) == {name for name, (view, _) in PARTS.items() if view is not None} | {"clock", "size_bytes"}
    for name, (view, _) in PARTS.items():
        if view is None:
            continue
        part = getattr(reader, name)
        assert type(part).__module__ == "monitor.store.readers" and not hasattr(type(part), "__getattr__")
        assert public(part) == set(members(view)), name
        assert public(part) & writes == set(), name
    assert reader.size_bytes() == store.size_bytes() and reader.clock is store.clock


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
def test_a_view_names_no_method_that_writes(name: str) -> None:
    view, _ = PARTS[name]
    assert view is not None
    writing = [method for method in sorted(members(view)) if any(sql in source(method) for sql in WRITES_SQL)]
    assert writing == []


def test_a_part_holds_what_its_module_holds() -> None:
    """Each part's methods are implemented in its own module (``store.graph`` in graph.py), words' in incidents'."""
    home = {"words": "incidents"}
    for method, module in implemented().items():
        where = module.rsplit(".", 1)[1]
        owner = next(name for name, (_, whole) in PARTS.items() if method in members(whole))
        assert home.get(where, where) == owner, method


def test_the_parts_module_is_the_only_list_of_protocols() -> None:
    declared = {node.name for node in ast.parse(Path(parts.__file__).read_text()).body if isinstance(node, ast.ClassDef)}
    listed = {cls.__name__ for pair in PARTS.values() for cls in pair if cls is not None}
    assert declared - listed == {"StoreView", "Part"}


DOC = Path(__file__).parent.parent / "docs" / "architecture" / "store.md"
BEGIN, END = "<!-- the parts: generated by `python tests/test_store_parts.py` -->", "<!-- end of the parts -->"


def described(method: str) -> str:
    """``name(arguments)``: the first paragraph of what the method says it does."""
    found = inspect.getattr_static(Store, method)
    function = found.fget if isinstance(found, property) else found
    shown = "" if isinstance(found, property) else f"({arguments(function)})"
    doc = (inspect.getdoc(function) or "").split("\n\n")[0].replace("\n", " ")
    doc = re.sub(r":\w+:`~?([^`]+)`", r"``\1``", doc)  # Sphinx's roles, as code
    return f"- `{method}{shown}`" + (f": {doc}" if doc else "")


def arguments(function: Any) -> str:
    """The arguments as written (annotations are strings here), ``self`` left out."""
    shown, star = [], False
    for param in list(inspect.signature(function).parameters.values())[1:]:
        if param.kind is param.KEYWORD_ONLY and not star:
            shown.append("*")
        star = star or param.kind in (param.KEYWORD_ONLY, param.VAR_POSITIONAL)
        prefix = {param.VAR_POSITIONAL: "*", param.VAR_KEYWORD: "**"}.get(param.kind, "")
        text = f"{prefix}{param.name}: {param.annotation}"
        shown.append(text if param.default is param.empty else f"{text} = {param.default!r}")
    return ", ".join(shown)


def surface() -> str:
    """Each part's reads and writes, as docs/architecture/store.md lists them."""
    lines = []
    for name, (view, whole) in PARTS.items():
        reads = members(view) if view is not None else frozenset()
        lines += [f"### `store.{name}`", "", (whole.__doc__ or "").strip(), ""]
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
