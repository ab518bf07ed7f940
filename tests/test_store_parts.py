"""The store as parts: each part answers its own methods and no others, readers get views that cannot
write, and every public method of the store belongs to one part (or to the engine)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

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
    assert reader.results.count_results() == 0
    for name, (view, whole) in PARTS.items():
        if view is None:
            continue
        seen = getattr(reader, name)
        for method in members(whole) - members(view):
            with pytest.raises(AttributeError, match=f"{view.__name__} has no"):
                getattr(seen, method)


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
