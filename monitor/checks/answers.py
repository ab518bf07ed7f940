"""An HTTP answer, judged: ``expect`` and ``conditions`` applied to its status, body, latency and certificate, and
the bounded excerpt of it a failed check keeps (what the agent reads: data, never instructions)."""

from __future__ import annotations

import json
from typing import Any

from monitor.checks import conditions
from monitor.config import Target
from monitor.core import errors
from monitor.core.results import CRITICAL, OK, PASSING, WARNING

Headers = list[tuple[bytes, bytes]]
EXCERPT_HEADERS = (b"content-type", b"server", b"retry-after", b"location", b"www-authenticate")
EXCERPT_BODY = 512  # a Java exception's chain of causes with the host it names (Lettuce, Hikari) is 200-400 bytes
QUOTE_CHARS = 200  # of target-controlled text in an error: quoted in the excerpt, never in ``detail``


def json_field(document: Any, path: str) -> Any:
    """Follow ``a.b.0.c`` into parsed JSON; raises KeyError when a step is missing."""
    node = document
    for part in path.split(".") if path else []:
        if isinstance(node, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(node) <= index < len(node):
                raise KeyError(path)
            node = node[index]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KeyError(path)
    return node


def quote(text: str) -> str:
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1] + "…"


def evaluate(
    target: Target, status: int, body: bytes, latency: float, cert: float | None, now: float
) -> tuple[str, str | None, str, str | None]:
    """Apply ``expect`` and ``conditions``: returns (severity, error kind, detail, the target's text it quotes)."""
    verdict = _expected(target, status, body, latency, cert, now)
    if not target.conditions or verdict[1] == errors.STATUS:  # a wrong status: its body's conditions add noise
        return verdict
    seen = conditions.Seen(latency_ms=latency * 1000, status=status, body=body, cert_expires_at=cert, now=now)
    return conditions.merged(verdict, conditions.failures(target.conditions, seen))


def _status_is_judged(target: Target) -> bool:
    """Whether ``expect.status`` applies: written, or the default when no condition names [STATUS]."""
    return "status" in target.expect.model_fields_set or not any("STATUS" in condition.placeholders for condition in target.conditions)


def _expected(
    target: Target, status: int, body: bytes, latency: float, cert: float | None, now: float
) -> tuple[str, str | None, str, str | None]:
    """Apply ``expect``: returns (severity, error kind, detail, the target's text it quotes)."""
    expect = target.expect
    if status not in expect.status and _status_is_judged(target):
        return CRITICAL, errors.STATUS, f"status {status} not in expected codes", None
    text = body.decode("utf-8", "replace") if expect.body_contains or expect.body_not_contains else ""
    if expect.body_contains is not None and expect.body_contains not in text:
        return CRITICAL, errors.CONDITION, f"body does not contain {expect.body_contains!r}", None
    if expect.body_not_contains is not None and expect.body_not_contains in text:
        return CRITICAL, errors.CONDITION, f"body contains {expect.body_not_contains!r}", None
    if expect.json_ is not None:
        try:
            actual = json_field(json.loads(body), expect.json_.path)
        except (ValueError, KeyError):
            return CRITICAL, errors.CONDITION, f"JSON field {expect.json_.path!r} is missing or body is not JSON", None
        except RecursionError:  # a hostile body: deeper than the parser goes, so no field can be read
            return CRITICAL, errors.CONDITION, "body is JSON nested too deeply to read", None
        if actual != expect.json_.equals:  # the value is the target's text: quoted, not in the detail
            return (
                CRITICAL,
                errors.CONDITION,
                f"JSON field {expect.json_.path!r} is not {expect.json_.equals!r}",
                (f"JSON field {expect.json_.path!r} is {quote(repr(actual))}"),
            )
    if expect.max_latency is not None and latency > expect.max_latency:
        return WARNING, errors.CONDITION, f"latency {latency * 1000:.0f} ms over {expect.max_latency * 1000:.0f} ms", None
    if expect.cert_min_days is not None and cert is not None:
        days = (cert - now) / 86400
        if days < expect.cert_min_days:
            return WARNING, errors.CONDITION, f"certificate expires in {days:.1f} days (minimum {expect.cert_min_days:g})", None
    return OK, None, f"status {status}", None


def excerpt(status: int, headers: Headers, body: bytes) -> str:
    """A bounded look at what the target answered (data the agent reads, never instructions)."""
    shown = [f"{k.decode('latin-1')}: {v.decode('latin-1')[:120]}" for k, v in headers if k.lower() in EXCERPT_HEADERS]
    body = focused(body)
    text = body[:EXCERPT_BODY].decode("utf-8", "replace")
    more = f" [... {len(body) - EXCERPT_BODY} more bytes]" if len(body) > EXCERPT_BODY else ""
    return "\n".join([f"HTTP {status}", *shown, "", text + more]).strip()


def focused(body: bytes) -> bytes:
    """A health document too long to show whole, with the details of passing components left out: the
    failing one's error is what matters, and it is often last (Spring Boot lists ``db``, ``diskSpace``,
    then ``ldap`` with its error). Each component's verdict stays. Any other body is as it came."""
    if len(body) <= EXCERPT_BODY or body.lstrip()[:1] not in (b"{", b"["):
        return body
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth: as it came
        return body
    return json.dumps(_without_passing_details(document, root=True), separators=(",", ":"), ensure_ascii=False).encode()


def _without_passing_details(node: Any, *, root: bool = False) -> Any:
    """``node`` with each passing component (not the document itself: its parts may fail) reduced to its
    plain fields, and listed after the failing ones, whose errors the excerpt's bytes are for."""
    if isinstance(node, list):
        return [_without_passing_details(item) for item in sorted(node, key=_passing)]
    if not isinstance(node, dict):
        return node
    if not root and _passing(node):
        return {key: value for key, value in node.items() if not isinstance(value, (dict, list))}
    ordered = sorted(node.items(), key=lambda item: _passing(item[1]))
    return {key: _without_passing_details(value) for key, value in ordered}


def _passing(node: Any) -> bool:
    """Whether ``node`` is a component whose own verdict passes (``{"status": "UP", ...}``)."""
    status = node.get("status") if isinstance(node, dict) else None
    return isinstance(status, str) and status.lower() in PASSING
