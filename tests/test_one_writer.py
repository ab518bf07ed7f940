"""One writer, in fact: read off the source, only the incident writer changes incidents, only the recorder stores
results, only the follow-ups and the writer queue notifications, and the writer, tracker, recorder, alerts and agent
are made in one place, the composition root, which hands a process's one writer to everyone in it."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

import monitor
from monitor import wiring
from monitor.alerts.delivery import Alerts
from monitor.config import AgentConfig, Config
from monitor.core.incidents import Bulk, Event
from monitor.daemon import Daemon
from monitor.memory import forgetting, working
from monitor.store import Store
from monitor.store.parts import PARTS

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
    "load_dump": {"monitor/incidents/writer.py"},  # an import adds incidents: Writer.import_dump
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
# IncidentWrites: the incident-writing part, which the root hands to the one writer (nothing else has its methods)
MADE_ONLY_IN_ROOT = {"Writer", "IncidentWrites", "Tracker", "Recorder", "Alerts", "Investigator", "Toolbox"}
ROOT_MODULE = "monitor/wiring.py"


def calls(root: Path = ROOT) -> Iterator[tuple[str, str, str, str]]:
    """(module, the function it is in, receiver, name) of every ``receiver.name(...)`` and ``Name(...)`` under monitor/."""
    for path in sorted(root.rglob("*.py")):
        module = str(path.relative_to(root.parent))
        if not module.startswith("monitor/store/"):  # the store's own modules are its implementation
            yield from _calls(module, ast.parse(path.read_text()), "")


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


def test_only_the_owner_of_each_piece_of_state_writes_it() -> None:
    assert refused(calls()) == []


def old_rule(found: Iterable[tuple[str, str, str, str]]) -> list[str]:
    """The rule as it was: a write counted only on a receiver named like the store."""

    def is_store(receiver: str) -> bool:
        return any(p.endswith("store") for p in receiver.split("."))

    return sorted({f"{m}: {r}.{n}()" for m, _, r, n in found if n in WRITERS and r and is_store(r) and m not in WRITERS[n]})


BYPASSES = {
    "an alias": "def resolve(site):\n    db = site.pages.store.incidents\n    db.close_incident(1, 'by hand')\n",
    "a bound method": "def resolve(site):\n    close = site.pages.db.close_incident\n    close(1, 'by hand')\n",
    "getattr": "def resolve(site):\n    getattr(site.pages.db, 'close_incident')(1, 'by hand')\n",
}


def test_the_rule_follows_what_is_written_to_not_what_it_is_called() -> None:
    for how, source in BYPASSES.items():
        found = list(_calls("monitor/web/routes/bypass.py", ast.parse(source), ""))
        assert old_rule(found) == [], how  # the bypass the old rule let through
        assert refused(found), how


@pytest.mark.parametrize("how", sorted(BYPASSES))
def test_the_rule_fails_on_a_scratch_copy_with_a_bypass_in_a_web_route(tmp_path: Path, how: str) -> None:
    """Each bypass, written into a web route of a copy of the package, fails the check (and the copy without it passes)."""
    copy = tmp_path / "monitor"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert refused(calls(copy)) == []
    (copy / "web" / "routes" / "bypass.py").write_text(BYPASSES[how])
    assert refused(calls(copy)) == [f"monitor/web/routes/bypass.py: {how_called(BYPASSES[how])}"]


def how_called(source: str) -> str:
    """The write a bypass makes, as :func:`refused` names it."""
    return {f"{r}.{n}()" for _, _, r, n in _calls("", ast.parse(source), "") if n == "close_incident"}.pop()


def test_the_bypass_finds_no_write_on_what_the_web_holds(db_path: str) -> None:
    """By type, not by name: what a web route can reach of the store (``site.pages.store.incidents``) is the incidents'
    reads, and the incident-writing part is made by the composition root alone (the rule above)."""
    from monitor.web.pages import Pages
    from monitor.web.site import Site

    store = Store(db_path)
    site = Site(store.read_only(), Pages(store.read_only(), Config.model_validate({"targets": []})))
    db = site.pages.store.incidents
    with pytest.raises(AttributeError, match="'IncidentsReader' object has no attribute 'close_incident'"):
        db.close_incident(1, "by hand")  # type: ignore[attr-defined]
    assert not any(hasattr(getattr(store, name), "close_incident") for name in PARTS)


def test_the_writer_hands_out_no_store(db_path: str) -> None:
    writer = wiring.writer(config_with_a_webhook(db_path), Store(db_path))
    assert not hasattr(writer, "store")
    assert not hasattr(writer.reader.incidents, "close_incident")  # what it lends reads only


def test_writers_trackers_recorders_alerts_and_the_agent_are_made_in_one_place() -> None:
    made = sorted({f"{module}: {name}()" for module, _, receiver, name in calls() if not receiver and name in MADE_ONLY_IN_ROOT})
    assert made == [f"{ROOT_MODULE}: {name}()" for name in sorted(MADE_ONLY_IN_ROOT)]


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
    alerts = Alerts(config.alerts, store)
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
