"""What one check of one target found: a :class:`Result`, whatever the kind of check.

A check never raises: a target that is down is a Result with ``ok`` false, an error kind
(:mod:`monitor.core.errors`) and a severity::

    ok          the target passed every condition
    warning     up, but a soft condition failed (latency, certificate expiry)
    critical    down, or a hard condition failed
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal

Severity = Literal["ok", "warning", "critical"]
OK: Final = "ok"
WARNING: Final = "warning"
CRITICAL: Final = "critical"
SEVERITIES: tuple[Severity, ...] = (OK, WARNING, CRITICAL)

# Where an HTTP check's time goes, in milliseconds (Result.phases); other kinds time their own phases.
PHASES = ("dns", "connect", "tls", "first_byte", "body")

# The verdicts a health document gives a component that passes (``{"db": {"status": "UP"}}``): the HTTP check keeps
# failing components first in its excerpt, and memory reads the same words in it.
PASSING = frozenset({"up", "pass", "passing", "ok", "healthy", "green"})


@dataclass(frozen=True)
class Result:
    """What one check of one target found."""

    name: str
    url: str
    ok: bool
    severity: str
    status_code: int | None
    latency_ms: float
    error: str | None
    detail: str
    checked_at: float
    cert_expires_at: float | None = None
    # What a failing target answered: status line, a few headers, the start of the body. Not stored.
    excerpt: str | None = None
    # Milliseconds per phase (PHASES for http): where the time went. Not stored.
    phases: dict[str, float] | None = None
    # What was checked: a kind in the checks registry (http, tcp, tls, dns, heartbeat). Not stored: the config says it.
    kind: str = "http"
    # Where it was checked from: the replica's ``location`` (None: it has none). Stored.
    location: str | None = None
    # What /probe reports besides, in blackbox_exporter's series. Not stored. The IP version of the address the check
    # connected (or tried) to, 4 or 6 (None: none resolved); an HTTP answer's version (1.1) and Content-Length (-1: none).
    ip_version: int | None = None
    http_version: float | None = None
    content_length: int | None = None

    @classmethod
    def judged(
        cls, name: str, url: str, severity: str, error: str | None, detail: str, *, seconds: float, at: float, kind: str = "http"
    ) -> Result:
        """What a check of ``kind`` found at ``at``, in ``seconds``: ``ok`` read off its severity, its latency in
        milliseconds to the microsecond; what else its kind knows is added with :func:`dataclasses.replace`."""
        return cls(name, url, severity == OK, severity, None, round(seconds * 1000, 3), error, detail, at, kind=kind)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def exit_code(results: Iterable[Result]) -> int:
    """Nagios convention: 0 OK, 1 WARNING, 2 CRITICAL."""
    severities = {r.severity for r in results}
    if CRITICAL in severities:
        return 2
    return 1 if WARNING in severities else 0
