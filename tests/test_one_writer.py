"""One writer, in fact: read off the source, only the incident writer changes incidents, only the recorder stores
results, only the follow-ups and the writer queue notifications, and writers are made in one place; and a writer
made for the agent, the CLI or memory queues what the daemon's would."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import monitor
from monitor.agent.investigator import Investigator
from monitor.alerts import incident_writer, writers
from monitor.alerts.delivery import Alerts
from monitor.config import Config
from monitor.core.incidents import Bulk, Event
from monitor.memory import forgetting, working
from monitor.store import Store

ROOT = Path(monitor.__file__).parent

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
    **dict.fromkeys(INCIDENT_WRITES, {"monitor/incidents/writer.py"}),
    "load": {"monitor/incidents/writer.py"},  # an import adds incidents: Writer.import_dump
    "add_results": {"monitor/incidents/recorder.py"},
    "add_rows": {"monitor/incidents/recorder.py"},
    "record_ping": {"monitor/checks/heartbeat.py"},  # a job's pings, which the heartbeat check judges
    "watch_heartbeats": {"monitor/checks/heartbeat.py"},
    "prune": {"monitor/daemon/housekeeping.py"},  # retention
    "drop_hourly_counts": set(),
    "enqueue": set(),
    "enqueue_follow_up": {"monitor/alerts/delivery.py"},
}
MADE_ONLY_IN_WRITERS = {"Writer", "Tracker", "Recorder"}
FACTORY = "monitor/alerts/writers.py"


def calls() -> Iterator[tuple[str, str, str, str]]:
    """(module, the function it is in, receiver, name) of every ``receiver.name(...)`` and ``Name(...)`` under monitor/."""
    for path in sorted(ROOT.rglob("*.py")):
        module = str(path.relative_to(ROOT.parent))
        if not module.startswith("monitor/store/"):  # the store's own modules are its implementation
            yield from _calls(module, ast.parse(path.read_text()), "")


def _calls(module: str, node: ast.AST, function: str) -> Iterator[tuple[str, str, str, str]]:
    for child in ast.iter_child_nodes(node):
        inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
        if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute):
            yield module, inner, ast.unparse(child.func.value), child.func.attr
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
            yield module, inner, "", child.func.id
        yield from _calls(module, child, inner)


def is_store(receiver: str) -> bool:
    """``store``, ``self.store``, ``store.incidents``, ``self.box.store.memory``...: the store or one of its parts."""
    parts = receiver.split(".")
    return "store" in parts or any(p.endswith("store") for p in parts)


def test_only_the_owner_of_each_piece_of_state_writes_it() -> None:
    wrong = sorted(
        {
            f"{module}: {receiver}.{name}()"
            for module, _, receiver, name in calls()
            if name in WRITERS and receiver and is_store(receiver) and module not in WRITERS[name]
        }
    )
    assert wrong == []


def test_writers_trackers_and_recorders_are_made_in_one_place() -> None:
    made = sorted({f"{module}: {name}()" for module, _, receiver, name in calls() if not receiver and name in MADE_ONLY_IN_WRITERS})
    assert made == [f"{FACTORY}: {name}()" for name in sorted(MADE_ONLY_IN_WRITERS)]


def test_the_follow_ups_are_the_only_other_producer_of_notifications() -> None:
    """Reminders, escalations and Alertmanager's re-sends, by name; every other notification is queued with its change."""
    producers = {function for module, function, receiver, name in calls() if name == "enqueue_follow_up" and is_store(receiver)}
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
    return [(json.loads(r["payload"])["incident"]["id"], json.loads(r["payload"])["event"]) for r in rows]


def test_the_agents_own_writer_queues_what_the_daemons_would(db_path: str) -> None:
    """An investigator made alone (``monitor investigate``, the eval) opened and resolved incidents that paged nobody."""
    config = config_with_a_webhook(db_path)
    store = Store(db_path)
    investigator = Investigator(config, store)
    opened = investigator.incidents.open("api", "consecutive", "down")
    assert opened is not None and opened.queued
    assert queued(store) == [(1, "opened")]
    investigator.box.incidents.resolve(opened.incident["id"], "restarted")  # the tools' writer is the same one
    assert queued(store)[-1] == (1, "resolved")


def test_a_toolbox_made_alone_queues_too(db_path: str) -> None:
    from monitor.agent.tools import Toolbox

    config = config_with_a_webhook(db_path)
    store = Store(db_path)
    box = Toolbox(config, store)
    opened = box.incidents.open("api", "consecutive", "down")
    assert opened is not None and queued(store) == [(1, "opened")]


def test_an_event_not_queued_with_its_change_is_queued_by_nobody(db_path: str) -> None:
    config = config_with_a_webhook(db_path)
    store = Store(db_path)
    incident = writers.writer(config, store).open("api", "consecutive", "down")
    assert incident is not None
    store.outbox.take_over_notifications()
    alerts = Alerts(config.alerts, store)
    for row in store.outbox.notifications_for(1):
        store.outbox.drop_notification(row["id"], "for this test")
    alerts.notify(Event("opened", incident.incident))  # the sender is woken, and nothing else happens
    assert store.outbox.pending_notifications() == 0


def test_forgetting_and_an_import_go_through_the_writer_as_bulk_events(db_path: str, tmp_path: Path) -> None:
    config = config_with_a_webhook(db_path)
    store = Store(db_path)
    writer = incident_writer(config, store)
    heard: list[Bulk] = []
    writer.publisher.subscribe_bulk(heard.append)
    for n in range(5):
        opened = writer.open(f"t{n}", "consecutive", "down")
        assert opened is not None
        writer.resolve(opened.incident["id"], "fixed")
    export = tmp_path / "export.json"
    working.export(store, str(export))
    assert forgetting.prune(writer, 3) == 2  # of 5, down to 3 (the low water mark of 3)
    assert heard[0].kind == "forgotten" and heard[0].count == 2 and len(heard[0].ids) == 2
    added = working.import_(writer, str(export))
    assert added["incidents"] == 2  # the two forgotten come back; the three kept are there already
    assert heard[1] == Bulk("imported", 2)
    assert store.incidents.count_incidents() == 5
