"""The agent's worker thread: investigations run one at a time, away from the checks, so checks never wait
for a model; a reload that enables the agent or changes the model applies between investigations."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from monitor.config import Config
from monitor.daemon.cycle import Cycle
from monitor.store.engines import describe

if TYPE_CHECKING:  # smolagents: only once there is an agent
    from monitor.agent.investigator import Investigator

log = logging.getLogger("monitor.daemon")


class AgentWorker:
    """Runs what the cycle queues; ``build()`` makes an investigator (when the agent is, or becomes, on)."""

    def __init__(self, cycle: Cycle, build: Callable[[], Investigator], stopping: threading.Event) -> None:
        self.cycle, self.build, self.stopping = cycle, build, stopping
        self.thread: threading.Thread | None = None
        self.running = False  # started by a running daemon: a newly enabled agent gets a thread too

    def start(self) -> None:
        self.running = True
        if self.cycle.investigator is None:
            return
        self.cycle.queue = queue.Queue()
        self.thread = threading.Thread(target=self._work, name="monitor-agent", daemon=True)
        self.thread.start()

    def join(self, timeout: float) -> None:
        if self.thread is not None:
            self.thread.join(timeout)

    def _work(self) -> None:
        assert self.cycle.queue is not None
        while not self.stopping.is_set():
            try:
                result, found = self.cycle.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self.cycle.investigate(result, found)
            except self.cycle.store.errors as exc:  # housekeeping ends its run once the database answers
                log.warning("investigation of %s cut short, the database went away: %s", result.name, describe(exc))
            except Exception:
                log.exception("investigation of %s failed", result.name)

    def reconfigure(self, config: Config, *, model_changed: bool) -> None:
        """After a reload: the agent's settings now; a new model or a newly enabled agent on a thread, between
        investigations."""
        investigator = self.cycle.investigator
        if investigator is not None:
            investigator.apply_config(config)
        if not model_changed and (investigator is not None or config.agent.mode == "off"):
            return
        if not self.running:
            self._switch(model_changed)
        else:
            # A thread of its own, not a one-shot scheduler job: shutting the scheduler down while it removed a
            # finished job raised JobLookupError in its thread.
            threading.Thread(target=self._switch, args=[model_changed], name="reload-agent", daemon=True).start()

    def _switch(self, model_changed: bool) -> None:
        try:
            with self.cycle.agent_lock:
                if self.cycle.investigator is None and self.cycle.config.agent.mode != "off":
                    self.cycle.investigator = self.build()
                    if self.running and not self.stopping.is_set():
                        self.start()
                elif self.cycle.investigator is not None and model_changed:
                    self.cycle.investigator.use_configured_model()
        except Exception:
            log.exception("the reloaded agent settings could not be applied")
