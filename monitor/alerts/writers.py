"""Where the writers are made: the incident :class:`~monitor.incidents.writer.Writer`, the
:class:`~monitor.incidents.tracker.Tracker` that writes through it, and the :class:`~monitor.incidents.recorder.Recorder`.

Every process makes them here and nowhere else (``tests/test_one_writer.py`` holds it), so each writer has what
it needs: the alerts' ``messages``, queued with each change in the change's own transaction; the maintenance
windows in force; and the publisher the process listens to. An agent, the CLI, the eval and the demo change
incidents the way the daemon does, and their changes are heard of the same way::

    writer(config, store, alerts=...)      messages: the daemon's alerts, else the config's receivers (queued
                                           for the daemon to deliver)
    tracker(config, store, writer=...)     the detectors, with the targets' own thresholds
    recorder(store, tracker, metrics=...)  results in, through the tracker
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from monitor.incidents.events import Publisher
from monitor.incidents.maintenance import Maintenance
from monitor.incidents.recorder import Recorder
from monitor.incidents.tracker import Tracker
from monitor.incidents.writer import Messages, Writer

if TYPE_CHECKING:
    from monitor.alerts.delivery import Alerts
    from monitor.config import Config, Target
    from monitor.config import Maintenance as Window
    from monitor.core.incidents import Event
    from monitor.metrics import Metrics
    from monitor.store import Notification, Store


def writer(
    config: Config,
    store: Store,
    *,
    alerts: Alerts | None = None,
    publisher: Publisher | None = None,
    windows: Callable[[], Sequence[Window]] | None = None,
    clock: Callable[[], float] | None = None,
) -> Writer:
    """The incident writer: each change queues what ``alerts`` make of it (default: alerts of ``config``'s
    receivers that only queue, for the daemon to deliver); ``windows``: the maintenance windows in force
    (default: ``config``'s)."""
    clock = clock or store.clock
    maintenance = Maintenance(windows or (lambda: config.maintenance), clock=clock)
    messages = alerts.messages if alerts is not None else queued_for_daemon(config, store, maintenance, clock)
    return Writer(store, publisher=publisher or Publisher(), messages=messages, maintenance=maintenance)


def queued_for_daemon(config: Config, store: Store, maintenance: Maintenance, clock: Callable[[], float]) -> Messages:
    """The messages of ``config``'s receivers, for a process that queues them and leaves delivery to the daemon;
    its alerts are made at the first change (a one-shot ``monitor check`` that changes nothing loads none of them)."""
    made: list[Alerts] = []

    def messages(event: Event, row: dict[str, Any] | None) -> Sequence[Notification]:
        if not made:
            from monitor.alerts.delivery import Alerts
            from monitor.alerts.routes import Routes

            made.append(Alerts(config.alerts, store, clock=clock, maintenance=maintenance, routes=Routes(config)))
        return made[0].messages(event, row)

    return messages


def tracker(config: Config, store: Store, *, writer: Writer, clock: Callable[[], float] = time.time) -> Tracker:
    """The detectors of ``config`` (the targets' own thresholds too), writing incidents through ``writer``."""
    made = Tracker(store, config.detectors, clock=clock, writer=writer)
    made.apply_config(config)
    return made


def recorder(
    store: Store,
    tracker: Tracker,
    *,
    metrics: Metrics | None = None,
    configured: Callable[[], set[str]] | None = None,
    quorums: Callable[[str], Target | None] = lambda name: None,
    fresh_for: Callable[[str], float] | None = None,
) -> Recorder:
    """The one way in for results (see :class:`~monitor.incidents.recorder.Recorder` for the arguments)."""
    return Recorder(store, tracker, metrics=metrics, configured=configured, quorums=quorums, fresh_for=fresh_for)


def for_config(config: Config, store: Store, *, clock: Callable[[], float] | None = None) -> tuple[Tracker, Recorder]:
    """A tracker and a recorder for a process that is not the daemon (``monitor check``, the eval): its
    changes queue their notifications for the daemon to deliver. ``clock``: the detectors' (default: real time)."""
    made = tracker(config, store, writer=writer(config, store), clock=clock or time.time)
    return made, recorder(store, made)
