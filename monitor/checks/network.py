"""What checks of every kind share about the network: naming a failure, resolving a host, trusting TLS.

No HTTP client here: a tcp, tls or dns check loads only what it uses.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from monitor.core import errors
from monitor.core.urls import is_address


def _chain(exc: BaseException) -> Iterable[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def classify(exc: BaseException) -> tuple[str, str] | None:
    """The error kind and a short detail an OS or TLS failure (or one it caused) names; None if none."""
    text = str(exc) or type(exc).__name__
    for cause in _chain(exc):
        if isinstance(cause, AddressRefused):
            return errors.ADDRESS_REFUSED, str(cause)
        if isinstance(cause, socket.gaierror):
            return errors.DNS, f"name does not resolve: {cause.strerror or cause}"
        if isinstance(cause, ssl.SSLError):
            return errors.TLS, str(cause)
        if isinstance(cause, ConnectionRefusedError):
            return errors.REFUSED, "connection refused"
        if isinstance(cause, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)):
            return errors.RESET, "connection reset by peer"
    lowered = text.lower()
    if "name or service not known" in lowered or "nodename nor servname" in lowered:
        return errors.DNS, text
    if "connection refused" in lowered or "connect call failed" in lowered:
        return errors.REFUSED, text
    if "certificate" in lowered or "ssl" in lowered:
        return errors.TLS, text
    return None


def unclassified(exc: BaseException) -> tuple[str, str]:
    """The kind and detail of a failure nothing more precise names."""
    return errors.CONNECTION, f"{type(exc).__name__}: {str(exc) or type(exc).__name__}"


def ip_version(address: str | None) -> int | None:
    """4 or 6 for an IP address; None for anything else (a name that did not resolve, nothing)."""
    try:
        return ipaddress.ip_address(address or "").version
    except ValueError:
        return None


async def resolve(host: str, port: int) -> list[str]:
    """The host's addresses, in the resolver's order."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos)) or [host]


class AddressRefused(OSError):
    """A host whose addresses are all outside what the check may connect to."""


@dataclass(frozen=True)
class Dialer:
    """Where a check connects: the host's addresses (``resolve``: the system's resolver), less those ``admit``
    refuses, given the address and the port (None: every address). A check connects to what this returns, so
    the address judged is the address connected to, after DNS."""

    resolve: Callable[[str, int], Awaitable[list[str]]] = resolve
    admit: Callable[[str, int | None], bool] | None = None

    async def addresses(self, host: str, port: int | None) -> list[str]:
        found = [host] if is_address(host) else await self.resolve(host, port or 0)
        if self.admit is None:
            return found
        allowed = [address for address in found if self.admit(address, port)]
        if not allowed:
            shown = ", ".join(found[:4]) + (", ..." if len(found) > 4 else "")
            raise AddressRefused(f"{host} is {shown}: no address this check may connect to")
        return allowed


ANY_ADDRESS = Dialer()  # the system's resolver, every address


@functools.lru_cache(maxsize=16)
def tls_context(verify: bool, ca_file: str | None = None) -> ssl.SSLContext:
    """One context per kind for the whole process: building one loads the CA bundle (up to 0.1 s)."""
    if not verify:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    import certifi

    return ssl.create_default_context(cafile=ca_file or certifi.where())


def host_of(address: str) -> str | None:
    """The host an address with one reaches (``tcp://pg-main:5432`` -> pg-main), or None."""
    from urllib.parse import urlsplit

    try:
        return urlsplit(address).hostname
    except ValueError:
        return None
