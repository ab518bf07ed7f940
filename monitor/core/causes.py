"""Root causes: the closed set a diagnosis picks from (record_diagnosis, the eval, the builtin model).

:func:`root_cause_of` reads one result literally (no memory); :func:`read_cause` reads a target's
recent results and the detectors' pattern.
"""

from __future__ import annotations

from collections.abc import Sequence

from monitor.core import errors
from monitor.core.results import Checked

ROOT_CAUSES = {
    "server_error": "the application answers with 5xx error statuses",
    "client_error": "the endpoint answers 4xx: moved, removed, or its auth changed",
    "timeout": "the service hangs or is overloaded: checks time out",
    "connection_refused": "the process is down or not listening on its port",
    "connection_reset": "the process crashes or something drops connections",
    "dns_failure": "the host name does not resolve",
    "tls_error": "TLS handshake or certificate problem: expired, wrong name or untrusted",
    "redirect_loop": "redirects go round in a loop",
    "bad_content": "it answers, but the body or a JSON health field is wrong",
    "slow_response": "it answers correctly, but far slower than its baseline",
    "flapping": "it keeps alternating between up and down",
    "job_missing": "a job that pings (cron, worker, backup) stopped pinging: it hangs, crashed or never started",
    "job_failed": "the job ran and reported its own failure",
    "recovered": "the failure did not last: the target passes again",
    "unknown": "the evidence points to no single cause",
}
NOT_ACTIONABLE = frozenset({"recovered"})
# Root causes that name one failure as different checks see it: a service's own error is a 5xx to an HTTP check, and
# to a TCP check (no status there) or a body check a reply that is not the expected one ("421 ... insufficient system
# storage" where "220" was expected). A past incident filed under one applies under the other.
ALIKE = (frozenset({"server_error", "bad_content"}),)
ERROR_CAUSES = {
    errors.TIMEOUT: "timeout",
    errors.REFUSED: "connection_refused",
    errors.RESET: "connection_reset",
    errors.DNS: "dns_failure",
    errors.TLS: "tls_error",
    errors.REDIRECTS: "redirect_loop",
    errors.BODY_TOO_LARGE: "bad_content",
    errors.PROTOCOL: "unknown",
    errors.CONNECTION: "unknown",
    errors.TCP_REFUSED: "connection_refused",
    errors.TCP_TIMEOUT: "timeout",
    errors.TCP_UNEXPECTED_REPLY: "bad_content",
    errors.CERT_EXPIRED: "tls_error",
    errors.CERT_EXPIRING: "tls_error",
    errors.CERT_UNTRUSTED: "tls_error",
    errors.CERT_MISMATCH: "tls_error",
    errors.DNS_NXDOMAIN: "dns_failure",
    errors.DNS_SERVFAIL: "dns_failure",
    errors.DNS_TIMEOUT: "dns_failure",
    errors.DNS_UNEXPECTED: "dns_failure",
    errors.DNS_ERROR: "dns_failure",
    errors.HEARTBEAT_MISSED: "job_missing",
    errors.HEARTBEAT_FAILED: "job_failed",
}


def alike(one: str | None, other: str | None) -> bool:
    """Whether two root causes can name one failure: the same, or one failure as two kinds of check see it (ALIKE)."""
    return one == other or any({one, other} <= group for group in ALIKE)


def root_cause_of(error: str | None, status: int | None = None, detail: str = "", pattern: str = "") -> str:
    """The root cause a check result and the detectors' pattern point to, read literally (no memory)."""
    if "flapping" in pattern:
        return "flapping"
    if "latency_drift" in pattern:
        return "slow_response"
    if error is None:
        return "recovered"
    if error == errors.STATUS:
        return "server_error" if (status or 0) >= 500 else "client_error"
    if error == errors.CONDITION:
        return _condition_cause(status, detail)
    return ERROR_CAUSES.get(error, "unknown")


def _condition_cause(status: int | None, detail: str) -> str:
    """What failed conditions (``; ``-joined, as the check writes them) point to: a failed ``[STATUS]`` is the
    status's cause, conditions on times alone are slowness or the certificate, the rest the content."""
    failed = [part.strip() for part in detail.split("; ")]
    if (status or 0) >= 400 and any(part.startswith("[STATUS]") for part in failed):
        return "server_error" if (status or 0) >= 500 else "client_error"
    if all(part.startswith(("[RESPONSE_TIME]", "latency ")) for part in failed):
        return "slow_response"
    if any(part.startswith(("[CERTIFICATE_EXPIRATION]", "certificate ")) for part in failed):
        return "tls_error"
    return "bad_content"


def read_cause(rows: Sequence[Checked], pattern: str) -> str | None:
    """The root cause a target's recent results (newest first) and the detectors' pattern point to.

    A literal reading, no memory: a passing latest check reads as recovered, unless the failures are
    scattered among passes (the window detector), when it reads as the latest failure's cause.
    """
    if not rows:
        return None
    if "flapping" in pattern or "latency_drift" in pattern:
        return root_cause_of(None, pattern=pattern)
    failing = next((r for r in rows if not r.ok), None)
    if rows[0].ok and ("window" not in pattern or failing is None):
        return "recovered"
    row = rows[0] if not rows[0].ok else failing
    assert row is not None
    return root_cause_of(row.error, row.status_code, row.detail or "", pattern)
