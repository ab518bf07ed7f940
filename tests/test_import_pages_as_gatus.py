"""An imported Gatus config pages as Gatus would (issue 43, item 2): each alert at its own thresholds, counted in
checks, with its custom template's body and method, and nothing from detectors Gatus has not.

Gatus keeps a state per alert: it triggers at the check that makes ``failure-threshold`` failures in a row and
resolves at the check that makes ``success-threshold`` passes in a row. The target below fails and recovers on a
script, one answer per check; the receivers are loopback servers that keep what they were sent.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry
from servers import wait_for

from monitor.config import Config
from monitor.daemon import Daemon

# the target's answer at each check (1-based: check n answers SCRIPT[n - 1]); 200 from then on
SCRIPT = [200, 500, 500, 500, 200, 500, 500, 200, 200, 500, 200, 500, 200, 200, 200]
# What Gatus sends, by check, for custom (failure-threshold 3, success-threshold 2) and ntfy (2, 1), worked out by
# hand: ntfy triggers at check 3 (2 failures), resolves at 5 (1 pass), triggers at 7, resolves at 8; custom
# triggers at 4 (3 failures), stays triggered through 5-8 (never 2 passes), resolves at 9. The single failures at
# 10 and 12 page nobody (no threshold is 1), nor does the flapping from 1 to 13.
CUSTOM = [(4, "down"), (9, "up")]
NTFY = [(3, "opened"), (5, "resolved"), (7, "opened"), (8, "resolved")]


class Recorder(ThreadingHTTPServer):
    """Answers every request 200 and keeps (method, path, body, when); ``script``: the statuses it answers, in turn."""

    daemon_threads = True

    def __init__(self, script: list[int] | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script, self.seen = list(script or []), []  # type: list[int], list[tuple[str, str, bytes]]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append((self.command, self.path, body))
        status = self.server.script.pop(0) if self.server.script else 200
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    do_GET = do_POST = do_PUT = _answer


@pytest.fixture
def servers() -> Iterator[tuple[Recorder, Recorder]]:
    target, receiver = Recorder(SCRIPT), Recorder()
    yield target, receiver
    for server in (target, receiver):
        server.shutdown()
        server.server_close()


def gatus_config(target: Recorder, receiver: Recorder) -> dict[str, Any]:
    body = '{"text": "[ALERT_TRIGGERED_OR_RESOLVED]: [ENDPOINT_GROUP]/[ENDPOINT_NAME] - [ALERT_DESCRIPTION]", "url": "[ENDPOINT_URL]"}'
    return {
        "alerting": {
            "custom": {
                "url": f"{receiver.base}/hook",
                "method": "PUT",
                "body": body,
                "placeholders": {"ALERT_TRIGGERED_OR_RESOLVED": {"TRIGGERED": "down", "RESOLVED": "up"}},
            },
            "ntfy": {"url": receiver.base, "topic": "pages"},
        },
        "endpoints": [
            {
                "name": "api",
                "group": "core",
                "url": f"{target.base}/health?token=s3cr3t-t0ken-value",
                "interval": "1s",
                "conditions": ["[STATUS] == 200"],
                "alerts": [
                    {"type": "custom", "failure-threshold": 3, "success-threshold": 2, "send-on-resolved": True},
                    {"type": "ntfy", "failure-threshold": 2, "success-threshold": 1, "send-on-resolved": True},
                ],
            }
        ],
    }


def imported(tmp_path: Path, target: Recorder, receiver: Recorder) -> tuple[dict[str, Any], str]:
    """``monitor import gatus``'s config (as a document) and its report."""
    source, out = tmp_path / "gatus.yaml", tmp_path / "monitor.yaml"
    source.write_text(yaml.safe_dump(gatus_config(target, receiver)))
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "import", "gatus", str(source), "-o", str(out)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(out.read_text()), done.stdout + done.stderr


def check_of(daemon: Daemon, at: float) -> int:
    """Which check a notification queued at ``at`` followed: how many results were stored before it."""
    rows = daemon.store.results.recent_results("api", 100)
    return sum(1 for row in rows if row.checked_at <= at)


def test_an_imported_gatus_config_pages_at_the_checks_gatus_would(tmp_path: Path, servers: tuple[Recorder, Recorder]) -> None:
    target, receiver = servers
    document, report = imported(tmp_path, target, receiver)
    assert "window and flapping detectors" in report and "per_receiver" in report
    document = {key: value for key, value in document.items() if key not in ("status_pages", "web")}
    document |= {"database": str(tmp_path / "run.db"), "agent": {"mode": "off"}, "model": {"id": "builtin"}, "metrics": {"port": 0}}
    daemon = Daemon(Config.model_validate(document), registry=CollectorRegistry())
    daemon.start()
    try:
        wait_for(lambda: daemon.store.results.count_results("api") >= len(SCRIPT), timeout=60)
        wait_for(lambda: daemon.store.outbox.pending_notifications() == 0, timeout=10)
        incidents = daemon.store.incidents.recent_incidents()
        sent = [(row, check_of(daemon, row.created_at)) for i in incidents for row in daemon.store.outbox.notifications_for(i.id)]
    finally:
        daemon.stop()
    # one incident, from check 3 to 9: no window of failures (checks 10, 12), no flapping
    assert [(i.status, i.pattern) for i in incidents] == [("resolved", "consecutive")]
    custom = [(check, json.loads(row.payload)) for row, check in sent if "/hook" in row.receiver]
    ntfy = [(check, json.loads(row.payload)) for row, check in sent if row.receiver.startswith("apprise")]
    assert [(check, json.loads(payload["rendered"])["text"].split(":")[0]) for check, payload in custom] == CUSTOM
    assert [(check, "resolved" if "resolved" in payload["title"] else "opened") for check, payload in ntfy] == NTFY
    hooks = [(method, json.loads(body)) for method, path, body in receiver.seen if path == "/hook"]
    assert [method for method, _ in hooks] == ["PUT", "PUT"]  # the template's method, its body as the receiver got it
    first = hooks[0][1]
    assert first["text"].startswith("down: core/api - 3 consecutive failures of api")
    assert "s3cr3t-t0ken-value" not in json.dumps(hooks) and first["url"].startswith(target.base)


def test_the_window_and_flapping_detectors_are_off_where_asked() -> None:
    """A single failure after a recovery, and flapping, page nobody with ``window`` and ``flapping`` off (an import's)."""
    from monitor.config import Detectors
    from monitor.incidents import patterns
    from monitor.incidents.history import Held

    rows = [Held(100.0 - i, ok, 1.0) for i, ok in enumerate([0, 1, 1, 0, 0, 0, 1, 0, 0, 0])]
    assert [p.name for p in patterns.detect("api", rows, Detectors(), 100.0)] == ["flapping", "window"]
    assert patterns.detect("api", rows, Detectors(window=False, flapping=False), 100.0) == []


def test_a_json_template_gets_its_values_escaped_and_redacted() -> None:
    from monitor.config import templates

    body = '{"text": "{{ summary }}", "ok": {{ resolved }}, "monitor": {{ monitorJSON }}}'
    said = templates.render(
        body,
        {"summary": 'a "quoted"\nline password=hunter2', "resolved": False, "monitorJSON": {"name": "api"}},
        json_body=templates.is_json(body),
    )
    parsed = json.loads(said)
    assert parsed["text"].startswith('a "quoted"\nline') and "hunter2" not in said
    assert parsed["ok"] is False and parsed["monitor"] == {"name": "api"}
    with pytest.raises(templates.TemplateError):  # the sandbox: no way to Python's internals
        templates.render("{{ ''.__class__.__mro__[1].__subclasses__() }}", {}, json_body=False)
