"""The icmp check kind: ``icmp.count`` echo requests to ``icmp://host``, through icmplib's unprivileged sockets.

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

from monitor import config
from monitor.checks import network, probing, registry
from monitor.checks.probing import Found, Probe
from monitor.config import Target
from monitor.core import errors
from monitor.core.results import OK, WARNING, Result

SPEC = probing.Spec(("dns", "rtt"), "echo reply")
SYSCTL = "/proc/sys/net/ipv4/ping_group_range"


class Icmp:
    """The icmp kind: keeps nothing between checks."""

    def __init__(self, context: registry.Context) -> None:
        self.clock, self.dialer = context.clock, context.dialer

    async def check(self, target: Target, *, worker: int = 0) -> Result:
        return await probing.run(target, SPEC, lambda target, state: _ping(target, state, self.dialer), self.clock)

    async def aclose(self) -> None:
        return None


async def _ping(target: Target, state: Probe, dialer: network.Dialer) -> Result:
    import icmplib

    settings = target.icmp or config.IcmpSettings()
    host = config.icmp_host(target.url).strip("[]")
    address = (await state.timed("dns", dialer.addresses(host, None)))[0]
    each = max(0.05, (target.timeout - settings.interval * (settings.count - 1)) / settings.count)
    try:
        answer = await icmplib.async_ping(address, count=settings.count, interval=settings.interval, timeout=each, privileged=False)
    except icmplib.SocketPermissionError:
        raise Found(errors.ICMP_FORBIDDEN, forbidden()) from None
    except icmplib.ICMPLibError as exc:
        raise Found(errors.CONNECTION, f"ICMP failed: {type(exc).__name__}: {exc}") from None
    if not answer.packets_received:
        raise Found(errors.ICMP_NO_REPLY, f"no echo reply from {address} to {answer.packets_sent} requests")
    state.ms["rtt"] = answer.avg_rtt
    detail = (
        f"{answer.packets_received} of {answer.packets_sent} echo replies from {address}, "
        f"round trip {answer.min_rtt:.2f}/{answer.avg_rtt:.2f}/{answer.max_rtt:.2f} ms (min/avg/max)"
    )
    if answer.packet_loss > settings.max_loss:
        return state.result(WARNING, errors.ICMP_LOSS, f"{answer.packet_loss:.0%} lost: {detail}")
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


registry.register("icmp", Icmp)
