"""What the tcp, tls and dns kinds share: a probe's clock, its early end, its connection, its Result.

A probe returns the same :class:`~monitor.core.results.Result` as an HTTP check, within the
target's ``timeout``, and never raises. Besides its kind's own error kinds
(:mod:`monitor.core.errors`) it may end in ``timeout``, ``connection_refused``,
``connection_reset``, ``dns`` (the target's host does not resolve), ``tls`` (a handshake that
failed before any certificate was judged) and ``condition_failed`` (``expect.max_latency``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeVar

from monitor import config
from monitor.checks import conditions, network
from monitor.config import Target
from monitor.core import errors
from monitor.core.results import CRITICAL, OK, WARNING, Result

if TYPE_CHECKING:
    from monitor.checks.context import Context

T = TypeVar("T")
Steps = Callable[["Target", "Probe", network.Dialer], Awaitable[Result]]


class Found(Exception):
    """Ends a probe early with an error kind; caught by :func:`run`."""

    def __init__(self, kind: str, detail: str, excerpt: str | None = None, severity: str = CRITICAL) -> None:
        super().__init__(detail)
        self.kind, self.detail, self.excerpt, self.severity = kind, detail, excerpt, severity


class Probe:
    """One probe's clock: phases in milliseconds, and the Result it ends with."""

    def __init__(self, target: Target, began: float, phases: tuple[str, ...]) -> None:
        self.target, self.began, self.started = target, began, time.perf_counter()
        self.ms = dict.fromkeys(phases, 0.0)
        self.cert: float | None = None
        self.address: str | None = None  # the address connected (or tried) to, once resolved

    async def timed(self, phase: str, step: Awaitable[T]) -> T:
        started = time.perf_counter()
        try:
            return await step
        finally:
            self.ms[phase] += (time.perf_counter() - started) * 1000

    def result(self, severity: str, error: str | None, detail: str, excerpt: str | None = None) -> Result:
        latency = sum(self.ms.values()) / 1000 or time.perf_counter() - self.started
        limit = self.target.expect.max_latency
        if severity == OK and limit is not None and latency > limit:
            severity, error = WARNING, errors.CONDITION
            detail = f"latency {latency * 1000:.0f} ms over {limit * 1000:.0f} ms; {detail}"
        if self.target.conditions and severity != CRITICAL:
            seen = conditions.Seen(latency_ms=latency * 1000, cert_expires_at=self.cert, now=self.began)
            severity, error, detail, quote = conditions.merged(
                (severity, error, detail, excerpt), conditions.failures(self.target.conditions, seen)
            )
            excerpt = quote
        found = Result.judged(
            self.target.name, self.target.url, severity, error, detail[:500], seconds=latency, at=self.began, kind=self.target.kind
        )
        return replace(
            found,
            cert_expires_at=self.cert,
            excerpt=excerpt,
            phases={p: round(ms, 3) for p, ms in self.ms.items()},
            ip_version=network.ip_version(self.address),
        )


@dataclass(frozen=True)
class Spec:
    """How a kind's probe is timed and how its failures are named."""

    phases: tuple[str, ...]
    waited: str  # what a timeout waited for, in words
    timeout_kind: str = errors.TIMEOUT
    # An OS failure's (kind, detail), renamed in the kind's words
    rename: Callable[[str, str], tuple[str, str]] = lambda kind, detail: (kind, detail)


async def run(target: Target, spec: Spec, steps: Callable[[Target, Probe], Awaitable[Result]], clock: Callable[[], float]) -> Result:
    """Run a probe's ``steps``; always returns a Result within ``target.timeout`` (plus a hair)."""
    state = Probe(target, clock(), spec.phases)
    try:
        async with asyncio.timeout(target.timeout):
            return await steps(target, state)
    except Found as found:
        return state.result(found.severity, found.kind, found.detail, found.excerpt)
    except TimeoutError:
        return state.result(CRITICAL, spec.timeout_kind, f"no {spec.waited} within {target.timeout:g}s")
    except OSError as exc:
        kind, detail = spec.rename(*(network.classify(exc) or network.unclassified(exc)))
        return state.result(CRITICAL, kind, detail)


class Prober:
    """A kind whose check is one probe, keeping nothing between checks: each check runs ``steps`` (connect, send,
    judge) under ``spec`` by :func:`run`. :func:`prober` makes a kind's factory of one."""

    def __init__(self, context: Context, *, spec: Spec, steps: Steps) -> None:
        self.clock, self.dialer, self.spec, self.steps = context.clock, context.dialer, spec, steps

    async def check(self, target: Target, *, worker: int = 0) -> Result:
        return await run(target, self.spec, lambda target, state: self.steps(target, state, self.dialer), self.clock)

    async def aclose(self) -> None:
        return None


def prober(spec: Spec, steps: Steps) -> Callable[[Context], Prober]:
    """The factory of a kind whose check is one probe (``check=`` of its :class:`~monitor.core.kinds.Kind`)."""
    return functools.partial(Prober, spec=spec, steps=steps)


async def connect(
    target: Target, state: Probe, kind: str, dialer: network.Dialer = network.ANY_ADDRESS
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the target's ``host:port`` (an address ``dialer`` admits), its dns and connect phases timed."""
    host, port = config.host_port(target.url, kind)
    host = host.strip("[]")
    addresses = await state.timed("dns", dialer.addresses(host, port))
    for address in addresses[:-1]:
        state.address = address
        try:
            return await state.timed("connect", asyncio.open_connection(address, port))
        except OSError:
            continue
    state.address = addresses[-1]
    return await state.timed("connect", asyncio.open_connection(addresses[-1], port))


async def close(writer: asyncio.StreamWriter) -> None:
    task = asyncio.current_task()
    if task is not None and task.cancelling():  # the timeout ran out: waiting on the peer would overrun it
        writer.transport.abort()
        return
    writer.close()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(writer.wait_closed(), 0.5)
