"""Quorum: one target checked from three locations (three ``monitor run`` replicas with a lease on one
PostgreSQL). One location cannot reach it: no incident, its results say so. All three cannot: one incident.

Each replica sends its location in a header (``headers: {X-Location: ${MONITOR_LOCATION}}``, the config's
own substitution); the target refuses the locations it is told to, as a network path that is down would.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from servers import Receiver, wait_for
from test_failover import Daemons

from monitor.store import Store

QUORUM_TARGET = "shop"


class _Refusing(BaseHTTPRequestHandler):
    server: Refusing

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.headers.get("X-Location") in self.server.unreachable:
            self.close_connection = True
            self.connection.close()  # the path from there is down: the connection ends with no answer
            return
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")


class Refusing(ThreadingHTTPServer):
    """A loopback target that answers 200, except to the locations in ``unreachable``."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Refusing)
        self.unreachable: set[str] = set()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/health"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


@pytest.fixture
def target() -> Any:
    server = Refusing()
    yield server
    server.close()


def test_one_location_failing_is_no_outage_all_three_are_one(postgres_url: str, target: Refusing, tmp_path: Path) -> None:
    with Receiver() as hooks:
        config = tmp_path / "monitor.yaml"
        config.write_text(
            f"replicas: 3\nworkers: 1\nlease: 3s\nagent: {{mode: 'off'}}\ndetectors: {{consecutive: 2}}\n"
            f"alerts: {{webhooks: [{{url: '{hooks.url}'}}]}}\n"
            f"targets:\n  - {{name: {QUORUM_TARGET}, url: '{target.url}', interval: 1s, timeout: 1s,\n"
            f"      headers: {{X-Location: '${{MONITOR_LOCATION}}'}}, quorum: {{locations: 3, agree: 2}}}}\n"
        )
        store = Store(postgres_url)
        daemons = Daemons(config, postgres_url, tmp_path)

        def rows(since: float) -> list[dict[str, Any]]:
            return store._rows("SELECT location, ok, error FROM results WHERE target = ? AND checked_at > ?", (QUORUM_TARGET, since))

        try:
            target.unreachable = {"r2"}
            for index in range(3):
                daemons.start(index)
            # checked from all three places; r2's path fails, for several rounds: a warning, no incident
            wait_for(lambda: {r["location"] for r in rows(0)} == {"r0", "r1", "r2"}, timeout=30, every=0.2)
            since = time.time()
            wait_for(lambda: sum(r["location"] == "r2" for r in rows(since)) >= 5, timeout=20, every=0.2)
            seen = rows(since)
            assert {r["location"] for r in seen if not r["ok"]} == {"r2"}, seen
            assert {r["location"] for r in seen if r["ok"]} == {"r0", "r1"}, seen
            assert store._scalar("SELECT count(*) FROM incidents") == 0, daemons.logs()

            # every path fails: one incident, opened by whichever replica came first, notified once
            target.unreachable = {"r0", "r1", "r2"}
            wait_for(lambda: store._scalar("SELECT count(*) FROM incidents") >= 1, timeout=20, every=0.2)
            opened = time.time()
            # two failures more from every place: each replica's detector has come to the same verdict meanwhile

            def failed() -> Counter[str]:
                return Counter(r["location"] for r in rows(opened) if not r["ok"])

            wait_for(lambda: all(failed()[place] >= 2 for place in ("r0", "r1", "r2")), timeout=20, every=0.2)
            assert store._scalar("SELECT count(*) FROM incidents WHERE target = ?", (QUORUM_TARGET,)) == 1
            undelivered = "SELECT count(*) FROM outbox WHERE delivered_at IS NULL AND dropped_at IS NULL"  # any replica's
            wait_for(lambda: hooks.received and store._scalar(undelivered) == 0, timeout=10)
            assert [e["event"] for e in hooks.received] == ["opened"], hooks.received
        finally:
            daemons.stop()
            store.close()
