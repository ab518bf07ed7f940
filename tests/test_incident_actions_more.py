"""What the builders of alert rules and status pages left to do by hand: acknowledge an incident from the CLI
(reminders and escalation stop), post a public note from the CLI and from the admin UI (through
``Writer.post_public_note``; the status page shows it), and see the maintenance windows in the admin UI."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from past import known
from servers import Receiver
from starlette.testclient import TestClient

from monitor import config as config_module
from monitor import wiring
from monitor.cli.main import main
from monitor.config import Config
from monitor.store import Store
from monitor.store.writes import IncidentWrites
from monitor.web.app import create_app
from monitor.wiring import writer as incident_writer

TOKEN = "a-token-of-twenty-chars"


def configured(tmp_path: Path, hook: Receiver, db_path: str, extra: str = "") -> Config:
    path = tmp_path / "monitor.yaml"
    path.write_text(
        f"database: {db_path}\nagent: {{mode: 'off'}}\n"
        f"alerts: {{webhooks: [{{url: '{hook.url}', name: ops}}]}}\n"
        "targets:\n  - {name: api, url: 'http://127.0.0.1:9/', alerts: {receivers: [ops], repeat_every: 1m}}\n"
        "  - {name: db, url: 'http://127.0.0.1:9/', alerts: {receivers: [ops], repeat_every: 1m}}\n" + extra
    )
    return config_module.load(str(path))


def cli(tmp_path: Path, *args: str) -> Any:
    return CliRunner().invoke(main, [*args, "--config", str(tmp_path / "monitor.yaml")])


def test_an_incident_acknowledged_from_the_cli_gets_no_more_reminders(tmp_path: Path, db_path: str) -> None:
    with Receiver() as hook:
        config = configured(tmp_path, hook, db_path)
        earlier = Store(db_path, clock=lambda: time.time() - 600)
        writer = incident_writer(config, earlier)
        ids = [known(writer.open(name, "consecutive", f"{name} down")).incident.id for name in ("api", "db")]
        answer = cli(tmp_path, "incidents", "ack", str(ids[0]), "--note", "on it, <b>rolling back</b>")
        assert answer.exit_code == 0 and f"incident #{ids[0]} acknowledged" in answer.output
        store = Store(db_path)
        acknowledged = known(store.incidents.incident(ids[0]))
        notes = acknowledged.notes or ""
        assert acknowledged.acknowledged_at and "on it, <b>rolling back</b>" in notes
        assert notes == notes.strip()  # `incidents show` printed 'notes: ' and a blank
        alerts = wiring.alerts(config, store)
        assert alerts.follow_up(store.incidents.open_incidents()) == 1  # db's reminder, not api's
        alerts.deliver_due()
        reminded = [m["incident"]["target"] for m in hook.received if m["event"] == "reminder"]
        assert reminded == ["db"]  # api was acknowledged

        again = cli(tmp_path, "incidents", "ack", str(ids[0]))
        assert again.exit_code == 0 and "already acknowledged" in again.output
        assert known(store.incidents.incident(ids[0])).acknowledged_at == acknowledged.acknowledged_at
        missing = cli(tmp_path, "incidents", "ack", "99")
        assert missing.exit_code == 3 and "no incident #99" in missing.output


def test_a_public_note_from_the_cli_shows_on_the_status_page(tmp_path: Path, db_path: str) -> None:
    with Receiver() as hook:
        config = configured(
            tmp_path, hook, db_path, "status_pages:\n  - slug: public\n    title: Status\n    groups: [{name: API, targets: [api]}]\n"
        )
        store = Store(db_path)
        incident = known(incident_writer(config, store).open("api", "consecutive", "api down: pool exhausted")).incident.id
        answer = cli(tmp_path, "incidents", "note", str(incident), "--public", "We are <script>x</script> on it")
        assert answer.exit_code == 0 and "public note" in answer.output
        assert [n.text for n in store.public.public_notes([incident])[incident]] == ["We are <script>x</script> on it"]
        private = cli(tmp_path, "incidents", "note", str(incident), "pool size was 10")
        assert private.exit_code == 0 and "pool size was 10" in (known(store.incidents.incident(incident)).notes or "")
        assert len(store.public.public_notes([incident])[incident]) == 1
        page = TestClient(create_app(store, config), base_url="http://127.0.0.1:9110").get("/status/public").text
        assert "We are &lt;script&gt;x&lt;/script&gt; on it" in page and "pool size" not in page
        assert cli(tmp_path, "incidents", "note", str(incident), "--public", "  ").exit_code == 3
        assert cli(tmp_path, "incidents", "note", "99", "--public", "x").exit_code == 3


def test_a_public_note_from_the_admin_ui_is_a_guarded_action(db_path: str) -> None:
    store = Store(db_path)
    config = Config.model_validate(
        {
            "web": {"token": TOKEN},
            "targets": [{"name": "api", "url": "http://127.0.0.1:9/"}],
            "status_pages": [{"slug": "p", "title": "S", "groups": [{"name": "g", "targets": ["api"]}]}],
        }
    )
    incident = IncidentWrites(store).open_incident("api", "consecutive", "3 failures")
    client = TestClient(create_app(store, config), base_url="http://127.0.0.1:9110", headers={"origin": "http://127.0.0.1:9110"})
    page = client.get(f"/incidents/{incident}")
    assert '<option value="public_note">' in page.text
    csrf = client.cookies["monitor_csrf"]
    form = {"action": "public_note", "note": "Fixed <i>soon</i>", "token": TOKEN, "csrf": csrf}
    refused = client.post(f"/incidents/{incident}/actions", data={**form, "token": "wrong-token-of-20-chars"})
    assert refused.status_code == 403 and store.public.public_notes([incident])[incident] == []
    empty = client.post(f"/incidents/{incident}/actions", data={**form, "note": ""})
    assert empty.status_code == 403 and "a public note needs its text" in empty.text
    assert client.post(f"/incidents/{incident}/actions", data=form, follow_redirects=False).status_code == 303
    assert [n.text for n in store.public.public_notes([incident])[incident]] == ["Fixed <i>soon</i>"]
    # the wrong token's refusal is only counted in the log (README: Web UI), the token holder's empty note audited
    assert [(a.action, a.ok) for a in store.incidents.web_actions(incident)] == [("public_note", 0), ("public_note", 1)]
    shown = client.get(f"/incidents/{incident}").text
    assert "Public notes" in shown and "Fixed &lt;i&gt;soon&lt;/i&gt;" in shown
    assert "Fixed &lt;i&gt;soon&lt;/i&gt;" in client.get("/status/p").text


def test_the_admin_ui_lists_maintenance_windows_with_their_next_occurrence(db_path: str) -> None:
    now = 1_900_000_000.0  # 2030-03-17 17:46 UTC, a Sunday
    config = Config.model_validate(
        {
            "targets": [{"name": "api", "url": "http://127.0.0.1:9/"}, {"name": "db", "url": "http://127.0.0.1:9/"}],
            "maintenance": [
                {"targets": ["api"], "start": "2030-03-17T17:00:00Z", "end": "2030-03-17T19:00:00Z", "reason": "<b>move</b>"},
                {
                    "targets": ["db"],
                    "rrule": "FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=30",
                    "timezone": "Europe/Berlin",
                    "duration": "1h",
                    "reason": "vacuum",
                },
                {"targets": ["db"], "start": "2020-01-01T00:00:00Z", "end": "2020-01-02T00:00:00Z", "reason": "old"},
            ],
        }
    )
    client = TestClient(create_app(Store(db_path, clock=lambda: now), config, clock=lambda: now), base_url="http://127.0.0.1:9110")
    page = client.get("/maintenance").text
    assert "&lt;b&gt;move&lt;/b&gt;" in page and "in force until 2030-03-17 19:00:00 UTC" in page
    assert "FREQ=WEEKLY;BYDAY=SU;BYHOUR=2;BYMINUTE=30 (Europe/Berlin)" in page
    assert "next 2030-03-24 01:30:00 UTC" in page  # 02:30 in Berlin, CET
    assert "over" in page and "old" in page
    assert 'href="/maintenance"' in client.get("/").text
    sunday = datetime(2030, 3, 24, 1, 30, tzinfo=UTC).timestamp()
    assert client.get("/api/v1/maintenance").json()["items"][1]["next"] == {"start": sunday, "end": sunday + 3600}
