"""The investigator: one long-lived agent with bounded, persistent memory, and its investigations.

``Investigator`` owns one long-lived smolagents ``ToolCallingAgent`` whose
working memory carries over between investigations (bounded by
``memory.Memory``) and survives restarts. ``investigate`` runs one
investigation one step at a time (:mod:`monitor.agent.loop`), saving each
finished step to the store at once, and always ends with a recorded state:

    success      the model called final_answer
    max_steps    it never did, within agent.max_steps
    model_error  the model server failed, or answered garbage, after retries
    timeout      a model call or the whole run (agent.run_timeout) took too long
    crashed      a bug in a tool or callback; the run and its steps are kept
    interrupted  the daemon was stopping (or crashed: runs left open are marked at the next start)

Whatever the state, the incident keeps its deterministic detection. The model is chosen in
:mod:`monitor.agent.models`; the agent is used only through :mod:`monitor.agent.seam`'s surface.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from smolagents import ToolCallingAgent
from smolagents.agents import populate_template
from smolagents.memory import ActionStep, MemoryStep, TaskStep
from smolagents.models import Model
from smolagents.monitoring import LogLevel

from monitor.agent.diagnosis import INTERRUPTED, SUCCESS, Diagnosis, Outcome
from monitor.agent.loop import StepLoop
from monitor.agent.models import ServedModel, choose_model, ollama_has
from monitor.agent.tools import Toolbox, toolset
from monitor.config import Config
from monitor.core import urls
from monitor.core.claims import Claim
from monitor.core.memory import WorkingStats
from monitor.core.runs import NewStep
from monitor.incidents import patterns
from monitor.incidents.tracker import Tracker
from monitor.memory import claims
from monitor.memory.working import Memory, prompts
from monitor.metrics import Metrics
from monitor.store import Store
from monitor.store.engines import describe

__all__ = ["Diagnosis", "Investigator", "Outcome", "ServedModel", "choose_model", "ollama_has"]

log = logging.getLogger("monitor.agent.investigator")

TARGET_TOOLS = ("check_target", "recent_results", "remediate")


def _model(config: Config, model: Model | None, metrics: Metrics | None) -> tuple[Model, str, str]:
    """The model given, else the one the config names (or the builtin): with its label and why it was chosen."""
    if model is not None:
        return model, model.model_id or type(model).__name__, "given"
    return choose_model(config.model, observe=metrics.observe_llm if metrics is not None else None)


class Investigator:
    """One long-lived agent with bounded, persistent memory. See the module docstring."""

    def __init__(
        self,
        config: Config,
        store: Store,
        tracker: Tracker,
        box: Toolbox,
        *,
        model: Model | None = None,
        metrics: Metrics | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Made by :func:`monitor.wiring.investigator`: ``tracker`` is the process's one (the daemon's, shared with its
        checks), and ``box`` writes through its writer and records through its recorder."""
        self.config, self.store, self.metrics, self.clock = config, store, metrics, clock
        self.model, self.model_label, self.model_reason = _model(config, model, metrics)
        self.memory = Memory(config.memory, store)
        self.tracker, self.incidents, self.box = tracker, tracker.writer, box
        self.templates = prompts()
        self.unfinished: dict[int, tuple[int | None, str]] = {}  # run id: (incident, why), cut short by the database
        self.interrupted = threading.Event()
        self.agent = ToolCallingAgent(
            tools=toolset(self.box),
            model=self.model,
            prompt_templates=self.templates,
            max_steps=config.agent.max_steps,
            verbosity_level=LogLevel.OFF,
            step_callbacks=self.memory.callbacks(self.watch_patterns),
        )
        self.restored = self.memory.restore(self.agent.memory.steps, self.agent.logger)

    def reprobe(self) -> bool:
        """With ``model.id: auto`` on the builtin model: switch to Ollama once it serves the model."""
        cfg = self.config.model
        if cfg.id != "auto" or self.model_label != "builtin":
            return False
        found, why = ollama_has(cfg.api_base, cfg.name)
        if not found:
            return False
        observe = self.metrics.observe_llm if self.metrics is not None else None
        model = ServedModel(f"ollama_chat/{cfg.name}", cfg, observe=observe)
        with self.memory.lock:
            self.model = self.agent.model = model
            self.model_label, self.model_reason = model.model_id or cfg.name, why
        log.info("model: switching to %s, because %s", self.model_label, why)
        return True

    def apply_config(self, config: Config) -> None:
        """After a config reload: the new config for the tools and the memory (a new model: ``use_configured_model``)."""
        self.config = self.box.config = config
        self.memory.config = config.memory
        self.agent.max_steps = config.agent.max_steps

    def use_configured_model(self) -> None:
        """After a reload changed ``model``: choose the model again; the working memory stays."""
        observe = self.metrics.observe_llm if self.metrics is not None else None
        model, label, why = choose_model(self.config.model, observe=observe)
        with self.memory.lock:
            self.model = self.agent.model = model
            self.model_label, self.model_reason = label, why

    def stats(self) -> WorkingStats:
        """Working memory: steps by type, bytes and estimated tokens the next request carries."""
        return self.memory.stats(self.agent.memory.steps)

    def save(self) -> None:
        """Save the working memory now (after each run it is saved anyway)."""
        with self.memory.lock:
            self.memory.save(self.steps)

    def interrupt(self) -> None:
        """Stop the running investigation before its next step."""
        self.interrupted.set()

    @property
    def steps(self) -> list[MemoryStep]:
        return self.agent.memory.steps

    def watch_patterns(self, step: ActionStep, agent: object = None) -> None:
        """Callback: run the detectors on targets the step touched; alert in the observation."""
        names = {c.arguments.get("name") for c in step.tool_calls or [] if c.name in TARGET_TOOLS and isinstance(c.arguments, dict)}
        alerts = []
        reach = set(self.box.reach())  # a call on another target was refused: its detectors are not this run's
        for name in sorted(n for n in names if isinstance(n, str)):
            if name not in reach:
                continue
            found, _ = self.tracker.observe(name)  # its changes are the writer's to publish
            if found:
                alerts.append(patterns.alert_text(found))
        if alerts:  # first, so that capping a long observation never drops them
            step.observations = "\n".join([*alerts, step.observations or ""]).strip()

    def task(self, target: str, *, incident: int | None, pattern: str, summary: str, latest: str = "") -> str:
        url = urls.redact(next((t.url for t in self.config.targets if t.name == target), ""))
        return populate_template(
            self.templates["task"],
            {
                "target": target,
                "url": url,
                "incident": incident if incident is not None else "none",
                "pattern": pattern,
                "summary": summary,
                "latest": latest or "unknown",
            },
        )

    def investigate(
        self,
        target: str,
        *,
        incident: int | None = None,
        pattern: str = "manual",
        summary: str = "",
        latest: str = "",
        on_step: Callable[[ActionStep], None] | None = None,
    ) -> Outcome:
        """Run one investigation step by step; see the module docstring for its end states."""
        self.settle()
        task = self.task(target, incident=incident, pattern=pattern, summary=summary, latest=latest)
        run_id = self.store.runs.start_run(task, target=target, incident_id=incident, model=self.model_label)
        self._begin(run_id, task, target, incident, pattern)
        try:
            state, answer, error, count = self._loop().run(run_id, on_step)
        except self.store.errors as exc:  # its end cannot be written now: settle() writes it later
            self.unfinished[run_id] = (incident, f"the database went away during the run ({describe(exc)})")
            raise
        finally:
            with self.memory.lock:
                self.memory.protect_from = None
                self.memory.compact(self.steps)
                self.memory.save(self.steps)
        said = Claim.from_json(run.claim) if (run := self.store.runs.run(run_id)) else None
        answer = claims.answer_said(answer, said, own=incident)
        self.store.runs.finish_run(run_id, state, answer, error)
        if incident is not None:
            self._record_on_incident(incident, run_id, state, error)
        if self.metrics is not None:
            self.metrics.observe_run(state)
        diagnosis = Diagnosis.of(self.store.runs.run(run_id), self.store)  # the writer sent it on when recorded
        return Outcome(run_id, state, answer, count, error, diagnosis=diagnosis, spent=dict(self.box.spent))

    def _loop(self) -> StepLoop:
        """This run's step loop, under the memory's lock and the daemon's interrupt."""
        lock, interrupted = self.memory.lock, self.interrupted
        return StepLoop(
            self.agent, self.box, self.store, self.config.agent, self.templates, lock=lock, interrupted=interrupted, metrics=self.metrics
        )

    def _begin(self, run_id: int, task: str, target: str, incident: int | None, pattern: str) -> None:
        """Hand the toolbox the run, and the agent's memory what is recalled for it, before the first step."""
        self.box.begin(run_id, incident, target, pattern)
        ranked = self.box.recall(self.config.memory.inject_incidents) if self.config.memory.inject_incidents else []
        with self.memory.lock:
            self.memory.compact(self.steps)
            self.memory.protect_from = len(self.steps)
            recalled = self.memory.recall(self.steps, target, pattern, exclude=incident, candidates=ranked)
            self.steps.append(TaskStep(task=task))
        self.box.saw(recalled)
        if recalled:
            self.store.runs.add_step(run_id, NewStep(0, "recall", started_at=self.clock(), observations=recalled))

    def settle(self) -> None:
        """End the runs a lost database cut short as interrupted, with their incidents, once it answers again
        (raises the database's error while it does not)."""
        for run_id, (incident, why) in list(self.unfinished.items()):
            self.store.runs.finish_run(run_id, INTERRUPTED, None, why)
            if incident is not None:
                self._record_on_incident(incident, run_id, INTERRUPTED, why)
            del self.unfinished[run_id]

    def _record_on_incident(self, incident: int, run_id: int, state: str, error: str | None) -> None:
        reason = f": {error}" if error else ""
        note = None if state == SUCCESS else f"agent run #{run_id} ended in {state}{reason}; the detection stands"
        self.incidents.annotate(incident, note, agent_state=state)
