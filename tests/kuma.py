"""Uptime Kuma databases for tests, built from Kuma's own schema (tests/fixtures/uptime-kuma, MIT), filled as Kuma
fills them: 1.23 as Kuma creates it on first start (the template and its patches), 2.x as its knex migrations
leave it."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "uptime-kuma"


def _patch(db: sqlite3.Connection, path: Path) -> None:
    """Kuma's Database.importSQLFile: drop lines starting with --, split on ;, run each statement."""
    text = "\n".join(line for line in path.read_text().split("\n") if not line.startswith("--"))
    for statement in (part.strip() for part in text.split(";")):
        if statement:
            db.execute(statement)


def create(path: Path, version: str) -> sqlite3.Connection:
    """An empty Kuma database of ``version`` ("1.23" or "2.x") at ``path``."""
    if version == "1.23":
        shutil.copy(FIXTURES / "1.23" / "kuma.db", path)
        db = sqlite3.connect(path, isolation_level=None)
        for number in range(1, 11):
            _patch(db, FIXTURES / "1.23" / f"patch{number}.sql")
        for name in (FIXTURES / "1.23" / "patch-order.txt").read_text().split():
            _patch(db, FIXTURES / "1.23" / name)
        return db
    db = sqlite3.connect(path, isolation_level=None)
    db.executescript((FIXTURES / "kuma-2.x-schema.sql").read_text())
    return db


def insert(db: sqlite3.Connection, table: str, **row: Any) -> int:
    columns = ", ".join(f'"{key}"' for key in row)
    values = [json.dumps(v) if isinstance(v, (list, dict)) else v for v in row.values()]
    cursor = db.execute(f'INSERT INTO "{table}" ({columns}) VALUES ({", ".join("?" * len(row))})', values)  # noqa: S608
    return int(cursor.lastrowid or 0)


def monitor(db: sqlite3.Connection, name: str, kind: str, **row: Any) -> int:
    """A monitor as Kuma's editor saves one: its defaults (60 s, no retries, 200-299), then what the test gives."""
    defaults: dict[str, Any] = {"user_id": 1, "active": 1, "interval": 60, "retry_interval": 60, "maxretries": 0}
    defaults |= {"accepted_statuscodes_json": '["200-299"]', "maxredirects": 10, "method": "GET"}
    return insert(db, "monitor", name=name, type=kind, **{**defaults, **row})


def fill(db: sqlite3.Connection, base: str = "http://127.0.0.1:1") -> dict[str, int]:
    """One monitor of each kind Kuma users have, a group, tags, notifications, a status page and maintenance."""
    insert(db, "user", username="admin", password="x")
    ids = {"group": monitor(db, "Production", "group")}
    ids["web"] = monitor(db, "Web site", "http", url=f"{base}/ok", parent=ids["group"], maxretries=2, interval=30)
    ids["shop"] = monitor(db, "Shop", "keyword", url=f"{base}/shop", keyword="Add to cart", parent=ids["group"])
    ids["maint"] = monitor(db, "Not in maintenance", "keyword", url=f"{base}/shop", keyword="maintenance", invert_keyword=1)
    ids["api"] = monitor(db, "API", "json-query", url=f"{base}/api", json_path="status", expected_value="UP")
    ids["teapot"] = monitor(db, "Teapot", "http", url=f"{base}/teapot", accepted_statuscodes_json='["418", "200-299"]')
    ids["db"] = monitor(db, "Postgres", "port", hostname="127.0.0.1", port=1)
    ids["ping"] = monitor(db, "Gateway", "ping", hostname="127.0.0.1")
    ids["dns"] = monitor(db, "DNS", "dns", hostname="example.com", dns_resolve_type="A", dns_resolve_server="1.1.1.1", port=53)
    ids["push"] = monitor(db, "Backup job", "push", push_token="abc123xyz0", interval=3600)
    ids["docker"] = monitor(db, "Container", "docker", docker_container="web")
    ids["paused"] = monitor(db, "Old", "http", url=f"{base}/ok", active=0)
    tag = insert(db, "tag", name="env", color="#ff0000")
    insert(db, "monitor_tag", monitor_id=ids["web"], tag_id=tag, value="prod")
    slack = {"type": "slack", "name": "Slack", "slackwebhookURL": "https://hooks.slack.com/services/T00/B00/XXXX"}
    hook = {"type": "webhook", "name": "Hook", "webhookURL": "https://hooks.example.com/kuma", "webhookContentType": "json"}
    signal = {"type": "signal", "name": "Signal", "signalURL": "http://signal:8080", "signalNumber": "+1"}
    notes = [insert(db, "notification", name=c["name"], config=json.dumps(c), active=1, user_id=1) for c in (slack, hook, signal)]
    insert(db, "monitor_notification", monitor_id=ids["web"], notification_id=notes[0])
    insert(db, "monitor_notification", monitor_id=ids["api"], notification_id=notes[1])
    page = insert(
        db,
        "status_page",
        slug="public",
        title="Example status",
        description="Our services",
        icon="/icon.svg",
        theme="light",
        published=1,
        search_engine_index=1,
        show_tags=0,
    )
    group = insert(db, "group", name="Services", status_page_id=page, public=1, weight=1)
    for weight, key in enumerate(("web", "api", "docker")):
        insert(db, "monitor_group", monitor_id=ids[key], group_id=group, weight=weight)
    insert(db, "incident", title="Planned upgrade", content="Sunday 02:00 UTC", style="info", pin=1, status_page_id=page)
    weekly = insert(db, "maintenance", title="Weekly", description="", strategy="recurring-weekday", user_id=1, active=1,
                    start_time="02:00", end_time="03:30", weekdays="[0, 3]", timezone="Europe/Berlin")  # fmt: skip
    insert(db, "monitor_maintenance", monitor_id=ids["db"], maintenance_id=weekly)
    once = insert(db, "maintenance", title="Move", description="", strategy="single", user_id=1, active=1,
                  start_date="2030-01-05 10:00:00", end_date="2030-01-05 12:00:00", timezone="UTC")  # fmt: skip
    insert(db, "monitor_maintenance", monitor_id=ids["web"], maintenance_id=once)
    return ids
