"""Heartbeat (push) targets: a job pings the daemon, and silence is the failure.

A cron job, a queue worker or a backup script calls, over GET or POST::

    /ping/<token>          it ran and succeeded
    /ping/<token>/start    it starts now (the time to the next ping is its run time)
    /ping/<token>/fail     it ran and failed
    /ping/<token>/<code>   it ran and exited with ``code`` (0 success, anything else failure: ``/ping/$TOKEN/$?``)

on the metrics listener. A failure's POST body is the job's own word on it (``curl --data-raw "$output"``): its
last :data:`MESSAGE_CHARS` characters are kept, printable, URLs' secrets redacted, and a failed check says them.
A ``heartbeat`` target's check, on its ``interval``, judges the pings:

    heartbeat_failed   the latest word from the job was /fail
    heartbeat_missed   no ping for ``period + grace`` (counted from when monitoring began, before the
                       first ping), or a /start not followed by a ping within ``grace``

Otherwise the check passes, and its latency is the last run's time from /start to the ping (0 without
a /start), so the latency detector sees a job slowing down. Pings are stored (``Store.record_ping``):
a restart forgets none.

Replicas that share a PostgreSQL database take the pings of every heartbeat target, whichever replica a
load balancer sends them to, and the replica that checks a target reads its pings from the database.
Replicas with a database each (SQLite) take only their own targets' pings; another's gets a 404.

Tokens are secrets: :class:`Heartbeats` keeps only their SHA-256 digests and finds a target by the
digest, so the lookup's timing says nothing about the token; no token is ever logged or stored.
Make one with ``monitor token``.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, Protocol

from monitor.checks.context import Context
from monitor.checks.context import Pings as PingStates  # what judging reads; Pings below is what records
from monitor.config import Target
from monitor.core import errors, kinds
from monitor.core.results import CRITICAL, OK, Result
from monitor.core.urls import redact_text

MISSED, FAILED = errors.HEARTBEAT_MISSED, errors.HEARTBEAT_FAILED
EVENTS = ("ping", "start", "fail")
MESSAGE_CHARS = 1000  # of a failing job's output: the tail, where a script's error is
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # a terminal's colours and moves
UNPRINTABLE = re.compile(r"[\s\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]+")  # controls, bidi: one space
USERINFO = re.compile(r"\b([a-z][a-z0-9+.-]*://)[^\s/@]*@", re.I)  # postgresql://user:password@, redis://:pw@
PING_PATH = re.compile(r"^/ping/([A-Za-z0-9_-]{1,128})(?:/(start|fail|25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d))?/?$")  # 0-255


def event_of(suffix: str | None) -> str:
    """The ping a path's suffix names: none is success, ``start``, ``fail``, or an exit status (0 success, else fail)."""
    if suffix is None:
        return "ping"
    if suffix.isdigit():
        return "ping" if int(suffix) == 0 else "fail"
    return suffix


def message_of(body: bytes) -> str | None:
    """What a job's failure ping said (its POST body): the tail, as one line of printable text, with the secrets
    of URLs redacted (any scheme's user and password) before it is cut, and cut at a word, so that no part of a
    URL is left unredacted; None when it said nothing."""
    window = body[-4 * MESSAGE_CHARS :]
    text = UNPRINTABLE.sub(" ", ANSI.sub("", window.decode("utf-8", "replace"))).strip()
    if len(window) < len(body):
        text = text.partition(" ")[2] or text  # the window began inside a word
    text = redact_text(USERINFO.sub(r"\1***@", text))
    if len(text) > MESSAGE_CHARS:
        cut = text[-MESSAGE_CHARS:]
        text = cut.partition(" ")[2] or cut
    return text or None


def new_token() -> str:
    """A random token for a heartbeat target: 256 bits, URL-safe (43 characters)."""
    return secrets.token_urlsafe(32)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Pings(Protocol):
    """The store's results part as the heartbeats use it (checks stand beside the store: they name none of its classes)."""

    def watch_heartbeats(self, targets: list[str], since: float) -> None: ...
    def heartbeat(self, target: str) -> dict[str, Any] | None: ...
    def record_ping(self, target: str, event: str, at: float, message: str | None = None) -> None: ...


class PingStore(Protocol):
    """What the heartbeats need of the store: their pings, written and read back (the store's results part)."""

    @property
    def shared(self) -> bool: ...
    @property
    def errors(self) -> tuple[type[BaseException], ...]: ...
    @property
    def results(self) -> Pings: ...


class Heartbeats:
    """The heartbeat targets' tokens (as digests) and their pings, written through to ``store``.

    ``record(token, event, message)`` takes a ping from the endpoint (a fail's message: what the job said);
    ``state(name)`` is what a check judges, read from memory, so a check never waits on the database; from
    the database when it is shared
    (another replica may have taken the ping). Call ``configure(targets)`` again after a reload; it
    reads the stored pings of targets it did not know.
    """

    def __init__(self, store: PingStore, targets: Iterable[Target] = (), *, clock: Callable[[], float] = time.time) -> None:
        self.store, self.clock = store, clock
        self._targets: dict[bytes, str] = {}
        self._states: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self.configure(targets)

    def configure(self, targets: Iterable[Target]) -> None:
        found = {
            _digest(t.heartbeat.token.get_secret_value()): t.name for t in targets if t.kind == "heartbeat" and t.heartbeat is not None
        }
        names = sorted(found.values())
        if names:
            self.store.results.watch_heartbeats(names, self.clock())
        loaded = {name: self._states.get(name) or self.store.results.heartbeat(name) or {} for name in names}
        with self._lock:
            self._targets, self._states = found, loaded  # a ping sees the old maps or the new ones

    def record(self, token: str, event: str = "ping", message: str | None = None) -> str | None:
        """A ping with ``token`` (a fail's ``message``: what the job said): the name of its target, or None when
        no target has that token."""
        # Looked up by SHA-256 digest: how long the lookup takes depends on the digest, which an attacker
        # cannot steer towards a real token, so timing reveals nothing (no byte-by-byte string compare).
        name = self._targets.get(_digest(token))
        if name is None or event not in EVENTS:
            return None
        at = self.clock()
        self.store.results.record_ping(name, event, at, message)  # stored first: a ping answered survives a restart
        with self._lock:
            self._states[name] = after(self._states.get(name, {"since": at}), event, at, message)
        return name

    def state(self, name: str) -> dict[str, Any] | None:
        if self.store.shared:
            try:
                stored = self.store.results.heartbeat(name)
            except self.store.errors:
                stored = None  # the database is away: judge by the pings this replica took
            if stored:
                with self._lock:
                    self._states[name] = stored
        with self._lock:
            state = self._states.get(name)
        return dict(state) if state else None


def after(state: dict[str, Any], event: str, at: float, message: str | None = None) -> dict[str, Any]:
    """A heartbeat's state after ``event`` at ``at``, as ``Store.record_ping`` keeps it: a ping or /fail ends
    the run its /start began, so a /start already ended is forgotten (the next run's time is unknown, not
    the time since that old /start); a /fail's ``message`` replaces the last."""
    new = {**state, f"last_{event}": at, **({"last_message": message} if event == "fail" else {})}
    start = state.get("last_start")
    if event != "start" and start is not None and start <= max(state.get("last_ping") or 0.0, state.get("last_fail") or 0.0):
        new["last_start"] = None
    return new


class Heartbeat:
    """The heartbeat kind: a check judges the pings the checker's ``heartbeats`` took."""

    def __init__(self, context: Context) -> None:
        self.clock, self.pings = context.clock, context.pings

    async def check(self, target: Target, *, worker: int = 0) -> Result:
        return judge(target, self.pings, self.clock())

    async def aclose(self) -> None:
        return None


def judge(target: Target, heartbeats: PingStates | None, now: float) -> Result:
    """The check of a heartbeat target: its pings against ``period`` and ``grace``."""
    settings = target.heartbeat
    assert settings is not None
    state = heartbeats.state(target.name) if heartbeats is not None else None
    if state is None:
        return _result(target, now, CRITICAL, MISSED, "no ping was ever recorded for this target (no database?)", 0.0)
    ping, start, fail, since = state.get("last_ping"), state.get("last_start"), state.get("last_fail"), state["since"]
    run = ping - start if ping is not None and start is not None and start <= ping else 0.0
    if fail is not None and fail >= (ping or 0.0) and fail >= (start or 0.0):
        message = state.get("last_message")
        said = f": {message}" if message else ""
        return _result(target, now, CRITICAL, FAILED, f"the job reported a failure {_ago(now - fail)} ago{said}", run, excerpt=message)
    if start is not None and start > max(ping or 0.0, fail or 0.0) and now - start > settings.grace:
        return _result(
            target,
            now,
            CRITICAL,
            MISSED,
            f"the job started {_ago(now - start)} ago and has not pinged within its grace of {_ago(settings.grace)}",
            run,
        )
    silence = now - (ping if ping is not None else since)
    if silence > settings.period + settings.grace:
        heard = f"no ping for {_ago(silence)}" if ping is not None else f"no ping since monitoring began {_ago(silence)} ago"
        return _result(target, now, CRITICAL, MISSED, f"{heard} (period {_ago(settings.period)} + grace {_ago(settings.grace)})", run)
    if ping is None:
        return _result(target, now, OK, errors.HEARTBEAT_WAITING, f"waiting for the first ping ({_ago(silence)} so far)", run)
    took = f"; the last run took {run:.1f}s" if run else ""
    return _result(target, now, OK, None, f"last ping {_ago(silence)} ago{took}", run)


def _result(target: Target, now: float, severity: str, error: str | None, detail: str, run: float, excerpt: str | None = None) -> Result:
    """The check's result; a failure's ``excerpt`` is what the job said, as an HTTP target's is what it answered."""
    found = Result.judged(target.name, target.url, severity, error, detail, seconds=run, at=now, kind="heartbeat")
    return replace(found, excerpt=excerpt)


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    if seconds < 172800:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


KIND = kinds.declare(kinds.Kind("heartbeat", ("heartbeat",), check=Heartbeat))
