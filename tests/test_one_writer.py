"""One writer, in fact: read off the source, only the incident writer changes incidents, only the recorder stores
results, only the follow-ups and the writer queue notifications, and the store, the writer, tracker, recorder, alerts
and agent, and what they are made of, are made in one place, the composition root, which hands a process's one writer
to everyone in it."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest
from owners import DYNAMIC, MADE_ONLY_IN_ROOT, ROOT, ROOT_MODULE, WRITERS, _calls, calls, refusals, refused, sealed
from prometheus_client import CollectorRegistry

from monitor import wiring
from monitor.config import AgentConfig, Config
from monitor.core.incidents import Bulk, Event
from monitor.daemon import Daemon
from monitor.memory import forgetting, working
from monitor.store import Store
from monitor.store.base import Reads
from monitor.store.parts import PARTS
from monitor.store.writes import IncidentWrites


def test_only_the_owner_of_each_piece_of_state_writes_it() -> None:
    assert refusals() == []


def old_rule(found: Iterable[tuple[str, str, str, str]]) -> list[str]:
    """The rule as it was: a write counted only on a receiver named like the store."""

    def is_store(receiver: str) -> bool:
        return any(p.endswith("store") for p in receiver.split("."))

    return sorted({f"{m}: {r}.{n}()" for m, _, r, n in found if n in WRITERS and r and is_store(r) and m not in WRITERS[n]})


# Ways a web route could change an incident, or make what does, each as written into monitor/web/routes/bypass.py.
BYPASSES = {
    "an alias": "def resolve(site):\n    db = site.pages.store.incidents\n    db.close_incident(1, 'by hand')\n",
    "a bound method": "def resolve(site):\n    close = site.pages.db.close_incident\n    close(1, 'by hand')\n",
    "getattr": "def resolve(site):\n    getattr(site.pages.db, 'close_incident')(1, 'by hand')\n",
    "getattr, a name added up": "def resolve(site):\n    getattr(site.pages.db, 'close_' + 'incident')(1, 'by hand')\n",
    "getattr, a name from elsewhere": "def resolve(writer, name):\n    getattr(writer._writes, name)(1, 'by hand')\n",
    "object.__getattribute__": "def resolve(db):\n    object.__getattribute__(db, 'close_incident')(1, 'by hand')\n",
    "operator.methodcaller": "import operator\n\n\ndef resolve(db):\n    operator.methodcaller('close_incident', 1, 'by hand')(db)\n",
    "methodcaller by another name": "from operator import methodcaller as call\n\n\ndef resolve(db):\n    call('close_incident', 1)(db)\n",
    "attrgetter, dotted": "from operator import attrgetter\n\nCLOSE = attrgetter('_writes.close_incident')\n",
    "getattr taken as a value": "import functools\n\nreach = functools.partial(getattr)\n",
    "vars of the type": "def resolve(part):\n    vars(type(part))['close_incident'](part, 1, 'by hand')\n",
    "the type's __dict__": "def resolve(part, name):\n    type(part).__dict__[name](part, 1, 'by hand')\n",
    "IncidentWrites, a module attribute": (
        "from monitor.store import writes as w\n\n\ndef resolve(site):\n"
        "    w.IncidentWrites(site.pages.store.incidents._db).close_incident(1)\n"
    ),
    "IncidentWrites by another name": (
        "from monitor.store.writes import IncidentWrites as W\n\n\ndef resolve(store):\n    W(store).close_incident(1)\n"
    ),
    "Writer by another name": "from monitor.incidents.writer import Writer as W\n\n\ndef make(*parts):\n    return W(*parts)\n",
    "Tracker, a module attribute": "from monitor.incidents import tracker\n\n\ndef make(*parts):\n    return tracker.Tracker(*parts)\n",
    "Writer, a variable": "from monitor.incidents.writer import Writer\n\nmake = Writer\n",
    "Store, a module attribute": "from monitor import store\n\n\ndef opened(path):\n    return store.Store(path)\n",
    "Store through getattr": "from monitor import store\n\n\ndef opened(path):\n    return getattr(store, 'Store')(path)\n",
    "Maintenance by another name": "from monitor.incidents.maintenance import Maintenance as Held\n\nHELD = Held()\n",
    "Routes, through a module's alias": "import monitor.alerts.routes as rules\n\n\ndef made(config):\n    return rules.Routes(config)\n",
    "Publisher, a default": (
        "from monitor.incidents.events import Publisher\n\n\nclass Part:\n"
        "    def __init__(self, publisher=None):\n        self.publisher = publisher or Publisher()\n"
    ),
    "raw SQL in a reader's transaction": (
        "def reopen(site):\n    with site.pages.store.incidents._transaction() as db:\n"
        "        db.execute(\"UPDATE incidents SET status = 'open' WHERE id = 1\")\n"
    ),
    "the handle's engine, by its mangled name": (
        "def reopen(site):\n    engine = site.pages.store.incidents._db._Reads__engine\n"
        "    engine.conn.execute(\"UPDATE incidents SET status = 'open'\")\n"
    ),
    "raw SQL in the store's transaction": (
        "def reopen(store):\n    with store.transaction() as db:\n        db.execute(\"UPDATE incidents SET status = 'open'\")\n"
    ),
}


def test_the_rule_follows_what_is_written_to_not_what_it_is_called() -> None:
    for how in ("an alias", "a bound method", "getattr"):
        found = list(_calls("monitor/web/routes/bypass.py", ast.parse(BYPASSES[how]), ""))
        assert old_rule(found) == [], how  # the bypass the old rule let through
        assert refused(found), how


@pytest.mark.parametrize("how", sorted(BYPASSES))
def test_the_rule_fails_on_a_scratch_copy_with_a_bypass_in_a_web_route(tmp_path: Path, how: str) -> None:
    """Each bypass, written into a web route of a copy of the package, fails the check (and the copy without it passes)."""
    copy = tmp_path / "monitor"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert refusals(copy) == []
    (copy / "web" / "routes" / "bypass.py").write_text(BYPASSES[how])
    found = refusals(copy)
    assert found and {line.partition(":")[0] for line in found} == {"monitor/web/routes/bypass.py"}, found


def test_each_place_a_name_made_at_run_time_reaches_an_attribute_needs_to() -> None:
    """The list of places the rule lets a name made at run time through is no longer than what the source needs."""
    places = {line.partition(": ")[0].rpartition(":")[0] for line in refusals(dynamic=frozenset())}
    assert places == {module for module, _ in DYNAMIC}
    assert {line.rpartition(", in ")[2].rstrip(")") for line in refusals(dynamic=frozenset())} == {function for _, function in DYNAMIC}


def test_the_bypass_finds_no_write_on_what_the_web_holds(db_path: str) -> None:
    """By type, not by name: what a web route can reach of the store (``site.pages.store.incidents``) is the incidents'
    reads over a read-only handle: no write, no transaction, no store, no statement that writes, and no incident-writing
    part can be made of it (the composition root makes that one, over the store)."""
    from monitor.web.pages import Pages
    from monitor.web.site import Site

    store = Store(db_path)
    opened = wiring.writer(config_with_a_webhook(db_path), store).open("api", "consecutive", "down")
    assert opened is not None
    site = Site(store.read_only(), Pages(store.read_only(), Config.model_validate({"targets": []})))
    db = site.pages.store.incidents
    with pytest.raises(AttributeError, match="'IncidentsReader' object has no attribute 'close_incident'"):
        db.close_incident(1, "by hand")  # type: ignore[attr-defined]
    assert not hasattr(db, "_transaction") and not any(hasattr(getattr(store, name), "close_incident") for name in PARTS)
    handle = db._db
    assert type(handle) is Reads and not hasattr(handle, "transaction") and not hasattr(handle, "engine")
    with pytest.raises(TypeError, match="made over the database"):
        IncidentWrites(handle)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="runs no statement that writes"):
        handle.execute("UPDATE incidents SET status = 'resolved' WHERE id = ?", (opened.incident.id,))
    with pytest.raises(ValueError, match="runs no statement that writes"):
        handle.rows("WITH gone AS (SELECT 1) DELETE FROM incidents RETURNING id")
    assert [i.id for i in store.incidents.open_incidents()] == [opened.incident.id]


def test_the_writer_hands_out_no_store(db_path: str) -> None:
    writer = wiring.writer(config_with_a_webhook(db_path), Store(db_path))
    assert not hasattr(writer, "store")
    assert not hasattr(writer.reader.incidents, "close_incident")  # what it lends reads only


def test_the_store_writer_tracker_recorder_alerts_agent_and_their_parts_are_made_in_one_place() -> None:
    made = sorted({f"{module}: {name}()" for module, _, receiver, name in calls() if not receiver and name in MADE_ONLY_IN_ROOT})
    assert made == [f"{ROOT_MODULE}: {name}()" for name in sorted(MADE_ONLY_IN_ROOT)]


def test_a_class_of_the_same_name_from_elsewhere_is_another_class() -> None:
    """The config's maintenance window is no :class:`~monitor.incidents.maintenance.Maintenance`: anyone makes one."""
    source = "from monitor import config\nfrom monitor.config import Maintenance as Window\n\nWindow(targets=['a'])\nconfig.Maintenance()\n"
    assert sealed("monitor/web/routes/windows.py", source, frozenset(DYNAMIC)) == []


def test_the_follow_ups_are_the_only_other_producer_of_notifications() -> None:
    """Reminders, escalations and Alertmanager's re-sends, by name; every other notification is queued with its change."""
    producers = {function for module, function, receiver, name in calls() if name == "enqueue_follow_up" and receiver}
    assert producers == {"follow_up", "refresh"}


def config_with_a_webhook(db_path: str) -> Config:
    return Config.model_validate(
        {
            "database": db_path,
            "targets": [{"name": "api", "url": "http://127.0.0.1:9/api"}],
            "model": {"id": "builtin"},
            "alerts": {"webhooks": [{"url": "http://127.0.0.1:9/hook"}], "wait_for_diagnosis": "0s"},
            "metrics": {"enabled": False},
        }
    )


def queued(store: Store) -> list[tuple[int, str]]:
    rows = store.outbox.notifications_for(1) + store.outbox.notifications_for(2)
    return [(r.message["incident"]["id"], r.message["event"]) for r in rows]


def test_the_root_makes_one_of_each_and_hands_everyone_the_same_writer(db_path: str) -> None:
    """The daemon's check cycle, its tracker, its recorder, its agent and the agent's tools share one writer; the
    alerts it delivers with are the ones every change of that writer queues for."""
    config = config_with_a_webhook(db_path).model_copy(update={"agent": AgentConfig(mode="on_anomaly")})
    daemon = Daemon(config, store=Store(db_path), registry=CollectorRegistry())
    try:
        cycle, investigator = daemon.cycle, daemon.investigator
        assert investigator is not None
        writer = cycle.parts.writer
        assert cycle.incidents is writer and daemon.incidents is writer
        assert cycle.tracker is daemon.tracker is investigator.tracker and cycle.tracker.writer is writer
        assert cycle.recorder is investigator.box.results and cycle.recorder.tracker is cycle.tracker
        assert investigator.incidents is writer and investigator.box.incidents is writer
        opened = investigator.box.incidents.open("api", "consecutive", "down")  # the tools' change, the daemon's alerts
        assert opened is not None and opened.queued and queued(daemon.store) == [(1, "opened")]
    finally:
        daemon.close()


def test_a_process_without_a_daemon_queues_what_the_daemon_would(db_path: str) -> None:
    """``monitor investigate``, the eval, the CLI: the root's writer queues each change for the daemon to deliver."""
    store = Store(db_path)
    investigator = wiring.investigator(config_with_a_webhook(db_path), store)
    assert investigator.box.incidents is investigator.incidents is investigator.tracker.writer
    opened = investigator.incidents.open("api", "consecutive", "down")
    assert opened is not None and opened.queued
    investigator.box.incidents.resolve(opened.incident.id, "restarted")
    assert queued(store) == [(1, "opened"), (1, "resolved")]


def test_an_event_not_queued_with_its_change_is_queued_by_nobody(db_path: str) -> None:
    config = config_with_a_webhook(db_path)
    store = Store(db_path)
    incident = wiring.writer(config, store).open("api", "consecutive", "down")
    assert incident is not None
    store.outbox.take_over_notifications()
    alerts = wiring.alerts(config, store)
    for row in store.outbox.notifications_for(1):
        store.outbox.drop_notification(row.id, "for this test")
    alerts.notify(Event("opened", incident.incident))  # the sender is woken, and nothing else happens
    assert store.outbox.pending_notifications() == 0


def test_forgetting_and_an_import_go_through_the_writer_as_bulk_events(db_path: str, tmp_path: Path) -> None:
    config = config_with_a_webhook(db_path)
    store = Store(db_path)
    writer = wiring.writer(config, store)
    heard: list[Bulk] = []
    writer.publisher.subscribe_bulk(heard.append)
    for n in range(5):
        opened = writer.open(f"t{n}", "consecutive", "down")
        assert opened is not None
        writer.resolve(opened.incident.id, "fixed")
    export = tmp_path / "export.json"
    working.export(store, str(export))
    assert forgetting.prune(writer, 3) == 2  # of 5, down to 3 (the low water mark of 3)
    assert heard[0].kind == "forgotten" and heard[0].count == 2 and len(heard[0].ids) == 2
    added = working.import_(writer, str(export))
    assert added["incidents"] == 2  # the two forgotten come back; the three kept are there already
    assert heard[1] == Bulk("imported", 2)
    assert store.incidents.count_incidents() == 5
