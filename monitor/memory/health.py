"""What a target's own health document says of each component it checks, and the past incidents it rules out.

Many health endpoints answer with a document of per-component verdicts: the IETF draft's
``{"status": "fail", "checks": [{"name": "postgres", "status": "pass"}, ...]}``, Spring Boot's
``{"status": "DOWN", "components": {"db": {"status": "UP"}}}``, a map of verdicts
(``{"checks": {"db": "ok", "redis": "error: READONLY"}}``), and their kin. When the answer says a
component passes now, a past incident that blamed that component alone is another failure than this one,
however alike the two read (the same target, the same ``bad_content``, the same words "status fail").

    verdicts(answer)            component -> passes, from the first JSON document in the answer
    blamed_passing(answer, s)   "blames postgres, which passes now" when symptom ``s`` names components the
                                answer judges, and every one it names passes; else ""
"""

from __future__ import annotations

import json
import re
from typing import Any

from monitor.core.results import PASSING  # the words the HTTP check orders its excerpt by

FAILING = frozenset({"fail", "failed", "failing", "down", "unhealthy", "error", "critical", "red"})
VERDICT = re.compile(rf"({'|'.join(sorted(PASSING | FAILING))})\b")


def verdicts(answer: str) -> dict[str, bool]:
    """Each component the answer's health document judges, lower-cased, and whether it passes; {} without one."""
    starts = [i for i in (answer.find("{"), answer.find("[")) if i >= 0]
    if not starts:
        return {}
    try:
        document = json.loads(answer[min(starts) :])
    except ValueError:
        return {}
    found: dict[str, bool] = {}
    _walk(document, None, found)
    return found


def _walk(node: Any, key: str | None, found: dict[str, bool]) -> None:
    """A node with a ``status`` of a known verdict judges the component it is named for (its ``name``, else
    the key it is under); the document's own status, under no name, judges the whole."""
    if isinstance(node, list):
        for item in node:
            _walk(item, None, found)
    elif isinstance(node, dict):
        name = node["name"] if isinstance(node.get("name"), str) else key
        status = node.get("status")
        if name and isinstance(status, str) and status.lower() in PASSING | FAILING:
            found[name.lower()] = status.lower() in PASSING
        for child_key, child in node.items():
            _walk(child, child_key if isinstance(child, dict) else None, found)
        found.update(_named_verdicts(node))


def _named_verdicts(node: dict[str, Any]) -> dict[str, bool]:
    """A map of components to verdict strings (``{"postgres": "ok", "redis": "error: READONLY ..."}``): two
    or more keys besides ``status`` whose value starts with a verdict."""
    said = {
        key.lower(): VERDICT.match(value.strip().lower())
        for key, value in node.items()
        if isinstance(value, str) and key.lower() != "status"
    }
    judged = {key: match.group(1) in PASSING for key, match in said.items() if match}
    return judged if len(judged) >= 2 else {}


def blamed_passing(answer: str, symptom: str) -> str:
    """How a past incident's ``symptom`` blames only components this answer says pass now; "" otherwise."""
    judged = verdicts(answer)
    low = symptom.lower()
    named = sorted(n for n in judged if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", low))
    if named and all(judged[n] for n in named):
        return f"blames {', '.join(named)}, which {'pass' if len(named) > 1 else 'passes'} now"
    return ""
