"""What the database says now: ``monitor status``, and ``monitor incidents list|show|resolve|confirm|ack|note``."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from monitor.cli.common import ROW_ID, config_option, db_option, fail, open_database
from monitor.config import Config
from monitor.core.incidents import Verdict
from monitor.core.state import exit_code

if TYPE_CHECKING:
    from monitor.core.results import StoredResult
    from monitor.incidents.writer import Writer
    from monitor.store import Store


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
    latest, open_incidents = [with_state(row, cfg, store) for row in store.results.latest_results()], store.incidents.open_incidents()
    if as_json:
        click.echo(json.dumps({"targets": latest, "open_incidents": [i.to_json() for i in open_incidents]}, indent=2))
    else:
        from monitor.cli.report import print_incidents, when

        for row in latest:  # the state in 11 columns: MAINTENANCE is the longest
            said = row["state"] if row["state"] in ("stale", "waiting", "maintenance") else row["severity"] or ""
            click.echo(f"{said.upper():11} {row['target']:<20} {when(row['checked_at'])} {row['latency_ms'] or 0:.0f}ms {reason(row)}")
        click.echo(f"\nopen incidents: {len(open_incidents)}")
        if open_incidents:
            print_incidents(open_incidents)
    sys.exit(exit_code(row["state"] for row in latest))


def with_state(result: StoredResult, cfg: Config, store: Store) -> dict[str, Any]:
    """A stored result as ``monitor check --json`` prints one (ok a boolean, phases an object), with the state the
    web UI gives its target (up, warning, down, stale, waiting, maintenance)."""
    from monitor.web.pages import Pages

    state = Pages(store, cfg).state(result.target, result, time.time())
    return {**result.to_json(), "ok": bool(result.ok), "phases": result.phase_times() or None, "state": state}


def reason(row: dict[str, Any]) -> str:
    said = f"{row['error']}: {row['detail']}" if row["error"] and row["ok"] is False else row["detail"] or ""
    if row["state"] == "stale":
        return f"no check for {time.time() - row['checked_at']:.0f}s: the daemon stopped or is behind; last: {said}"
    return said


@click.group()
def incidents() -> None:
    """List, show, resolve, acknowledge and annotate incidents, and say which past incident each was."""


same_as_option = click.option(
    "--same-as", "same", type=ROW_ID, multiple=True, help="A past incident this was the same failure as (repeatable)."
)
not_option = click.option(
    "--not", "wrong", type=ROW_ID, multiple=True, help="A past incident suggested for this that was wrong (repeatable)."
)


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
    incident = store.incidents.incident(incident_id)
    if incident is None:
        fail(f"no incident #{incident_id} in {store.path}")
    runs = [r for r in store.runs.recent_runs(1000) if r.incident_id == incident_id]
    print_incident(incident, runs, store.incidents.incident_links([incident_id]))


@incidents.command("resolve")
@click.argument("incident_id", type=ROW_ID)
@click.option("--note", required=True, help="How it was fixed: later investigations recall this.")
@same_as_option
@not_option
@config_option
@db_option
def incidents_resolve(
    incident_id: int, note: str, same: tuple[int, ...], wrong: tuple[int, ...], config_path: str | None, db: str | None
) -> None:
    """Resolve an incident with a note of what fixed it; its receivers are told, as for a recovery. With
    --same-as M, it was the same failure as past incident M (asserted when it comes back); with --not M, the
    suggested incident M was wrong for it (not suggested again for this failure).

    An incident that already resolved itself keeps the time it closed; the note is added. The "resolved"
    notifications wait in the database's outbox until the daemon delivers them.

    \b
    monitor incidents resolve 12 --note "rolled back deploy 4711"
    monitor incidents resolve 12 --note "raised the pool to 50" --same-as 7 --not 9
    """
    from monitor import wiring

    cfg, store = open_database(config_path, db, existing=True)
    _check_links(store, incident_id, same, wrong)
    writer = wiring.writer(cfg, store)
    if writer.resolve(incident_id, resolution=note) is None:
        click.echo(f"incident #{incident_id} was already resolved; its note is now: {note}")
    else:
        click.echo(f"incident #{incident_id} resolved: {note}")  # its receivers hear of it from the daemon
    _link(writer, incident_id, same, wrong)


@incidents.command("confirm")
@click.argument("incident_id", type=ROW_ID)
@same_as_option
@not_option
@click.option("--note", default="", help="Why (kept with the link).")
@config_option
@db_option
def incidents_confirm(
    incident_id: int, same: tuple[int, ...], wrong: tuple[int, ...], note: str, config_path: str | None, db: str | None
) -> None:
    """Say which past incident this one was, once it is resolved (or while it is open): --same-as M, the same
    failure as M (asserted when it comes back); --not M, a suggestion that was wrong (not suggested again for
    this failure). A later word on the same two incidents replaces the earlier one.

    \b
    monitor incidents confirm 12 --same-as 7
    monitor incidents confirm 12 --not 9 --note "9 was the cache, this was the pool"
    """
    from monitor import wiring

    if not same and not wrong:
        fail("say which past incident it was: --same-as M, or --not M for a wrong suggestion")
    cfg, store = open_database(config_path, db, existing=True)
    _check_links(store, incident_id, same, wrong)
    _link(wiring.writer(cfg, store), incident_id, same, wrong, note.strip() or None)


def _check_links(store: Store, incident_id: int, same: Sequence[int], wrong: Sequence[int]) -> None:
    """Fail, before anything is written, on an incident that does not exist or a word that cannot stand."""
    from monitor.memory.links import conflict

    for named in (incident_id, *same, *wrong):
        if store.incidents.incident(named) is None:
            fail(f"no incident #{named} in {store.path}")
    refused = conflict(same, wrong, incident_id)
    if refused is not None:
        fail(refused)


def _link(writer: Writer, incident_id: int, same: Sequence[int], wrong: Sequence[int], note: str | None = None) -> None:
    from monitor.cli.report import echo
    from monitor.memory.links import link

    said: list[tuple[int, Verdict]] = [(m, "same") for m in same] + [(m, "not") for m in wrong]
    for other, verdict in said:
        made = link(writer, incident_id, other, verdict, actor="cli", note=note)
        echo(f"incident #{incident_id}: {made.said(incident_id)}")


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
    from monitor import wiring

    cfg, store = open_database(config_path, db, existing=True)
    incident = store.incidents.incident(incident_id)
    if incident is None:
        fail(f"no incident #{incident_id} in {store.path}")
    if incident.acknowledged_at:
        from monitor.cli.report import when

        click.echo(f"incident #{incident_id} was already acknowledged at {when(incident.acknowledged_at)}")
        return
    said = f": {note.strip()}" if note.strip() else ""
    wiring.writer(cfg, store).acknowledge(incident_id, f"acknowledged from the CLI{said}")
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
    from monitor import wiring

    cfg, store = open_database(config_path, db, existing=True)
    if store.incidents.incident(incident_id) is None:
        fail(f"no incident #{incident_id} in {store.path}")
    if not text.strip():
        fail("a note needs its text")
    writer = wiring.writer(cfg, store)
    if public:
        writer.post_public_note(incident_id, text.strip())
        click.echo(f"incident #{incident_id}: public note posted (status pages show it)")
    else:
        writer.annotate(incident_id, text.strip())
        click.echo(f"incident #{incident_id}: note added")
