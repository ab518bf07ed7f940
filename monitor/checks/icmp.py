"""The icmp check kind, all of it: ``icmp.count`` echo requests to ``icmp://host``, through icmplib's unprivileged
sockets. Its address, its ``icmp:`` settings, its error kinds and its /probe series are declared here
(:data:`KIND`); the config, /probe and the metrics read them from :mod:`monitor.core.kinds`.

An unprivileged ICMP socket (``SOCK_DGRAM``, as ``ping`` uses without setuid) needs no root and no
``CAP_NET_RAW``, but Linux grants it only to the groups in ``net.ipv4.ping_group_range``; where this
process's group is outside it, the check is a failed Result that names the sysctl, not a crash.

Error kinds (besides ``dns``, ``timeout``)::

    icmp_no_reply       no echo reply to any request
    icmp_packet_loss    replies, but more than ``icmp.max_loss`` of them lost (a warning)
    icmp_forbidden      the kernel allows no unprivileged ICMP socket to this process's group

``latency_ms`` is the average round trip; ``phases`` has ``dns`` and ``rtt``.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from pydantic import Field

from monitor.checks import network, probing
from monitor.checks.probing import Found, Probe
from monitor.config.addresses import is_host
from monitor.config.errors import shown
from monitor.config.targets import Target
from monitor.config.values import Duration, Strict
from monitor.core import errors, kinds
from monitor.core.results import OK, WARNING, Result

SPEC = probing.Spec(("dns", "rtt"), "echo reply")
SYSCTL = "/proc/sys/net/ipv4/ping_group_range"
ICMP_NO_REPLY = "icmp_no_reply"
ICMP_LOSS = "icmp_packet_loss"
ICMP_FORBIDDEN = "icmp_forbidden"


class IcmpSettings(Strict):
    """An ``icmp://host`` target: ``count`` echo requests, ``interval`` apart; up if any is answered."""

    count: int = Field(default=3, ge=1, le=20)
    interval: Duration = 0.2
    # a share of lost replies (0 to 1) past which an answering host is a WARNING; 1: never
    max_loss: float = Field(default=0.5, ge=0, le=1)


def icmp_host(value: str) -> str:
    """``icmp://host`` -> ``host`` (a name or an address; no port, no path)."""
    try:
        parts = urlsplit(value)
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if (
        not host
        or port is not None
        or not is_host(host)
        or any(c.isspace() for c in value)
        or (parts.path not in ("", "/") or parts.query or "@" in parts.netloc)
    ):
        raise ValueError(f"{shown(value)} is not an icmp address: write it icmp://host (no port)")
    return host


def _rtt(result: Result) -> dict[str, float]:
    return {"rtt": (result.phases or {}).get("rtt", 0.0) / 1000}


async def _ping(target: Target, state: Probe, dialer: network.Dialer) -> Result:
    import icmplib

    settings = target.settings_as(IcmpSettings)
    host = icmp_host(target.url).strip("[]")
    address = state.address = (await state.timed("dns", dialer.addresses(host, None)))[0]
    each = max(0.05, (target.timeout - settings.interval * (settings.count - 1)) / settings.count)
    try:
        answer = await icmplib.async_ping(address, count=settings.count, interval=settings.interval, timeout=each, privileged=False)
    except icmplib.SocketPermissionError:
        raise Found(ICMP_FORBIDDEN, forbidden()) from None
    except icmplib.ICMPLibError as exc:
        raise Found(errors.CONNECTION, f"ICMP failed: {type(exc).__name__}: {exc}") from None
    if not answer.packets_received:
        raise Found(ICMP_NO_REPLY, f"no echo reply from {address} to {answer.packets_sent} requests")
    state.ms["rtt"] = answer.avg_rtt
    detail = (
        f"{answer.packets_received} of {answer.packets_sent} echo replies from {address}, "
        f"round trip {answer.min_rtt:.2f}/{answer.avg_rtt:.2f}/{answer.max_rtt:.2f} ms (min/avg/max)"
    )
    if answer.packet_loss > settings.max_loss:
        return state.result(WARNING, ICMP_LOSS, f"{answer.packet_loss:.0%} lost: {detail}")
    return state.result(OK, None, detail)


def forbidden() -> str:
    """Why the kernel refused an unprivileged ICMP socket, and the sysctl that would allow it."""
    try:
        with open(SYSCTL) as file:
            allowed = " to ".join(file.read().split())
    except OSError:
        allowed = "unknown"
    return (
        f"the kernel allows no unprivileged ICMP socket to group {os.getgid()}: net.ipv4.ping_group_range "
        f'is {allowed}; allow it with `sysctl -w net.ipv4.ping_group_range="0 2147483647"` (in Kubernetes, '
        "the pod's securityContext.sysctls)"
    )


def unprivileged_allowed() -> bool:
    """Whether this process may open an unprivileged ICMP socket (what the tests skip on)."""
    import socket

    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP).close()
    except PermissionError:
        return False
    return True


Icmp = probing.prober(SPEC, _ping)  # the icmp kind: keeps nothing between checks
KIND = kinds.declare(
    kinds.Kind(
        "icmp",
        schemes=("icmp",),
        settings=IcmpSettings,
        address=icmp_host,
        host=icmp_host,
        errors={
            ICMP_NO_REPLY: "no echo reply to any of icmp.count requests",
            ICMP_LOSS: "replies, but more than icmp.max_loss of them lost (a warning)",
            ICMP_FORBIDDEN: "the kernel allows this process no unprivileged ICMP socket (net.ipv4.ping_group_range)",
        },
        probe=kinds.Probe(
            "icmp://probe.invalid",
            series=(kinds.Series("probe_icmp_duration_seconds", "Duration of icmp request by phase", _rtt, "phase"),),
        ),
        check=Icmp,
    )
)
