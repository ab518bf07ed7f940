"""What the store hands the other parts besides incidents, runs and results is typed too: each read gives a frozen
dataclass (a notification in the outbox, ...), whose fields are its table's columns in their order where it is a
stored row (on SQLite, and on PostgreSQL under --store=postgres)."""

from __future__ import annotations

import time

from monitor.core.audit import ConfigChange, WebAction
from monitor.core.incidents import Expected, IncidentCount, Opened, PublicIncident, PublicNote, ResolutionNote
from monitor.core.members import Lease
from monitor.core.memory import MemorySample, MemoryStats, WorkingStats
from monitor.core.outbox import Queued
from monitor.core.runs import NewStep, Step, StepStats
from monitor.store import Store
from monitor.store.rows import columns
from monitor.store.writes import IncidentWrites


def test_the_outbox_hands_out_queued_notifications(db_path: str) -> None:
    store = Store(db_path)
    queued = store.outbox.enqueue("webhook:hook", {"event": "opened", "group": [7]}, key="incident:7")
    [due] = store.outbox.due_notifications(time.time() + 1)
    assert isinstance(due, Queued) and (due.id, due.receiver, due.key, due.attempts) == (queued, "webhook:hook", "incident:7", 0)
    assert due.message == {"event": "opened", "group": [7]} and due.to_json()["payload"] == due.payload
    assert store.outbox.notifications_for(7) == store.outbox.pending_under("incident:7") == [due]
    assert store.outbox.held("webhook:hook", due.next_attempt_at - 1) == [due]  # waiting until then: held till now
    store.outbox.mark_delivered(queued)
    [sent] = store.outbox.notifications_for(7)
    assert sent.delivered_at is not None and sent.attempts == 1 and store.outbox.due_notifications(time.time() + 1) == []


def test_a_step_is_saved_from_a_new_step_and_counted_by_kind(db_path: str) -> None:
    store = Store(db_path)
    run = store.runs.start_run("look at api", target="api")
    store.runs.add_step(run, NewStep(0, "recall", 1.0, observations="#7 [resolved] target api"))
    store.runs.add_step(run, NewStep(1, "action", 2.0, 0.5, tool_calls="[]", input_tokens=12, tool_ok=1, tool_seconds=0.25))
    recall, action = store.runs.steps(run)
    assert recall == Step(
        recall.id, run, 0, "recall", 1.0, observations="#7 [resolved] target api", input_tokens=None, output_tokens=None, is_final=None
    )
    assert (action.tool_calls, action.input_tokens, action.tool_ok, action.tool_seconds) == ("[]", 12, 1, 0.25)
    assert store.runs.run(run).input_tokens == 12  # type: ignore[union-attr]
    assert store.runs.step_stats() == [StepStats("action", 1, 2, 1, 1, 0.25), StepStats("recall", 1, 24, 0, 0, 0)]


def test_what_status_pages_and_the_graph_read_of_an_incident_is_typed(db_path: str) -> None:
    store = Store(db_path)
    incident = IncidentWrites(store).open_incident("api", "consecutive", "3 failures of api at 10.0.0.7", root_cause="timeout")
    opened = store.incidents.incident(incident)
    assert opened is not None
    [public] = store.public.public_incidents(["api"], 0.0)
    assert public == PublicIncident(incident, "api", "critical", "open", opened.opened_at, None, "timeout")
    assert store.graph.opened_between(0.0, opened.opened_at, 5) == [Opened(incident, "api", opened.opened_at)]


def test_a_compare_and_set_changes_an_incident_only_as_it_was_read(db_path: str) -> None:
    writes = IncidentWrites(Store(db_path))
    incident = writes.open_incident("api", "consecutive", "down")
    assert not writes.update_incident(incident, expect=Expected(severity="warning"), summary="changed")
    assert writes.update_incident(incident, expect=Expected(severity="critical", acknowledged_at=None), summary="changed")
    assert Expected(silenced=None).compared() == {"silenced": None} and Expected().compared() == {}


def test_the_audit_the_memory_page_and_the_public_notes_are_typed(db_path: str) -> None:
    store = Store(db_path, clock=lambda: 1000.0)
    writes = IncidentWrites(store)
    incident = writes.open_incident("api", "consecutive", "down")
    writes.close_incident(incident, "restarted the pool")
    writes.add_public_note(incident, "Fixed.")
    store.incidents.audit_web_action(incident, "resolve", ok=True, detail="resolved", note="restarted", client="10.0.0.1")
    store.changes.record_config_change("ops", "add a target", ok=False, detail="refused", client="10.0.0.1")
    action = WebAction(1, 1000.0, incident, "resolve", "restarted", 1, "resolved", "10.0.0.1")
    assert store.incidents.web_actions(incident) == [action]
    assert store.changes.config_changes() == [ConfigChange(1, 1000.0, "ops", "add a target", 0, "refused", None, None, "10.0.0.1")]
    assert store.incidents.incident_counts() == [IncidentCount("api", "consecutive", 1, 0, 1)]
    assert store.incidents.resolution_notes() == [ResolutionNote(incident, "api", "consecutive", None, "restarted the pool", 1000.0)]
    assert store.public.public_notes([incident]) == {incident: [PublicNote(1, incident, 1000.0, "Fixed.")]}
    [lease] = store.members.renew_member(30.0, "eu")
    assert isinstance(lease, Lease) and (lease.id, lease.location) == (store.replica, "eu") and 0 < lease.remaining <= 30.0


def test_the_memory_is_sampled_from_its_stats(db_path: str) -> None:
    store = Store(db_path, clock=lambda: 1000.0)
    stats = MemoryStats(WorkingStats({"action": 2, "summary": 1}, 4000, 1000), 7, 8192)
    store.memory.add_memory_sample(stats, keep_since=0.0)
    assert store.memory.memory_samples(0.0) == [MemorySample(1000.0, 4000, 1000, 3, 7, 8192)]
    assert stats.to_json() == {
        "steps": {"action": 2, "summary": 1},
        "bytes": 4000,
        "tokens_estimate": 1000,
        "incidents": 7,
        "db_bytes": 8192,
    }


def test_the_tables_have_the_fields_of_their_values_in_their_order(db_path: str) -> None:
    store = Store(db_path)
    assert tuple(store.engine.columns("outbox")) == columns(Queued)
    assert tuple(store.engine.columns("agent_steps")) == ("id", "run_id", *columns(NewStep))
    for table, kind in [("web_actions", WebAction), ("config_changes", ConfigChange), ("public_notes", PublicNote)]:
        assert tuple(store.engine.columns(table)) == columns(kind), table
    assert tuple(store.engine.columns("memory_samples")) == columns(MemorySample)
