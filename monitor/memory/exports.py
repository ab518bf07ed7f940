"""The memory export file: what each entry may hold, checked before anything is written.

``monitor memory export`` writes it and ``monitor memory import`` reads it::

    {"format": "monitor-memory", "version": 1,
     "incidents": [...], "agent_runs": [...], "agent_steps": [...],
     "memory": [{"key": "working_memory", "value": "<a JSON list of steps>", "updated_at": 1.7e9}],
     "incident_links": [{"incident_id": 7, "other_id": 3, "verdict": "same", "signal": "…", "actor": "cli", "at": 1.7e9}]}

:func:`check` refuses the first bad entry with its path in the file
(``incidents[3].opened_at: must be a finite number ..., not "yesterday"``), so a
refused file changes nothing: so are text longer than a field may be (a working-memory step's goes
into every request), tool-call arguments nested deeper than MAX_DEPTH and lone surrogates
(:func:`scan`). Fields this version does not know are ignored.
:func:`check_step` is the same test for one working-memory step; a start uses
it to skip steps it cannot restore.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

FORMAT, VERSION = "monitor-memory", 1
WORKING_MEMORY = "working_memory"
SQLITE_INT = 2**63
MAX_NUMBER = 253_402_300_799  # the last second of the year 9999: a page can still show it as a date
MAX_DEPTH = 32  # levels of nesting in a tool call's arguments (the model's own are two or three)
MAX_TEXT = 100_000  # characters in a stored field (observations are kept to memory.max_observation)
MAX_STEP_TEXT = 20_000  # characters in a working-memory step's field: each goes into every request
MAX_SUMMARY = 4_000  # characters in the working-memory summary (12 lines of at most 160 when compacted)


def _integer(value: Any) -> bool:
    """An integer in SQLite's range; not a JSON true or false (Python's bool is an int; PostgreSQL's is not)."""
    return isinstance(value, int) and not isinstance(value, bool) and -SQLITE_INT <= value < SQLITE_INT


def _number(value: Any) -> bool:
    return (_integer(value) or isinstance(value, float) and math.isfinite(value)) and abs(value) <= MAX_NUMBER


KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "text": (lambda v: isinstance(v, str), "text"),
    "integer": (_integer, "an integer"),
    "number": (_number, f"a finite number no larger than {MAX_NUMBER:,} (the year 9999 in seconds)"),
    "flag": (lambda v: isinstance(v, bool) or v in (0, 1) and _integer(v), "true, false, 0 or 1"),
    "scalar": (lambda v: isinstance(v, str) or _number(v), "text or a finite number"),
    "status": (lambda v: v in ("open", "resolved"), '"open" or "resolved"'),
    "verdict": (lambda v: v in ("same", "not"), '"same" or "not"'),
    "list": (lambda v: isinstance(v, list), "a list"),
    "arguments": (lambda v: isinstance(v, (dict, str)), "an object or text"),
    "tokens": (lambda v: isinstance(v, list) and len(v) == 2 and all(_integer(n) for n in v), "two integers [input, output]"),
}

_TEXT = "text"
ROWS: dict[str, dict[str, str]] = {  # a trailing "!" marks a field that must be present and not null
    "incidents": {
        "id": "integer",
        "target": "text!",
        "pattern": "text!",
        "status": "status",
        "opened_at": "number!",
        "closed_at": "number",
        "updated_at": "number",
        "silenced": "flag",
        "related_incident": "integer",
        **dict.fromkeys(
            [
                "summary",
                "diagnosis",
                "resolution",
                "severity",
                "suspected_cause",
                "notes",
                "agent_state",
                "root_cause",
                "confidence",
                "claim",
            ],
            _TEXT,
        ),
    },
    "agent_runs": {
        "id": "integer",
        "incident_id": "integer",
        "task": "text!",
        "started_at": "number!",
        "ended_at": "number",
        "input_tokens": "integer",
        "output_tokens": "integer",
        "related_incident": "integer",
        **dict.fromkeys(["target", "model", "state", "final_answer", "error", "diagnosis", "root_cause", "confidence", "claim"], _TEXT),
    },
    "agent_steps": {
        "id": "integer",
        "run_id": "integer!",
        "step_number": "integer!",
        "kind": "text!",
        "started_at": "number",
        "duration": "number",
        "input_tokens": "integer",
        "output_tokens": "integer",
        "is_final": "flag",
        "tool_ok": "flag",
        "tool_seconds": "number",
        **dict.fromkeys(["model_output", "tool_calls", "observations", "error"], _TEXT),
    },
    "memory": {"key": "text!", "value": "text!", "updated_at": "number"},
    "incident_links": {  # ids are the dumped incidents' (an import follows them to their ids there)
        "incident_id": "integer!",
        "other_id": "integer!",
        "verdict": "verdict!",
        "signal": "text!",
        "actor": "text!",
        "note": "text",
        "at": "number!",
    },
}

STEPS: dict[str, dict[str, str]] = {
    "summary": {"text": "text!", "folded": "integer"},
    "task": {"task": "text!"},
    "action": {
        "step_number": "integer",
        "start": "number",
        "end": "number",
        "tool_calls": "list",
        "model_output": "text",
        "observations": "text",
        "error": "text",
        "is_final_answer": "flag",
        "action_output": "scalar",
        "tokens": "tokens",
    },
}
TOOL_CALL = {"name": "text!", "id": "text", "arguments": "arguments"}


def shown(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_fields(row: Any, fields: dict[str, str], where: str, limit: int | None = MAX_TEXT) -> None:
    """Raise ``ValueError("where.field: ...")`` at the first field of ``row`` that is not of its kind, holds
    text longer than ``limit`` characters or what :func:`scan` refuses (``limit`` None: neither is tested,
    the caller checks what the fields hold item by item)."""
    if not isinstance(row, dict):
        raise ValueError(f"{where}: must be an object, not {shown(row)}")
    for name, kind in fields.items():
        test, what = KINDS[kind.rstrip("!")]
        value = row.get(name)
        if value is None:
            if kind.endswith("!"):
                raise ValueError(f"{where}.{name}: missing (must be {what})")
        elif not test(value):
            raise ValueError(f"{where}.{name}: must be {what}, not {shown(value)}")
        elif limit is None:
            continue
        elif isinstance(value, str) and len(value) > limit:
            raise ValueError(f"{where}.{name}: {len(value):,} characters, at most {limit:,}{LIMITS.get(limit, '')}")
        scan(value, f"{where}.{name}")


LIMITS = {MAX_SUMMARY: " in a summary", MAX_STEP_TEXT: " in a step"}


def scan(value: Any, where: str) -> None:
    """Raise ``ValueError("where: ...")`` if ``value`` holds what no page, store or request should: nesting deeper
    than MAX_DEPTH (also in JSON text, as a step's tool calls are stored) or a lone surrogate, which UTF-8
    cannot encode."""
    if isinstance(value, str) and value.startswith(("[", "{")):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            pass
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            _encodable(item, where)
        elif isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                raise ValueError(f"{where}: nested more than {MAX_DEPTH} levels deep")
            for key in item if isinstance(item, dict) else ():
                _encodable(str(key), where)
            stack += [(child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)]


def _encodable(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{where}: a lone surrogate (\\u{ord(text[exc.start]):04x}) at character {exc.start}: not text UTF-8 can hold"
        ) from None


def check_step(item: Any, where: str) -> None:
    """One working-memory step as :func:`monitor.memory.working.to_json` writes it."""
    kind = item.get("type") if isinstance(item, dict) else None
    fields = STEPS.get(kind) if isinstance(kind, str) else None
    if fields is None:
        if not isinstance(item, dict):
            raise ValueError(f"{where}: must be an object, not {shown(item)}")
        raise ValueError(f"{where}.type: unknown working-memory step type {kind!r} (one of: {', '.join(STEPS)})")
    calls = item.get("tool_calls")
    for n, call in enumerate(calls if isinstance(calls, list) else []):  # first: a refusal names the call
        check_fields(call, TOOL_CALL, f"{where}.tool_calls[{n}]", MAX_STEP_TEXT)
    check_fields(item, fields, where, MAX_SUMMARY if kind == "summary" else MAX_STEP_TEXT)


def working_steps(value: str, where: str) -> list[dict[str, Any]]:
    """A stored working memory (JSON text): its steps, each checked."""
    try:
        steps = json.loads(value)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{where}: not JSON ({exc})") from None
    if not isinstance(steps, list):
        raise ValueError(f"{where}: must be a JSON list of steps, not {shown(steps)}")
    for n, step in enumerate(steps):
        check_step(step, f"{where}[{n}]")
    return steps


def check(data: Any) -> dict[str, list[dict[str, Any]]]:
    """The export's tables, every entry checked; ``ValueError("where: what")`` at the first bad one."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f'not a monitor memory export (no "format": "{FORMAT}")')
    if data.get("version", VERSION) != VERSION:
        raise ValueError(f"version: {shown(data['version'])} is not one this monitor reads ({VERSION})")
    tables: dict[str, list[dict[str, Any]]] = {}
    for table, fields in ROWS.items():
        rows = data.get(table) or []
        if not isinstance(rows, list):
            raise ValueError(f"{table}: must be a list of objects, not {shown(rows)}")
        for n, row in enumerate(rows):
            check_fields(row, fields, f"{table}[{n}]", None if table == "memory" else MAX_TEXT)
        tables[table] = rows
    for n, row in enumerate(tables["memory"]):
        if row["key"] != WORKING_MEMORY:
            raise ValueError(f"memory[{n}].key: unknown key {shown(row['key'])} (known: {WORKING_MEMORY})")
        working_steps(row["value"], f"memory[{n}].value")
    return tables
