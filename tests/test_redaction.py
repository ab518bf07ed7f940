"""One hostile answer, every way out: what a target answered (a server's version, internal hosts, credentials in
a URL, a DSN, a key=value pair, a bearer token) never leaves the process with its secrets, and a stored diagnosis
is this investigation's sentence of facts, never a dump of the answer's headers and body."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from outbox import Stop, plain_alerts, queue
from past import known
from servers import Background, Receiver
from starlette.testclient import TestClient
from test_alertmanager import active_alerts, running_alertmanager

from monitor import wiring
from monitor.agent.tools import CheckTarget, GetIncident, RecordDiagnosis
from monitor.checks.engine import Checker
from monitor.config import Config
from monitor.core.diagnoses import Diagnosed
from monitor.core.urls import redact_text, redacted
from monitor.incidents import evidence
from monitor.incidents.tracker import Event
from monitor.memory import transcripts, working
from monitor.memory.findings import sentence
from monitor.memory.recall import Evidence
from monitor.store import Store
from monitor.store.writes import IncidentWrites
from monitor.web.app import create_app

HOSTILE = (
    "upstream http://svc:s3cr3tpw@10.1.2.3:8080/api?token=TOPSECRET123 failed; pg-main:5432 "
    "db-internal.corp:5432\ndsn=postgres://app:pgpass99@db-internal.corp:5432/app password=hunter2\n"
    "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.sig0123\n"
)
SECRETS = ("s3cr3tpw", "TOPSECRET123", "pgpass99", "hunter2", "eyJhbGciOiJIUzI1NiJ9")
# what the old fallback stored: the status line, the headers and the body, as evidence.text() wrote them
DUMP = "api: the application answers with 5xx error statuses. HTTP 503\nServer: BaseHTTP/0.6 Python/3.11.7\n" + HOSTILE


class _Hostile(BaseHTTPRequestHandler):
    """503 with the hostile body; BaseHTTPRequestHandler's own ``Server: BaseHTTP/0.6 Python/3.x`` header."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        body = HOSTILE.encode()
        self.send_response(503)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def hostile() -> Iterator[Background]:
    with Background(_Hostile) as server:
        yield server


def test_redact_text_hides_credentials_written_in_any_form() -> None:
    text = redact_text(HOSTILE + 'X-Api-Key: k3y-9 {"client_secret": "cs-999", "token": null, "detail": "pass=p1x"} Basic dXNlcjpwYXNz')
    assert not [s for s in (*SECRETS, "k3y-9", "cs-999", "p1x", "dXNlcjpwYXNz") if s in text], text
    assert "http://***@10.1.2.3:8080/api?token=***" in text and "postgres://***@db-internal.corp:5432/app" in text
    assert "password=***" in text and "Authorization: ***" in text and '"token": null' in text
    assert redact_text(text) == text
    plain = "Basic authentication failed; the primary key is id; Content-Type: text/plain; at 12:30, retry-after: 30"
    assert redact_text(plain) == plain
    document = json.dumps({"password": 'p"q', "key": 12, "note": "token=abc== and more"})
    assert json.loads(redact_text(document)) == {"password": "***", "key": 12, "note": "token=*** and more"}  # the whole value
    assert redacted({"a": [HOSTILE, 3, None], "b": {"c": HOSTILE}}) == {
        "a": [redact_text(HOSTILE), 3, None],
        "b": {"c": redact_text(HOSTILE)},
    }


def test_the_facts_sentence_has_no_header_and_a_short_redacted_quote() -> None:
    said = sentence(
        Evidence(
            "api",
            status_code=503,
            error="unexpected_status",
            answer="Server: BaseHTTP/0.6 Python/3.11.7\nContent-Type: text/plain\n\n" + HOSTILE,
        ),
        "server_error",
    )
    assert said.startswith(
        "api: the application answers with 5xx error statuses. Seen: HTTP 503 (unexpected_status); "
        'it said: "upstream http://***@10.1.2.3:8080/api?token=*** failed; pg-main:5432'
    )
    assert "\n" not in said and len(said) < 260 and said.endswith('…".')
    assert not [s for s in (*SECRETS, "Server", "BaseHTTP", "Python/3", "Content-Type") if s in said], said
    on_one_line = " ".join(f"Server: nginx/1.25.3 (Ubuntu) Content-Type: text/html; charset=utf-8 {HOSTILE}".split())
    assert sentence(Evidence("api", answer=on_one_line), "server_error").count("nginx") == 0
    condition = sentence(
        Evidence("api", error="condition", detail="JSON field 'status' is not 'UP'", answer='{"status": "DOWN"}'), "bad_content"
    )
    assert condition == (
        "api: it answers, but the body or a JSON health field is wrong. Seen: condition; "
        """failed: JSON field 'status' is not 'UP'; it said: "{"status": "DOWN"}"."""
    )


def test_a_diagnosis_whose_summary_is_all_dropped_is_made_of_facts(hostile: Background, db_path: str) -> None:
    config = Config.model_validate({"targets": [{"name": "api", "url": hostile.base + "/", "timeout": "2s"}]})
    tools = wiring.toolbox(config, Store(db_path))
    store = tools.store
    other = IncidentWrites(store).open_incident("web", "consecutive", "pool exhausted", root_cause="server_error")
    IncidentWrites(store).close_incident(other, "raised the pool of web-db-3 to 40")
    now = IncidentWrites(store).open_incident("api", "consecutive", "3 consecutive failures of api")
    tools.begin(store.runs.start_run("t", target="api", incident_id=now), now, "api", "consecutive")
    assert "CRITICAL status=503" in CheckTarget(tools)(name="api")
    assert GetIncident(tools)(id=other).startswith(f"#{other}")
    # the only sentence names another incident: it is dropped, and the facts are what is stored
    assert "diagnosis recorded" in RecordDiagnosis(tools)(
        root_cause="server_error", related_incident="no", confidence="medium", summary=f"Same as #{other}."
    )
    stored = known(store.incidents.incident(now)).diagnosis
    assert stored is not None and stored.startswith(
        "api: the application answers with 5xx error statuses. Seen: HTTP 503 "
        '(unexpected_status); it said: "upstream http://***@10.1.2.3:8080/api?token=*** failed'
    )
    assert not [s for s in (*SECRETS, "Server", "BaseHTTP", "Python/3", "\n") if s in stored], stored


def test_every_way_out_hides_the_secrets_of_one_hostile_answer(hostile: Background, tmp_path: Path, db_path: str, stopped: Stop) -> None:
    with Receiver() as hook, Receiver() as apprise, running_alertmanager(tmp_path) as am:
        config = Config.model_validate(
            {
                "targets": [{"name": "api", "url": hostile.base + "/", "timeout": "2s"}],
                "alerts": {
                    "webhooks": [{"url": hook.url}],
                    "notify": [apprise.url.replace("http://", "json://")],
                    "alertmanager": am,
                    "wait_for_diagnosis": "0s",
                },
                "status_pages": [
                    {"slug": "public", "title": "Status", "show_diagnosis": True, "groups": [{"name": "API", "targets": ["api"]}]}
                ],
            }
        )
        store = Store(db_path)
        [result] = Checker().run(config.targets)
        store.results.add_results([result])
        incident = IncidentWrites(store).open_incident_unless_open(
            "api", "consecutive", f"api failed: {HOSTILE}", evidence=evidence.evidence(store.results.recent_results("api", 10), result)
        )
        assert incident is not None
        run = store.runs.start_run("t", target="api", incident_id=incident)
        IncidentWrites(store).record_diagnosis(
            run,
            incident,
            Diagnosed(diagnosis=DUMP, root_cause="server_error", related_incident=None, confidence="medium", suspected_cause="5xx"),
        )
        alerts = stopped(plain_alerts(config.alerts, store))
        queue(alerts, Event("opened", known(store.incidents.incident(incident))))
        assert alerts.deliver_due() == 3
        channels = {
            "webhook": json.dumps(hook.received),
            "apprise": json.dumps(apprise.received),
            "alertmanager": json.dumps(active_alerts(am)),
        }
    client = TestClient(create_app(store, config), base_url="http://127.0.0.1:9110")
    for path in (
        "/",
        f"/incidents/{incident}",
        f"/runs/{run}",
        f"/api/v1/incidents/{incident}",
        "/api/v1/incidents",
        f"/api/v1/runs/{run}",
        "/api/v1/targets/api/results",
        "/status/public",
    ):
        answer = client.get(path)
        assert answer.status_code == 200, path
        channels[path] = answer.text
    working.export(store, str(tmp_path / "dump.json"))
    transcripts.export(store, str(tmp_path / "runs.json"), "full")
    channels.update({name: (tmp_path / name).read_text() for name in ("dump.json", "runs.json")})
    for name, text in channels.items():
        assert "server_error" in text or "5xx" in text or name == "/api/v1/targets/api/results", name  # it was there
        assert not [s for s in SECRETS if s in text], name
    assert "10.1.2.3" in channels["webhook"]  # the admin's ways out keep the hosts an on-call person needs
