"""The incident lifecycle as a state machine (issue 32): Hypothesis drives a daemon, its real cycle, incident writer,
alerts and config reloads, without its threads, over a real SQLite file, on a fake clock that moves in the daemon's
own ticks (``FOLLOW_UP_EVERY``, when it looks for reminders and escalations), with two webhook receivers that its
own delivery posts to (``ops`` hears of every incident, ``pager`` of those escalated to it). In random order it feeds 1-3
targets check results (pass, fail, slow: a warning), adds and ends maintenance windows by reloading the config
file, acknowledges and resolves incidents by hand, reloads, restarts (a new daemon over the same file) and lets
time pass, with the daemon checking every interval or not. 500 examples of up to 20 steps, derandomized: a failure
comes back with the same steps. After every step:

* every reader shows the state the model expects: :func:`monitor.core.state.state_of`, the overview
  (:class:`~monitor.web.pages.Pages`) and ``/metrics``, and, whenever a state, the config or the process changed,
  ``monitor status --json``, the status page and each target's own page; uptime counts a warning as up;
* a target whose last check failed has one open incident, and none once ``recover_after`` checks passed;
* an incident's "opened" is delivered at most once, and exactly once when its target failed a check outside
  maintenance since it opened; nothing comes after a "resolved";
* nothing is delivered about a target while a maintenance window covers it;
* a resolve sends exactly one "resolved" to each receiver that heard of the incident;
* reminders (``repeat_every: 1m``) keep their period, within one tick, and none is late; the escalation
  (``after: 2m``) comes once, within one tick of its time; neither after an acknowledgement.

What holds by design, and is expected so:

* an incident that opened in a window is released (its "opened" sent) by its target's first failing check after
  the window, not at the moment the window ends: within an interval of it;
* the "resolved" of an incident its receivers heard of, resolved while a window covers its target, is sent when
  that maintenance ends as it stood at the resolve (:meth:`monitor.incidents.maintenance.Maintenance.ends`): a
  reload that extends the window afterwards does not hold it longer, one that cuts it short does not send it
  sooner. A reminder held back by a window comes when it ends, and the next counts from when it fell due;
* ``monitor status`` lists the targets with a result; ``/metrics`` has a target's series once this process has
  checked it.

The machine found that, before, such a "resolved" was never sent (test_alert_states.py has the case on its own).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest.mock import patch

import httpx
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule, run_state_machine_as_test
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from monitor import config as config_module
from monitor.alerts import delivery
from monitor.cli import incidents as status_command
from monitor.core.incidents import Incident
from monitor.core.results import Result
from monitor.core.state import PUBLIC, State, state_of
from monitor.daemon import Daemon
from monitor.daemon.service import FOLLOW_UP_EVERY
from monitor.store import Store
from monitor.web.pages import Pages
from monitor.web.status import StatusPages

T0 = 1_700_000_000.0  # a multiple of the tick: every moment of the model is one of the daemon's ticks
TICK = float(FOLLOW_UP_EVERY)
INTERVAL, PERIOD, ESCALATE = 60.0, 60.0, 120.0  # the targets' interval, repeat_every, escalate.after
NAMES = ("api", "db", "web")
RECEIVERS, HOOKS = ("ops", "pager"), "http://127.0.0.1:9/hooks"
OUTCOMES = {
    "pass": ("ok", None, "status 200"),
    "slow": ("warning", "condition", "latency 1505 ms over 800 ms"),
    "fail": ("critical", "http_status", "status 500 not in expected codes"),
}
STATES: dict[str, State] = {"pass": "up", "slow": "warning", "fail": "down"}
WINDOW = (st.integers(1, 7), st.integers(0, 24), st.integers(1, 40))  # targets (a bit mask), starts in, lasts (ticks)


@dataclass(frozen=True)
class Heard:
    """A message a receiver got, when (on the fake clock), about which incident."""

    at: float
    receiver: str
    event: str
    incident: int
    target: str
    held: bool  # a maintenance window covered the target then


def iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat()


class Lifecycle(RuleBasedStateMachine):
    """A model of the world (what targets answer, the windows, what the receivers heard) beside a daemon."""

    def __init__(self, hooks: Hooks, template: Path, folder: Path) -> None:
        super().__init__()
        self.hooks, self.folder = hooks, folder
        self.db = folder / "monitor.db"
        shutil.copy(template, self.db)  # migrated once for all examples
        self.now = T0
        self.names: tuple[str, ...] = ()
        self.recover = 1
        self.answers = dict.fromkeys(NAMES, "pass")  # what each target answers now
        self.checks: dict[str, list[tuple[float, str, bool]]] = {}  # when, outcome, in maintenance then
        self.held: dict[str, set[float]] = {}  # the ticks when a window covered each target
        self.windows: list[tuple[tuple[str, ...], float, float]] = []
        self.resolved_by_hand: dict[str, float] = {}
        self.closes: dict[int, float | None] = {}  # each resolved incident: when a window held its "resolved" till
        self.heard: list[Heard] = []
        self.seen = {name: len(received) for name, received in hooks.received.items()}
        self.observed: set[str] = set()  # targets this daemon process has checked (its /metrics has them)
        self.daemon: Daemon | None = None
        self.written = ""  # the config file's text
        self.read: tuple[Any, ...] = ()  # what the states were last read from
        self.shown: tuple[Any, ...] = ()  # and what they were, for the costlier readers

    def clock(self) -> float:
        return self.now

    # the world

    def config(self) -> dict[str, Any]:
        policy = {"receivers": ["ops"], "repeat_every": "1m", "escalate": {"after": "2m", "receivers": ["pager"]}}
        return {
            "agent": {"mode": "off"},
            "memory": {"embedder": "none"},  # the database: the daemon's store=
            "alerts": {"webhooks": [{"url": f"{HOOKS}/{name}", "name": name} for name in RECEIVERS]},
            "detectors": {"consecutive": 1, "recover_after": self.recover},
            "targets": [{"name": name, "url": f"http://127.0.0.1:9/{name}", "interval": INTERVAL, "alerts": policy} for name in self.names],
            "maintenance": [
                {"targets": list(names), "start": iso(start), "end": iso(end), "reason": "upgrade"} for names, start, end in self.windows
            ],
            "status_pages": [{"slug": "public", "title": "Status", "groups": [{"name": "all", "targets": list(self.names)}]}],
        }

    def write_config(self) -> Path:
        self.windows = [window for window in self.windows if window[2] > self.now]  # those over leave the file
        path, text = self.folder / "monitor.yaml", json.dumps(self.config())  # JSON is YAML
        if text != self.written:
            path.write_text(text)
            self.written = text
        return path

    def start(self) -> Daemon:
        path = self.write_config()
        self.observed = set()
        return Daemon(
            config_module.load(path),
            store=Store(self.db, clock=self.clock),
            registry=CollectorRegistry(),
            clock=self.clock,
            config_path=str(path),
        )

    @property
    def running(self) -> Daemon:
        assert self.daemon is not None
        return self.daemon

    def covered(self, target: str, at: float) -> bool:
        return any(target in names and start <= at < end for names, start, end in self.windows)

    def deliver(self) -> None:
        """What the daemon's senders do within a moment of a change: deliver what is due, to each receiver."""
        for receiver in self.running.store.outbox.due_receivers(self.now):
            self.running.alerts.deliver_due(receiver)
        for name, received in self.hooks.received.items():
            for message in received[self.seen[name] :]:
                self.heard += [
                    Heard(self.now, name, message["event"], fact["id"], fact["target"], self.covered(fact["target"], self.now))
                    for fact in message["incidents"]
                ]
            self.seen[name] = len(received)

    def tick(self) -> None:
        """The daemon's follow-up job: reminders and escalations due, then delivered; none may be late."""
        self.now += TICK
        self.note_held()
        self.running.follow_up()
        self.deliver()
        self.punctual()

    def note_held(self) -> None:
        for name in self.names:
            if self.covered(name, self.now):
                self.held.setdefault(name, set()).add(self.now)

    def teardown(self) -> None:
        if self.daemon is not None:  # its alerts' senders never started; their client is the module's
            self.daemon.close()
            self.daemon = None
        shutil.rmtree(self.folder, ignore_errors=True)

    # the steps

    @initialize(
        count=st.integers(1, 3),
        recover=st.integers(1, 2),
        answers=st.lists(st.sampled_from(sorted(OUTCOMES)), min_size=3, max_size=3),
        window=st.none() | st.tuples(*WINDOW),
    )
    def begin(self, count: int, recover: int, answers: list[str], window: tuple[int, int, int] | None) -> None:
        """Targets, what they answer at first, a window in the config it starts with."""
        self.names, self.recover = NAMES[:count], recover
        self.answers.update(zip(NAMES, answers, strict=True))
        if window is not None:
            self.windows.append(self.window(*window))
        self.daemon = self.start()

    @rule(outcomes=st.lists(st.sampled_from(sorted(OUTCOMES)) | st.none(), min_size=3, max_size=3))
    def check(self, outcomes: list[str | None]) -> None:
        """At the next tick, targets answer something new (None: as before, and are not checked now)."""
        self.tick()
        changed = {name: outcome for name, outcome in zip(self.names, outcomes, strict=False) if outcome is not None}
        self.answers.update(changed)
        self.check_now(list(changed))

    @rule(ticks=st.integers(1, 24), checking=st.booleans())
    def wait(self, ticks: int, checking: bool) -> None:
        """Time passes; ``checking``: the daemon checks each target once an interval (else its checks stopped)."""
        for _ in range(ticks):
            self.tick()
            if checking:
                self.check_now([name for name in self.names if self.now - self.last_checked(name) >= INTERVAL])

    def check_now(self, names: list[str]) -> None:
        results = []
        for name in names:
            outcome = self.answers[name]
            severity, error, detail = OUTCOMES[outcome]
            results.append(
                Result(
                    name,
                    f"http://127.0.0.1:9/{name}",
                    outcome == "pass",
                    severity,
                    500 if outcome == "fail" else 200,
                    1505.0 if outcome == "slow" else 3.0,
                    error,
                    detail,
                    self.now,
                )
            )
            self.checks.setdefault(name, []).append((self.now, outcome, self.covered(name, self.now)))
            self.observed.add(name)
        self.running.cycle.after_checks(results)  # not Daemon.deliver, which logs what goes wrong and goes on
        self.deliver()

    def last_checked(self, name: str) -> float:
        return self.checks[name][-1][0] if self.checks.get(name) else float("-inf")

    @rule(mask=WINDOW[0], starts_in=WINDOW[1], lasts=WINDOW[2])
    def add_window(self, mask: int, starts_in: int, lasts: int) -> None:
        self.windows.append(self.window(mask, starts_in, lasts))
        self.reload()

    def window(self, mask: int, starts_in: int, lasts: int) -> tuple[tuple[str, ...], float, float]:
        """The targets a bit mask names (at least one), from ``starts_in`` ticks for ``lasts`` ticks."""
        names = tuple(name for i, name in enumerate(self.names) if mask >> i & 1) or self.names[:1]
        start = self.now + starts_in * TICK
        return names, start, start + lasts * TICK

    @precondition(lambda self: any(start <= self.now < end for _, start, end in self.windows))
    @rule()
    def end_windows(self) -> None:
        """Every window in force ends now (one that began this moment is taken out)."""
        self.windows = [
            (names, start, self.now if start <= self.now < end else end)
            for names, start, end in self.windows
            if not start == self.now < end
        ]
        self.reload()

    @rule()
    def reload(self) -> None:
        self.write_config()
        assert self.running.reload()
        self.deliver()

    @rule()
    def restart(self) -> None:
        self.running.close()
        self.daemon = self.start()
        self.deliver()  # what the last process left in the outbox

    @rule(pick=st.integers(0, 2))
    def acknowledge(self, pick: int) -> None:
        current = self.running.store.incidents.open_incidents()
        if current:
            self.running.incidents.acknowledge(current[pick % len(current)].id, "on it")
            self.deliver()

    @rule(pick=st.integers(0, 2))
    def resolve(self, pick: int) -> None:
        current = self.running.store.incidents.open_incidents()
        if current:
            incident = current[pick % len(current)]
            self.running.incidents.resolve(incident.id, note="resolved by hand")
            self.resolved_by_hand[incident.target] = self.now
            self.deliver()

    # what must hold

    def expected(self, name: str) -> State:
        """The state the model gives a target now."""
        if self.covered(name, self.now):
            return "maintenance"
        if not self.checks.get(name):
            return "unknown"
        at, outcome, _ = self.checks[name][-1]
        return "stale" if self.now - at > 3 * INTERVAL + 30 else STATES[outcome]  # three intervals and 30 s

    @invariant()
    def every_reader_shows_the_same_state(self) -> None:
        daemon, expected = self.running, {name: self.expected(name) for name in self.names}
        seen = (self.now, sum(map(len, self.checks.values())), daemon.config, daemon)
        if seen == self.read:  # nothing a state is made of changed: an acknowledgement, a resolve
            return
        pages = Pages(daemon.store, daemon.holder, clock=self.clock)
        fleet = {row["name"]: row for row in pages.fleet()["targets"]}
        scraped, targets = self.scraped(), {target.name: target for target in daemon.config.targets}
        for name, want in expected.items():
            latest = daemon.store.results.latest_result(name)
            truth = state_of(
                latest, in_maintenance=daemon.config.in_maintenance(name, self.now), stale_after=targets[name].stale_after, now=self.now
            )
            assert (truth, fleet[name]["state"]) == (want, want), (name, truth, fleet[name], want)
            checks = [outcome for _, outcome, _ in self.checks.get(name, [])]
            uptime = fleet[name]["uptime"]["24h"]
            assert (uptime.checks, uptime.up) == (len(checks), sum(o != "fail" for o in checks))
            if name in self.observed:
                assert scraped[name] == (checks[-1] != "fail", {"pass": 0, "slow": 1, "fail": 2}[checks[-1]])
        shown = (tuple(expected.items()), daemon.config, daemon)
        if shown != self.shown:  # a state changed (or the config, or the process): the costlier readers too
            self.other_readers_agree(pages, expected)
        self.read, self.shown = seen, shown

    def other_readers_agree(self, pages: Pages, expected: dict[str, State]) -> None:
        """The status page, ``monitor status --json`` and each target's own page (and API) say it too."""
        store, config = self.running.store, self.running.config
        page = StatusPages(pages, clock=self.clock).page("public")
        assert page is not None
        public = {row["name"]: row["state"] for group in page["groups"] for row in group["targets"]}
        with patch.object(status_command, "time", SimpleNamespace(time=self.clock)):  # the CLI's clock
            said = {
                row["target"]: row["state"] for row in (status_command.with_state(r, config, store) for r in store.results.latest_results())
            }
        for name, want in expected.items():
            shown = (public[name], said.get(name), pages.target_row(name, self.now)["state"])
            assert shown == (PUBLIC[want], want if self.checks.get(name) else None, want), (name, shown, want)

    def scraped(self) -> dict[str, tuple[bool, int]]:
        """``monitor_check_up`` and ``monitor_check_severity`` of each target, as /metrics says them."""
        text = self.running.metrics.scrape(["monitor_check_up", "monitor_check_severity"]).decode()
        values: dict[str, dict[str, float]] = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                values.setdefault(sample.labels["target"], {})[sample.name] = sample.value
        return {name: (got["monitor_check_up"] == 1, int(got["monitor_check_severity"])) for name, got in values.items()}

    @invariant()
    def incidents_follow_the_checks(self) -> None:
        for name in self.names:
            current = self.running.store.incidents.open_incidents(name)
            assert len(current) <= 1
            checks = self.checks.get(name, [])
            if checks and checks[-1][1] != "pass" and checks[-1][0] > self.resolved_by_hand.get(name, 0.0):
                assert len(current) == 1, (name, checks[-3:])
            if len(checks) >= self.recover and all(o == "pass" for _, o, _ in checks[-self.recover :]):
                assert current == [], (name, checks[-3:])

    @invariant()
    def nothing_is_sent_in_maintenance(self) -> None:
        """But a "resolved" held back by a window goes out when the maintenance in force at the resolve ends, even
        if a reload has extended it since (see the module docstring)."""
        assert not [h for h in self.heard if h.held and (h.event, h.at) != ("resolved", self.closes.get(h.incident))]

    @invariant()
    def alerts_follow_what_happened(self) -> None:
        for incident in self.running.store.incidents.recent_incidents(limit=10_000):
            if incident.status == "resolved" and incident.id not in self.closes:  # it closed in the last step
                assert incident.closed_at is not None
                self.closes[incident.id] = self.maintenance_ends(incident.target, incident.closed_at)
            ops, pager = (self.told(incident.id, receiver) for receiver in ("ops", "pager"))
            self.told_once(incident, ops, pager)
            for said in (ops, pager):
                self.followed_up_in_time(incident, said)

    def told_once(self, incident: Incident, ops: list[Heard], pager: list[Heard]) -> None:
        """One "opened" (to ops) or "escalated" (to pager) first, at most one "resolved", and nothing after it."""
        events = [h.event for h in ops]
        assert events.count("opened") <= 1 and events[:1] in ([], ["opened"]), events
        assert [h.event for h in pager][:1] in ([], ["escalated"]), pager
        if incident.status == "open" and self.failed_outside_maintenance(incident):
            assert events.count("opened") == 1, (incident, ops)
        due = self.closes.get(incident.id, self.now + 1)  # when its "resolved" goes out (None: at once)
        for said in (ops, pager):
            resolved = [h.event for h in said].count("resolved")
            assert "resolved" not in [h.event for h in said][:-1], (incident, said)
            assert resolved == (bool(said) and (due is None or due <= self.now)), (incident, said, due)

    def maintenance_ends(self, target: str, at: float) -> float | None:
        """When the maintenance covering the target at ``at`` ends, through windows that overlap; None: none did."""
        until = None
        while ends := [end for names, start, end in self.windows if target in names and start <= (at if until is None else until) < end]:
            until = max(ends)
        return until

    def told(self, incident: int, receiver: str) -> list[Heard]:
        return [h for h in self.heard if h.incident == incident and h.receiver == receiver]

    def failed_outside_maintenance(self, incident: Incident) -> bool:
        """Whether the incident's target failed a check outside maintenance since it opened (then it was told)."""
        return any(
            at >= incident.opened_at and outcome != "pass" and not held for at, outcome, held in self.checks.get(incident.target, [])
        )

    def followed_up_in_time(self, incident: Incident, said: list[Heard]) -> None:
        """No reminder nor escalation after an acknowledgement, no escalation early, reminders on their period."""
        acknowledged = incident.acknowledged_at
        follow_ups = [h for h in said if h.event in ("reminder", "escalated")]
        assert acknowledged is None or all(h.at <= acknowledged for h in follow_ups), (incident, said)
        escalated = [h.at for h in said if h.event == "escalated"]
        assert all(at >= incident.opened_at + ESCALATE for at in escalated), (incident, said)
        self.on_their_period(incident.target, said)

    def on_their_period(self, target: str, said: list[Heard]) -> None:
        """Each reminder falls due a period after the one before fell due (the first message: when it was sent),
        and comes within one tick of that; one held back by a window comes after it, and the next counts from
        when it fell due."""
        due = said[0].at if said else 0.0
        for heard in said[1:]:
            if heard.event != "reminder":
                continue
            periods = (heard.at - due) // PERIOD
            assert periods >= 1, (target, said)  # never early
            if not any(due < at < heard.at for at in self.held.get(target, ())):
                assert heard.at - due <= PERIOD + TICK, (target, said)  # nor late
            due += periods * PERIOD

    def punctual(self) -> None:
        """After a tick: an incident due a reminder or its escalation has had it."""
        for incident in self.running.store.incidents.open_incidents():
            if incident.acknowledged_at or incident.silenced or self.covered(incident.target, self.now):
                continue
            for receiver in ("ops", "pager"):
                said = self.told(incident.id, receiver)
                assert receiver == "pager" or said, incident
                assert not said or self.now - said[-1].at < PERIOD, (incident, said)
            if self.now - incident.opened_at >= ESCALATE:
                assert any(h.event == "escalated" for h in self.told(incident.id, "pager")), incident


class Hooks:
    """The two webhook receivers, in this process: what the daemon's HTTP client POSTs to ``HOOKS/<name>`` is
    recorded, by name (a real one on loopback cost 7 ms a message here; test_alert_states.py has those)."""

    def __init__(self) -> None:
        self.received: dict[str, list[dict[str, Any]]] = {name: [] for name in RECEIVERS}

    def answer(self, request: httpx.Request) -> httpx.Response:
        self.received[request.url.path.rsplit("/", 1)[-1]].append(json.loads(request.content))
        return httpx.Response(200, stream=httpx.ByteStream(b""))  # read as a stream, as a real answer is


class Loads:
    """``config.load``, as the daemon calls it to start and at each reload, but a text read before (in this example
    or another) is not parsed again: reading a config is tested on its own, and here it took a third of the time."""

    def __init__(self) -> None:
        self.known: dict[bytes, config_module.Config] = {}
        self.load = config_module.load

    def __call__(self, path: str | Path) -> config_module.Config:
        text = Path(path).read_bytes()
        if text not in self.known:
            self.known[text] = self.load(path)
        return self.known[text]


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[Path]:
    """Where the examples' databases go: a tmpfs where the system has one (/dev/shm), as closing each one syncs it
    to disk (a WAL checkpoint: 6 ms each on this machine's disk); else the test's tmp_path."""
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=shm, prefix="monitor-lifecycle-") as folder:
        yield Path(folder)


@pytest.mark.sqlite_only("copies one migrated SQLite file for each example")
@pytest.mark.timeout(300)  # about a minute on a loaded 2-core machine: the time it needs, not its bound
def test_the_incident_lifecycle_keeps_its_invariants(scratch: Path) -> None:
    template, examples, hooks = scratch / "template.db", iter(range(1_000_000)), Hooks()
    Store(template).close()

    class Machine(Lifecycle):
        def __init__(self) -> None:
            folder = scratch / str(next(examples))
            folder.mkdir()
            super().__init__(hooks, template, folder)

    client = httpx.Client(transport=httpx.MockTransport(hooks.answer))  # every daemon's, as delivery_client's would be
    with client, patch.object(delivery, "delivery_client", lambda: client), patch.object(config_module, "load", Loads()):
        run_state_machine_as_test(
            Machine,
            settings=settings(
                max_examples=500,
                stateful_step_count=20,
                derandomize=True,
                deadline=None,
                database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            ),
        )
