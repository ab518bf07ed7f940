"""What one check of one target found: a :class:`Result`, whatever the kind of check.

A check never raises: a target that is down is a Result with ``ok`` false, an error kind
(:mod:`monitor.core.errors`) and a severity::

    ok          the target passed every condition
    warning     up, but a soft condition failed (latency, certificate expiry)
    critical    down, or a hard condition failed

Once stored, a result is read back as a :class:`StoredResult` (its row, made in one place:
:mod:`monitor.store.rows`; made JSON in one: :meth:`StoredResult.to_json`). What reads either, a state or a
detector, takes a :class:`Checked` (or a :class:`Seen`, what a state needs). Uptime and latency over a time
window are read as an :class:`Uptime` and a :class:`Slice` each.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Final, Literal, Protocol

from monitor.core.rows import Row

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


class Seen(Protocol):
    """What a target's state is read from (:func:`monitor.core.state.state_of`): when a check found what, with
    which error kind; a :class:`Result`, a :class:`StoredResult` or a :class:`Latest` each."""

    @property
    def checked_at(self) -> float: ...
    @property
    def severity(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...


class Checked(Seen, Protocol):
    """A check as the detectors, causes and evidence read it: a live :class:`Result`, a :class:`StoredResult`, or
    an older row a window keeps (:class:`monitor.incidents.history.History`)."""

    @property
    def ok(self) -> int: ...  # a Result's bool, a row's 0 or 1
    @property
    def status_code(self) -> int | None: ...
    @property
    def latency_ms(self) -> float | None: ...
    @property
    def detail(self) -> str | None: ...


@dataclass(frozen=True)
class StoredResult(Row):
    """One result as stored. Fields are the ``results`` columns, in their order, so :meth:`to_json` is the row as
    the API and MCP have shown it (what is not stored of a :class:`Result`, its excerpt and kind, is not here)."""

    id: int
    target: str
    checked_at: float
    ok: int  # 1: every condition met
    status_code: int | None
    latency_ms: float | None
    error: str | None
    detail: str | None
    severity: str | None
    cert_expires_at: float | None = None
    phases: str | None = None  # milliseconds per phase, as JSON (Result.phases)
    location: str | None = None  # where it was checked from (None: a replica without one)

    def phase_times(self) -> dict[str, float]:
        """Milliseconds per phase, in :data:`PHASES` order ({} when it has none)."""
        try:
            phases = json.loads(self.phases or "{}")
        except ValueError:
            return {}
        return {p: float(phases[p]) for p in PHASES if isinstance(phases, dict) and isinstance(phases.get(p), (int, float))}


@dataclass(frozen=True)
class Latest:
    """A target's newest result, as much of it as its state is read from (a fleet's, at half the cost)."""

    checked_at: float
    ok: int
    severity: str | None
    error: str | None


@dataclass(frozen=True)
class Uptime(Row):
    """A target's checks over a time window: how many, how many passed (every condition met), how many found it
    up (a warning is up), and the share up (None: no checks)."""

    checks: int
    passed: int
    up: int
    ratio: float | None


@dataclass(frozen=True)
class Slice:
    """One slice of a target's history (``bucket``: its place, from 0): checks, failures (checks that found it
    down), mean and max latency in milliseconds (None: no latency)."""

    bucket: int
    checks: int
    failures: int
    mean_ms: float | None
    max_ms: float | None


def exit_code(results: Iterable[Result]) -> int:
    """Nagios convention: 0 OK, 1 WARNING, 2 CRITICAL."""
    severities = {r.severity for r in results}
    if CRITICAL in severities:
        return 2
    return 1 if WARNING in severities else 0
