"""The daemon's periodic chores, each on the scheduler: retention and forgetting, the memory's size over time,
incidents of targets that left the config, Alertmanager's re-sends, the agent's model looked for again; and the
reminders and escalations due of this replica's open incidents."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable

from monitor.alerts.delivery import Alerts
from monitor.config import Config
from monitor.core.memory import MemoryStats
from monitor.daemon.cycle import Cycle
from monitor.daemon.indexer import Indexer
from monitor.memory import forgetting
from monitor.store import database_errors
from monitor.store.engines import describe

log = logging.getLogger("monitor.daemon")


def housekeeping(cycle: Cycle, config: Config, *, alerts: Alerts, indexer: Indexer, memory_stats: Callable[[], MemoryStats]) -> None:
    """Retention, re-sending firing alerts to Alertmanager, looking for Ollama, embedding others' writes."""
    indexer.wake()
    store, now = cycle.store, cycle.clock()
    try:
        store.results.prune(now - config.memory.retention)
        forgetting.prune(cycle.incidents, config.memory.max_incidents, clock=cycle.clock)
        store.memory.add_memory_sample(memory_stats(), keep_since=now - config.memory.retention)
        cycle.incidents.close_unconfigured(cycle.target_names())
        own = cycle.own_names()  # another replica refreshes its own
        alerts.refresh([i for i in store.incidents.open_incidents() if i.target in own])
        investigator = cycle.investigator
        if investigator is not None:
            with cycle.agent_lock:
                investigator.settle()
                investigator.reprobe()
    except database_errors() as exc:  # an outage: the recorder and /healthz say so already
        log.warning("housekeeping waits for the database: %s", describe(exc))
    except Exception:
        log.exception("housekeeping failed")


def follow_up(cycle: Cycle, alerts: Alerts) -> None:
    """The reminders and escalations due of this replica's open incidents (none while the database is out)."""
    own = cycle.own_names()
    with contextlib.suppress(*database_errors()):
        alerts.follow_up([i for i in cycle.store.incidents.open_incidents() if i.target in own])
