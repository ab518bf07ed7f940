"""An Uptime Kuma database as a monitor config: ``monitor import uptime-kuma kuma.db``.

The database is opened read-only and immutable, within bounds (:mod:`monitor.importers.kuma_db`);
Kuma need not run. The 1.23 schema and 2.x's (the same tables with columns added) are both read, each column
only where it exists. Monitors of type http, keyword,
json-query, port, ping, dns and push become targets; a group becomes the ``group`` of the monitors under it
(``Parent / Child``); tags become labels; retries the detectors' ``consecutive``; notifications, status pages
and maintenance windows are read by :mod:`monitor.importers.kuma_pages`. Kuma substitutes nothing: a ``${...}``
in a monitor is written ``$${...}``, text here too (:mod:`monitor.importers.variables`).
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

from monitor.importers import kuma_pages, variables
from monitor.importers.kuma_db import Database, parsed
from monitor.importers.report import Import, Unreadable, admit, ping_token, seconds, target_name

Row = dict[str, Any]
KINDS = ("http", "keyword", "json-query", "port", "ping", "dns", "push")
OPERATORS = {"==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
SIMPLE_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*$")


def read(path: str | Path) -> Import:
    """The conversion of the Kuma database at ``path``; :class:`Unreadable` if it is not one, or is refused
    (:mod:`monitor.importers.kuma_db`)."""
    db = Database(path)
    try:
        if not {"monitor", "notification"} <= db.tables:
            raise Unreadable(f"{path}: not an Uptime Kuma database (no monitor table)")
        imported = convert(db, str(path))
    finally:
        db.close()
    if db.unread_log:
        imported.note(
            f"{path}-wal holds {db.unread_log:,} bytes Kuma wrote since its last checkpoint, not read here (the "
            "database is opened read-only and untouched): stop Kuma, which writes them into the database, and import again"
        )
    return imported


def convert(db: Database, source: str) -> Import:
    imported = Import(source)
    imported.config["targets"] = []
    monitors = db.rows("monitor")
    by_id = {row["id"]: row for row in monitors}
    labels = _labels(db.rows("tag"), db.rows("monitor_tag"))
    receivers = kuma_pages.Receivers(imported, db.rows("notification"), db.rows("monitor_notification"))
    names: dict[int, str] = {}
    taken: set[str] = set()
    for monitor in monitors:
        where = f"monitor {monitor['id']} ({monitor['name']})"
        target = _monitor(imported, where, monitor, by_id)
        if target is None:
            continue
        target["name"] = target_name(monitor["name"], taken)
        if labels.get(monitor["id"]):
            target["labels"] = labels[monitor["id"]]
        receivers.apply(monitor, target)
        if admit(imported, where, target):
            names[monitor["id"]] = target["name"]
    receivers.finish()
    kuma_pages.status_pages(imported, db, names)
    kuma_pages.maintenance(imported, db, names)
    variables.keep_literal(imported, "Uptime Kuma")
    return imported


def _labels(tags: list[Row], links: list[Row]) -> dict[int, dict[str, str]]:
    named = {tag["id"]: str(tag["name"]) for tag in tags}
    found: dict[int, dict[str, str]] = {}
    for link in links:
        if link["tag_id"] in named:
            found.setdefault(link["monitor_id"], {})[named[link["tag_id"]]] = str(link.get("value") or "true")
    return found


def _monitor(imported: Import, where: str, monitor: Row, by_id: dict[int, Row]) -> dict[str, Any] | None:
    kind = monitor.get("type")
    if kind == "group":
        return None  # its monitors carry its name as their group
    if not monitor.get("active"):
        imported.skip(where, "paused in Kuma, so not checked")
        return None
    if kind not in KINDS:
        imported.skip(where, f"{kind} monitors have no counterpart here (http, keyword, json-query, port, ping, dns and push do)")
        return None
    target = _address(imported, where, monitor)
    if target is None:
        return None
    _schedule(imported, where, monitor, target)
    group = _group(monitor, by_id)
    if group:
        target["group"] = group[:128]
    for column, why in SKIPPED.items():
        if monitor.get(column) and (column != "expiry_notification" or str(target.get("url", "")).startswith("https:")):
            imported.skip(f"{where}.{column}", why)
    return target


SKIPPED = {
    "upside_down": "upside-down mode (down counts as up) has no counterpart",
    "description": "a target here has no description (its name, group and labels say what it is)",
    "proxy_id": "checks here go direct, not through a proxy",
    "expiry_notification": "certificate expiry here is a condition that fails the check ([CERTIFICATE_EXPIRATION] > 7d), not a reminder",
}


def _group(monitor: Row, by_id: dict[int, Row]) -> str:
    """The names of the groups above a monitor, outermost first: ``Production / API``."""
    chain: list[str] = []
    parent = by_id.get(monitor.get("parent") or -1)
    while parent is not None and len(chain) < 10:
        chain.insert(0, str(parent["name"]))
        parent = by_id.get(parent.get("parent") or -1)
    return " / ".join(chain)


def _schedule(imported: Import, where: str, monitor: Row, target: dict[str, Any]) -> None:
    interval = float(monitor.get("interval") or 60)
    target["interval"] = seconds(interval)
    timeout = monitor.get("timeout")
    if timeout and target.get("kind") != "heartbeat" and 0 < float(timeout) <= interval * 3:
        target["timeout"] = seconds(float(timeout))
    failures = int(monitor.get("maxretries") or 0) + 1  # Kuma says DOWN when the retries are used up, UP at one pass
    # and only then: no window of failures nor flapping pages in Kuma
    target["detectors"] = {"consecutive": failures, "recover_after": 1, "window": False, "flapping": False}
    if target.get("kind") == "heartbeat":
        del target["detectors"]["consecutive"]  # a missed heartbeat opens at once (monitor/incidents/patterns.py)
    retry = monitor.get("retry_interval")
    if monitor.get("maxretries") and retry and float(retry) != interval:
        imported.skip(f"{where}.retry_interval", f"a target here is checked every interval ({seconds(interval)}), retrying or not")


def _address(imported: Import, where: str, monitor: Row) -> dict[str, Any] | None:
    kind, host = monitor["type"], str(monitor.get("hostname") or "")
    if kind in ("http", "keyword", "json-query"):
        return _http(imported, where, monitor)
    if kind == "port":
        return {"url": f"tcp://{host}:{monitor.get('port')}"}
    if kind == "ping":
        target: dict[str, Any] = {"url": f"icmp://{host}"}
        if monitor.get("ping_count"):
            target["icmp"] = {"count": max(1, min(20, int(monitor["ping_count"])))}
        if monitor.get("packet_size") not in (None, 56):
            imported.skip(f"{where}.packet_size", "echo requests here have the system's size")
        return target
    if kind == "dns":
        return _dns(imported, where, monitor)
    return _push(imported, where, monitor)


def _http(imported: Import, where: str, monitor: Row) -> dict[str, Any] | None:
    target: dict[str, Any] = {"url": str(monitor.get("url") or "")}
    method = str(monitor.get("method") or "GET").upper()
    if method != "GET":
        target["method"] = method
    headers = _json(imported, f"{where}.headers", monitor.get("headers")) or {}
    if monitor.get("basic_auth_user") and monitor.get("auth_method") in (None, "", "basic"):
        pair = f"{monitor['basic_auth_user']}:{monitor.get('basic_auth_pass') or ''}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    elif monitor.get("auth_method") not in (None, "", "basic"):
        imported.skip(f"{where}.auth_method", f"{monitor['auth_method']} authentication has no counterpart (basic and headers do)")
    if isinstance(headers, dict) and headers:
        target["headers"] = {str(key): str(value) for key, value in headers.items()}
    if monitor.get("body"):
        target["body"] = str(monitor["body"])
    statuses = _statuses(_json(imported, f"{where}.accepted_statuscodes_json", monitor.get("accepted_statuscodes_json")) or [])
    target["expect"] = {"status": statuses} if statuses else {}
    if monitor.get("maxredirects") is not None:
        target["max_redirects"] = max(0, min(50, int(monitor["maxredirects"])))
    if monitor.get("ignore_tls") and target["url"].lower().startswith("https:"):
        target["verify_tls"] = False
    if monitor["type"] == "keyword" and monitor.get("keyword"):
        target["expect"]["body_not_contains" if monitor.get("invert_keyword") else "body_contains"] = str(monitor["keyword"])
    if monitor["type"] == "json-query" and not _json_query(imported, where, monitor, target):
        return None
    if not target["expect"]:
        del target["expect"]
    return target


def _statuses(accepted: list[Any]) -> list[Any]:
    """Kuma's accepted codes (``200-299``, ``301``) as codes and classes (``2xx``)."""
    found: list[Any] = []
    for item in accepted:
        low, _, high = str(item).partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            continue
        first, last = int(low), int(high or low)
        for code in range(max(100, first), min(599, last) + 1):
            if code % 100 == 0 and code + 99 <= last:
                found.append(f"{code // 100}xx")
            elif f"{code // 100}xx" not in found:
                found.append(code)
    return found


def _json_query(imported: Import, where: str, monitor: Row, target: dict[str, Any]) -> bool:
    """Kuma's JSONata query and expected value, as a [BODY] condition where the query is a plain path."""
    query = str(monitor.get("json_path") or "").strip().removeprefix("$").removeprefix(".")
    operator = OPERATORS.get(str(monitor.get("json_path_operator") or "=="))
    value = str(monitor.get("expected_value") or "")
    if not SIMPLE_PATH.match(query) or operator is None:
        imported.skip(f"{where}.json_path", f"{monitor.get('json_path')!r}: only a plain path (a.b[0].c) compared with ==, !=, <, >")
        return False
    right = value if re.fullmatch(r"[A-Za-z0-9_.-]+", value) else json.dumps(value)
    target["conditions"] = [f"[BODY].{query} {operator} {right}"]
    return True


def _dns(imported: Import, where: str, monitor: Row) -> dict[str, Any]:
    server = str(monitor.get("dns_resolve_server") or "1.1.1.1").split(",")[0].strip()
    port = monitor.get("port")
    if port and int(port) != 53:
        server = f"[{server}]:{port}" if ":" in server else f"{server}:{port}"
    if monitor.get("conditions") not in (None, "", "[]"):
        imported.skip(f"{where}.conditions", "conditions on a dns monitor's answers: any answer passes here")
    return {"url": f"dns:{monitor.get('hostname')}/{monitor.get('dns_resolve_type') or 'A'}", "dns": {"server": server}}


def _push(imported: Import, where: str, monitor: Row) -> dict[str, Any]:
    """A push monitor: a heartbeat; late by the retries it allowed (at least a minute)."""
    name = str(monitor["name"])
    token = ping_token(imported, where, monitor.get("push_token"), name, "/api/push/<token>")
    grace = max(60.0, float(monitor.get("retry_interval") or 60) * int(monitor.get("maxretries") or 0))
    period = seconds(float(monitor.get("interval") or 60))
    return {"kind": "heartbeat", "heartbeat": {"token": token, "period": period, "grace": seconds(grace)}}


def _json(imported: Import, where: str, text: Any) -> Any:
    value = parsed(text)
    if value is None and text not in (None, "", "null"):
        imported.skip(where, "not JSON, so not read")
    return value
