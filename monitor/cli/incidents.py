"""What the database says now: ``monitor status``, and ``monitor incidents list|show|resolve|ack|note``."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click

from monitor.cli.common import ROW_ID, config_option, db_option, fail, open_database
from monitor.config import Config
from monitor.core.state import exit_code


@click.command()
@config_option
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON (results as monitor check --json prints them).")
def status(config_path: str | None, db: str | None, as_json: bool) -> None:
    """The last result of every target and the open incidents, from the database, and each target's state as
    the web UI says it: stale when it has not been checked for three intervals (the daemon stopped), waiting
    for a heartbeat's first ping.

    \b
    monitor status --config config/monitor.yaml
    Exit code: Nagios, from the last results (3 when nothing was recorded yet, or a target is stale).
    """
    cfg, store = open_database(config_path, db, existing=True, reading=True)
    latest, open_incidents = [with_state(row, cfg, store) for row in store.latest_results()], store.open_incidents()
    if as_json:
        click.echo(json.dumps({"targets": latest, "open_incidents": open_incidents}, indent=2))
    else:
        from monitor.cli.report import print_incidents, when

        for row in latest:  # the state in 11 columns: MAINTENANCE is the longest
            said = row["state"] if row["state"] in ("stale", "waiting", "maintenance") else row["severity"] or ""
            click.echo(f"{said.upper():11} {row['target']:<20} {when(row['checked_at'])} {row['latency_ms'] or 0:.0f}ms {reason(row)}")
        click.echo(f"\nopen incidents: {len(open_incidents)}")
        if open_incidents:
            print_incidents(open_incidents)
    sys.exit(exit_code(row["state"] for row in latest))


def with_state(row: dict[str, Any], cfg: Config, store: Any) -> dict[str, Any]:
    """A stored result as ``monitor check --json`` prints one (ok a boolean, phases an object), with the state the
    web UI gives its target (up, warning, down, stale, waiting, maintenance)."""
    from monitor.web.charts import phases_of
    from monitor.web.pages import Pages

    state = Pages(store, cfg).state(row["target"], row, time.time())
    return {**row, "ok": bool(row["ok"]), "phases": phases_of(row) or None, "state": state}


def reason(row: dict[str, Any]) -> str:
    said = f"{row['error']}: {row['detail']}" if row["error"] and row["ok"] is False else row["detail"] or ""
    if row["state"] == "stale":
        return f"no check for {time.time() - row['checked_at']:.0f}s: the daemon stopped or is behind; last: {said}"
    return said


@click.group()
def incidents() -> None:
    """List, show, resolve, acknowledge and annotate incidents."""


@incidents.command("list")
@click.option("--status", type=click.Choice(["open", "resolved", "all"]), default="all", show_default=True)
@click.option("--limit", type=int, default=50, show_default=True)
@config_option
@db_option
def incidents_list(status: str, limit: int, config_path: str | None, db: str | None) -> None:
    """List incidents, newest first.

    \b
    monitor incidents list --status open
    """
    from monitor.cli.report import print_incidents

    _, store = open_database(config_path, db, existing=True, reading=True)
    print_incidents(store.incidents.recent_incidents(None if status == "all" else status, limit))


@incidents.command("show")
@click.argument("incident_id", type=ROW_ID)
@config_option
@db_option
def incidents_show(incident_id: int, config_path: str | None, db: str | None) -> None:
    """Show one incident in full, with its agent runs.

    \b
    monitor incidents show 12
    """
    from monitor.cli.report import print_incident

    _, store = open_database(config_path, db, existing=True, reading=True)
    incident = store.incident(incident_id)
    if incident is None:
        fail(f"no incident #{incident_id} in {store.path}")
    print_incident(incident, [r for r in store.runs.recent_runs(1000) if r["incident_id"] == incident_id])


@incidents.command("resolve")
@click.argument("incident_id", type=ROW_ID)
@click.option("--note", required=True, help="How it was fixed: later investigations recall this.")
@config_option
@db_option
def incidents_resolve(incident_id: int, note: str, config_path: str | None, db: str | None) -> None:
    """Resolve an incident with a note of what fixed it; its receivers are told, as for a recovery.

    An incident that already resolved itself keeps the time it closed; the note is added. The "resolved"
    notifications wait in the database's outbox until the daemon delivers them.

    \b
    monitor incidents resolve 12 --note "rolled back deploy 4711"
    """
    from monitor.alerts import incident_writer

    cfg, store = open_database(config_path, db, existing=True)
    if store.incident(incident_id) is None:
        fail(f"no incident #{incident_id} in {store.path}")
    if incident_writer(cfg, store).resolve(incident_id, resolution=note) is None:
        click.echo(f"incident #{incident_id} was already resolved; its note is now: {note}")
        return
    click.echo(f"incident #{incident_id} resolved: {note}")  # its receivers hear of it from the daemon


@incidents.command("ack")
@click.argument("incident_id", type=ROW_ID)
@click.option("--note", default="", help="What you are doing about it (a note on the incident).")
@config_option
@db_option
def incidents_ack(incident_id: int, note: str, config_path: str | None, db: str | None) -> None:
    """Acknowledge an incident: someone is on it, so its reminders and escalation stop.

    \b
    monitor incidents ack 12 --note "looking at the pool"
    """
    from monitor.alerts import incident_writer

    cfg, store = open_database(config_path, db, existing=True)
    incident = store.incident(incident_id)
    if incident is None:
        fail(f"no incident #{incident_id} in {store.path}")
    if incident["acknowledged_at"]:
        from monitor.cli.report import when

        click.echo(f"incident #{incident_id} was already acknowledged at {when(incident['acknowledged_at'])}")
        return
    said = f": {note.strip()}" if note.strip() else ""
    incident_writer(cfg, store).acknowledge(incident_id, f"acknowledged from the CLI{said}")
    click.echo(f"incident #{incident_id} acknowledged: no more reminders or escalation for it")


@incidents.command("note")
@click.argument("incident_id", type=ROW_ID)
@click.argument("text")
@click.option("--public", is_flag=True, help="A note for the public: status pages show it under the incident.")
@config_option
@db_option
def incidents_note(incident_id: int, text: str, public: bool, config_path: str | None, db: str | None) -> None:
    """Add a note to an incident: for the team (the incident's notes), or with --public for status pages.

    \b
    monitor incidents note 12 "pool size was 10, now 50"
    monitor incidents note 12 --public "We found the cause and are rolling out a fix."
    """
    from monitor.alerts import incident_writer

    cfg, store = open_database(config_path, db, existing=True)
    if store.incident(incident_id) is None:
        fail(f"no incident #{incident_id} in {store.path}")
    if not text.strip():
        fail("a note needs its text")
    writer = incident_writer(cfg, store)
    if public:
        writer.post_public_note(incident_id, text.strip())
        click.echo(f"incident #{incident_id}: public note posted (status pages show it)")
    else:
        writer.annotate(incident_id, text.strip())
        click.echo(f"incident #{incident_id}: note added")
