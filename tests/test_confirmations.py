"""People's word is evidence (issue 41): after one ``--same-as``, the next occurrence of that failing signal is
asserted; after ``--not``, that incident is not suggested for it again; both survive export and import."""

from __future__ import annotations

import queue
from pathlib import Path

import test_families as families_test
from click.testing import CliRunner
from servers import Answering, Receiver, Shifted
from test_families import DAY

from monitor import wiring
from monitor.alerts.delivery import Alerts
from monitor.alerts.routes import Routes
from monitor.cli.main import main
from monitor.config import AlertsConfig, Config
from monitor.core.incidents import Incident
from monitor.daemon import daemon_cycle
from monitor.incidents.maintenance import Maintenance
from monitor.memory import claims, working
from monitor.store import Store
from monitor.store.writes import IncidentWrites
from monitor.wiring import writer as incident_writer

QUOTA = '{"status":"error","message":"upstream request quota exceeded for this billing period, try again later"}'


def configured(answering: Answering, db: Path) -> Config:
    return Config.model_validate(
        {
            "database": str(db),
            "targets": [{"name": "api", "url": answering.url, "timeout": 2}],
            "detectors": {"consecutive": 2, "recover_after": 2},
            "model": {"id": "builtin"},
            "memory": {"embedder": "none"},
        }
    )


def occurrence(config: Config, store: Store, answering: Answering) -> Incident:
    """The target fails with the quota message until an incident opens and is investigated; then it recovers."""
    with Receiver() as hook:
        webhook = AlertsConfig.model_validate({"webhooks": [{"url": hook.url}]})
        alerts = Alerts(webhook, store, routes=Routes(config), maintenance=Maintenance())
        cycle = daemon_cycle(config, store, alerts=alerts)
        cycle.investigator = wiring.investigator(config, store, cycle.parts)
        cycle.queue = queue.Queue()
        return families_test.occurrence(cycle, config, store, answering, QUOTA)


def seeded(store: Store, clock: Shifted) -> tuple[int, int]:
    """Another target's incident that quoted the same message (no component in common), and an api incident
    under the same root cause that was another failure."""
    clock.ago = 30 * DAY
    vendor = IncidentWrites(store).open_incident("reports", "consecutive", f"reports answered 500 '{QUOTA}'", root_cause="server_error")
    IncidentWrites(store).close_incident(vendor, resolution="asked the vendor to raise the monthly quota (ticket VEND-88)")
    clock.ago = 20 * DAY
    restart = IncidentWrites(store).open_incident(
        "api", "consecutive", "api answered 500 after the worker pool hung", root_cause="server_error"
    )
    IncidentWrites(store).close_incident(restart, resolution="restarted the api pods")
    clock.ago = 0.0
    return vendor, restart


def said(incident: Incident) -> list[int]:
    return ([incident.related_incident] if incident.related_incident else []) + claims.suggested_ids(incident.claim)


def test_a_confirmation_is_asserted_next_time_and_a_rejection_never_offered_again(answering: Answering, tmp_path: Path) -> None:
    clock = Shifted()
    config = configured(answering, tmp_path / "one.db")
    store = Store(str(tmp_path / "one.db"), clock=clock)
    vendor, restart = seeded(store, clock)
    first = occurrence(config, store, answering)
    assert first.related_incident is None and {vendor, restart} <= set(said(first))  # suggested, not asserted

    path = tmp_path / "monitor.yaml"
    path.write_text(f"database: {tmp_path / 'one.db'}\nagent: {{mode: 'off'}}\ntargets:\n  - {{name: api, url: '{answering.url}'}}\n")
    word = CliRunner().invoke(
        main, ["incidents", "confirm", str(first.id), "--same-as", str(vendor), "--not", str(restart), "--config", str(path)]
    )
    assert word.exit_code == 0, word.output

    second = occurrence(config, store, answering)
    assert second.related_incident in (vendor, first.id) and second.confidence == "high", second.claim
    assert "VEND-88" in (second.diagnosis or "") and restart not in said(second)

    export = tmp_path / "memory.json"
    working.export(store, str(export))
    elsewhere = Store(str(tmp_path / "two.db"))
    IncidentWrites(elsewhere).close_incident(
        IncidentWrites(elsewhere).open_incident("web", "consecutive", "an incident of its own, so that ids move")
    )
    working.import_(incident_writer(config, elsewhere), str(export))
    ids = {row.summary: row.id for row in elsewhere.incidents.recent_incidents(None, 50)}
    third = occurrence(configured(answering, tmp_path / "two.db"), elsewhere, answering)
    assert third.related_incident is not None and third.confidence == "high"
    assert ids["api answered 500 after the worker pool hung"] not in said(third)
