"""The agent: model choice, the ToolCallingAgent, and the step-by-step runner.

``Investigator`` owns one long-lived smolagents ``ToolCallingAgent`` whose
working memory carries over between investigations (bounded by
``memory.Memory``) and survives restarts. ``investigate`` runs one
investigation one step at a time, saving each finished step to SQLite at once,
and always ends with a recorded state:

    success      the model called final_answer
    max_steps    it never did, within agent.max_steps
    model_error  the model server failed, or answered garbage, after retries
    timeout      a model call or the whole run (agent.run_timeout) took too long
    crashed      a bug in a tool or callback; the run and its steps are kept
    interrupted  the daemon was stopping (or crashed: runs left open are marked at the next start)

Whatever the state, the incident keeps its deterministic detection.

Model choice (``model.id``): ``auto`` asks Ollama's ``/api/tags`` for
``model.name`` and uses it when present, else the ``builtin`` triage model; any
other value is a litellm model id (``ollama_chat/llama3.2``). litellm is
imported here only, lazily, with its internet price-list fetch turned off.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from smolagents import ToolCallingAgent
from smolagents.agents import populate_template
from smolagents.memory import ActionStep, TaskStep
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    LiteLLMModel,
    Model,
)
from smolagents.monitoring import LogLevel, Timing
from smolagents.utils import AgentError, AgentGenerationError

from monitor.agent.tools import NOT_ACTIONABLE, Toolbox, toolset
from monitor.agent.triage import TriageModel
from monitor.config import Config, ModelConfig
from monitor.core import urls
from monitor.incidents import patterns
from monitor.incidents.tracker import Event, Tracker
from monitor.memory.working import Memory, prompts
from monitor.store import Store
from monitor.store.engines import describe

log = logging.getLogger("monitor.agent.investigator")

SUCCESS, MAX_STEPS, MODEL_ERROR, TIMEOUT, CRASHED = "success", "max_steps", "model_error", "timeout", "crashed"
INTERRUPTED = "interrupted"
TARGET_TOOLS = ("check_target", "recent_results", "remediate")
# What a careful operator does, in order; a guided model is offered one of these at a time, then final_answer.
NUDGE_TEMPERATURE = 0.8
GUIDED_ORDER = ("check_target", "recent_results", "search_incidents", "record_diagnosis")


def ollama_has(api_base: str, name: str, timeout: float = 2.0) -> tuple[bool, str]:
    """Whether Ollama at ``api_base`` serves model ``name``, and why not."""
    try:
        response = httpx.get(f"{api_base.rstrip('/')}/api/tags", timeout=timeout, trust_env=False)
        response.raise_for_status()
        names = {m.get("name", "") for m in response.json().get("models", [])}
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        return False, f"no Ollama at {urls.redact(api_base)} ({type(exc).__name__})"
    if name in names or f"{name}:latest" in names:
        return True, f"Ollama at {urls.redact(api_base)} serves {name}"
    return False, f"Ollama at {urls.redact(api_base)} has no {name} (has: {', '.join(sorted(names)) or 'none'}; ollama pull {name})"


def choose_model(cfg: ModelConfig, *,
                 observe: Callable[[float, int, int], None] | None = None) -> tuple[Model, str, str]:
    """The model to use, its label and why it was chosen; logs the choice, once."""
    if cfg.id == "builtin":
        why = "model.id is builtin"
        log.info("model: builtin triage model, because %s", why)
        return TriageModel(), "builtin", why
    where = api_base(cfg, cfg.id)
    model_id, why = cfg.id, f"model.id is {cfg.id}" + (f" (at {urls.redact(where)})" if where else "")
    if cfg.id == "auto":
        found, why = ollama_has(cfg.api_base, cfg.name)
        if not found:
            log.warning("model: builtin triage model, because %s", why)
            return TriageModel(), "builtin", why
        model_id = f"ollama_chat/{cfg.name}"
    log.info("model: %s, because %s", model_id, why)
    return ServedModel(model_id, cfg, observe=observe), model_id, why


def provider(model_id: str) -> str:
    return model_id.split("/", 1)[0] if "/" in model_id else "ollama_chat"


def is_ollama(model_id: str) -> bool:
    return provider(model_id) in ("ollama", "ollama_chat")


def api_base(cfg: ModelConfig, model_id: str) -> str | None:
    """Where requests go: Ollama's address for Ollama models; for others only an api_base the config names."""
    if is_ollama(model_id) or "api_base" in cfg.model_fields_set:
        return cfg.api_base
    return None


def _prepare_litellm(model_id: str, cfg: ModelConfig) -> None:
    # Never fetch litellm's price list from the internet: monitoring hosts are often air-gapped.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if is_ollama(model_id):
        # litellm's Ollama model-info lookups (/api/show, from register_model and completions) ignore
        # api_base and go to $OLLAMA_API_BASE or localhost:11434: point them at the configured server.
        os.environ["OLLAMA_API_BASE"] = cfg.api_base
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    logging.getLogger("LiteLLM").setLevel(logging.ERROR)
    litellm.register_model({model_id: {
        "litellm_provider": provider(model_id), "mode": "chat", "max_tokens": cfg.num_ctx,
        "max_input_tokens": cfg.num_ctx, "max_output_tokens": cfg.max_tokens,
        "input_cost_per_token": 0.0, "output_cost_per_token": 0.0, "supports_function_calling": True,
    }})


def is_timeout(exc: BaseException) -> bool:
    current: BaseException | None = exc
    while current is not None:
        if "timeout" in type(current).__name__.lower() or "timed out" in str(current).lower():
            return True
        current = current.__cause__ or current.__context__
    return False


def tool_call_schema(tools: list[Any]) -> dict[str, Any]:
    """A JSON schema whose instances are exactly the valid calls of ``tools``: {"name", "arguments"}."""
    choices = []
    for tool in tools:
        arguments = tool.argument_schema() if hasattr(tool, "argument_schema") else {
            "type": "object", "properties": {"answer": {"type": "string", "maxLength": 300}}, "required": ["answer"]}
        choices.append({"type": "object", "additionalProperties": False, "required": ["name", "arguments"],
                        "properties": {"name": {"type": "string", "enum": [tool.name]}, "arguments": arguments}})
    return choices[0] if len(choices) == 1 else {"anyOf": choices}


def parse_tool_call(content: str) -> ChatMessageToolCall | None:
    """The tool call in a constrained reply, or None when it is not one."""
    try:
        data = json.loads(content)
    except (TypeError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments")
    return ChatMessageToolCall(function=ChatMessageToolCallFunction(name=data["name"], arguments=arguments or {}),
                               id=f"call_{uuid.uuid4().hex[:8]}", type="function")


class ServedModel(LiteLLMModel):
    """A model behind a server (Ollama, llama.cpp, vLLM, LM Studio, any litellm id), built for small models.

    * With ``model.constrain`` on, the reply is constrained to a JSON schema of the valid calls of the
      tools on offer (Ollama's ``format``, ``response_format`` on OpenAI-compatible servers), so a small
      model cannot invent a tool or an argument. Off, tools go out natively.
    * ``offer(names)`` narrows the tools of the next request to those that make sense next.
    * ``nudge()`` raises the temperature of the next request once, to break out of a repeated mistake.
    * Our own retries with backoff (timeouts are not retried), and timing for metrics.
    """

    kwargs: dict[str, Any]  # smolagents' per-model request options

    def __init__(self, model_id: str, cfg: ModelConfig,
                 observe: Callable[[float, int, int], None] | None = None) -> None:
        _prepare_litellm(model_id, cfg)
        options: dict[str, Any] = {"num_ctx": cfg.num_ctx} if is_ollama(model_id) else {}
        if cfg.api_key or (not is_ollama(model_id) and api_base(cfg, model_id)):
            options["api_key"] = cfg.api_key or "none"  # local OpenAI-compatible servers need no key
        super().__init__(model_id=model_id, api_base=api_base(cfg, model_id), timeout=cfg.timeout,
                         temperature=cfg.temperature, max_tokens=cfg.max_tokens, **options)
        self.constrained = cfg.constrain == "on" or (cfg.constrain == "auto" and api_base(cfg, model_id) is not None)
        self.retries, self.backoff, self.observe = cfg.retries, cfg.backoff, observe
        self.offered: set[str] | None = None
        self.hint: str | None = None
        self.nudged = False

    def offer(self, names: set[str] | None, hint: str | None = None) -> None:
        """Offer only these tools in the next request (None: all), with a closing instruction if given."""
        self.offered, self.hint = names, hint

    def nudge(self) -> None:
        self.nudged = True

    def generate(self, messages: list[ChatMessage | dict[str, Any]], stop_sequences: list[str] | None = None,
                 response_format: dict[str, str] | None = None, tools_to_call_from: list[Any] | None = None,
                 **kwargs: Any) -> ChatMessage:
        tools = [t for t in tools_to_call_from or [] if self.offered is None or t.name in self.offered] or (
            tools_to_call_from or [])
        if self.nudged:  # self.kwargs win over call kwargs in smolagents, so swap them for this one call
            saved: dict[str, Any] = self.kwargs
            self.nudged = False
            self.kwargs = {**saved, "temperature": max(NUDGE_TEMPERATURE, saved.get("temperature") or 0.0)}
            try:
                return self.generate(messages, stop_sequences, response_format, tools_to_call_from, **kwargs)
            finally:
                self.kwargs = saved
        if not (self.constrained and tools):
            return self._generate(messages, stop_sequences, response_format, tools or None, **kwargs)
        schema = {"type": "json_schema", "json_schema": {"name": "tool_call", "schema": tool_call_schema(tools)}}
        message = self._generate(messages, stop_sequences, schema, None, **kwargs)  # type: ignore[arg-type]
        call = parse_tool_call(message.content if isinstance(message.content, str) else "")
        if call is not None:
            message.tool_calls, message.content = [call], ""
        return message

    def _prepare_completion_kwargs(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """smolagents' request, with the guided hint as a message of its own (merged into the last
        observation, small models overlook it)."""
        completion = super()._prepare_completion_kwargs(*args, **kwargs)
        if self.hint:
            completion["messages"] = [*completion["messages"], {"role": "user", "content": self.hint}]
        return completion

    def _generate(self, messages: list[Any], stop_sequences: list[str] | None, response_format: Any,
                  tools: list[Any] | None, **kwargs: Any) -> ChatMessage:
        for attempt in range(self.retries + 1):
            started = time.perf_counter()
            try:
                message = super().generate(messages, stop_sequences, response_format, tools, **kwargs)
            except Exception as exc:
                self._observe(started, None)
                if attempt == self.retries or is_timeout(exc):
                    raise
                log.warning("model call failed (%s), retry %d of %d", type(exc).__name__, attempt + 1, self.retries)
                time.sleep(self.backoff * 2**attempt)
                continue
            self._observe(started, message)
            return message
        raise AssertionError("unreachable")

    def _observe(self, started: float, message: ChatMessage | None) -> None:
        if self.observe is not None:
            usage = message.token_usage if message is not None else None
            self.observe(time.perf_counter() - started, usage.input_tokens if usage else 0,
                         usage.output_tokens if usage else 0)


@dataclass
class Diagnosis:
    """What record_diagnosis stored on a run."""

    root_cause: str
    related_incident: int | None
    confidence: str | None
    summary: str | None
    past_fix: str | None = None

    @classmethod
    def of(cls, run: dict[str, Any], store: Store) -> Diagnosis | None:
        """The diagnosis a run recorded, with the resolution of the past incident it names; None if none."""
        if not run.get("root_cause"):
            return None
        related = run.get("related_incident")
        past = store.incident(related) if related else None
        return cls(run["root_cause"], related, run.get("confidence"), run.get("diagnosis"),
                   past.get("resolution") if past else None)

    @property
    def actionable(self) -> bool:
        return self.root_cause not in NOT_ACTIONABLE

    def to_dict(self) -> dict[str, Any]:
        """The fields, whether it is actionable, and ``text``: all of it in words, past fix included."""
        return {"root_cause": self.root_cause, "related_incident": self.related_incident,
                "confidence": self.confidence, "summary": self.summary, "past_fix": self.past_fix,
                "actionable": self.actionable, "text": str(self)}

    def __str__(self) -> str:
        text = f"{self.root_cause} ({self.confidence or '?'} confidence): {self.summary or ''}".strip()
        if self.related_incident:
            text += f"\nLike past incident #{self.related_incident}, fixed by: {self.past_fix or 'no resolution noted'}"
        return text


@dataclass
class Outcome:
    run_id: int
    state: str
    answer: str | None
    steps: int
    error: str | None = None
    diagnosis: Diagnosis | None = None


def step_row(step: ActionStep, calls: list[Any]) -> dict[str, Any]:
    """An ActionStep as a row of ``agent_steps``."""
    usage = step.token_usage
    return {
        "step_number": step.step_number, "kind": "action", "started_at": step.timing.start_time,
        "duration": step.timing.duration,
        "model_output": step.model_output if isinstance(step.model_output, str) else None,
        "tool_calls": json.dumps([{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls or []],
                                 default=str),
        "observations": step.observations, "error": str(step.error) if step.error else None,
        "input_tokens": usage.input_tokens if usage else 0, "output_tokens": usage.output_tokens if usage else 0,
        "is_final": int(step.is_final_answer),
        "tool_ok": int(all(c.ok for c in calls)) if calls else None,
        "tool_seconds": sum(c.seconds for c in calls) if calls else None,
    }


class Investigator:
    """One long-lived agent with bounded, persistent memory. See the module docstring."""

    def __init__(self, config: Config, store: Store, *, model: Model | None = None, metrics: Any = None,
                 clock: Callable[[], float] = time.time, tracker: Tracker | None = None) -> None:
        self.config, self.store, self.metrics, self.clock = config, store, metrics, clock
        observe = metrics.observe_llm if metrics is not None else None
        if model is not None:
            self.model, self.model_label, self.model_reason = model, model.model_id or type(model).__name__, "given"
        else:
            self.model, self.model_label, self.model_reason = choose_model(config.model, observe=observe)
        self.box = Toolbox(config, store)
        self.memory = Memory(config.memory, store)
        # the daemon passes the scheduler's tracker: one writer of incident state for both threads
        self.tracker = tracker or Tracker(store, config.detectors, clock=clock, silenced=config.in_maintenance)
        self.templates = prompts()
        self.events: list[Event] = []
        self.unfinished: dict[int, tuple[int | None, str]] = {}  # run id: (incident, why), cut short by the database
        self.interrupted = threading.Event()
        self.agent = ToolCallingAgent(
            tools=toolset(self.box), model=self.model, prompt_templates=self.templates,  # type: ignore[arg-type]
            max_steps=config.agent.max_steps, verbosity_level=LogLevel.OFF,
            step_callbacks=self.memory.callbacks(self.watch_patterns),  # type: ignore[arg-type]
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

    def reconfigure(self) -> None:
        """After a config reload (this same Config, updated in place): the settings copied out of it."""
        self.tracker.detectors = self.config.detectors
        self.memory.config = self.config.memory
        self.agent.max_steps = self.config.agent.max_steps

    def use_configured_model(self) -> None:
        """After a reload changed ``model``: choose the model again; the working memory stays."""
        observe = self.metrics.observe_llm if self.metrics is not None else None
        model, label, why = choose_model(self.config.model, observe=observe)
        with self.memory.lock:
            self.model = self.agent.model = model
            self.model_label, self.model_reason = label, why

    def stats(self) -> dict[str, Any]:
        """Working memory: steps by type, bytes and estimated tokens the next request carries."""
        return self.memory.stats(self.agent)

    def save(self) -> None:
        """Save the working memory now (after each run it is saved anyway)."""
        with self.memory.lock:
            self.memory.save(self.steps)

    def interrupt(self) -> None:
        """Stop the running investigation before its next step."""
        self.interrupted.set()

    @property
    def steps(self) -> list[Any]:
        return self.agent.memory.steps

    def watch_patterns(self, step: ActionStep, agent: Any = None) -> None:
        """Callback: run the detectors on targets the step touched; alert in the observation."""
        names = {c.arguments.get("name") for c in step.tool_calls or []
                 if c.name in TARGET_TOOLS and isinstance(c.arguments, dict)}
        alerts = []
        for name in sorted(n for n in names if isinstance(n, str)):
            if not any(t.name == name for t in self.config.targets):
                continue
            found, events = self.tracker.observe(name)
            self.events.extend(events)
            if found:
                alerts.append(patterns.alert_text(found))
        if alerts:  # first, so that capping a long observation never drops them
            step.observations = "\n".join([*alerts, step.observations or ""]).strip()

    def task(self, target: str, *, incident: int | None, pattern: str, summary: str, latest: str = "") -> str:
        url = urls.redact(next((t.url for t in self.config.targets if t.name == target), ""))
        return populate_template(self.templates["task"], {
            "target": target, "url": url, "incident": incident if incident is not None else "none",
            "pattern": pattern, "summary": summary, "latest": latest or "unknown"})

    def investigate(self, target: str, *, incident: int | None = None, pattern: str = "manual",
                    summary: str = "", latest: str = "",
                    on_step: Callable[[ActionStep], None] | None = None) -> Outcome:
        """Run one investigation step by step; see the module docstring for its end states."""
        self.settle()
        task = self.task(target, incident=incident, pattern=pattern, summary=summary, latest=latest)
        run_id = self.store.start_run(task, target=target, incident_id=incident, model=self.model_label)
        self.box.begin(run_id, incident, target, pattern)
        with self.memory.lock:
            self.memory.compact(self.steps)
            self.memory.protect_from = len(self.steps)
            recalled = self.memory.recall(self.steps, target, pattern, exclude=incident)
            self.steps.append(TaskStep(task=task))
        self.box.saw(recalled)
        if recalled:
            self.store.add_step(run_id, {"step_number": 0, "kind": "recall", "started_at": self.clock(),
                                         "observations": recalled})
        try:
            state, answer, error, count = self._loop(run_id, on_step)
        except self.store.errors as exc:  # its end cannot be written now: settle() writes it later
            self.unfinished[run_id] = (incident, f"the database went away during the run ({describe(exc)})")
            raise
        finally:
            with self.memory.lock:
                self.memory.protect_from = None
                self.memory.compact(self.steps)
                self.memory.save(self.steps)
        self.store.finish_run(run_id, state, answer, error)
        if incident is not None:
            self._record_on_incident(incident, run_id, state, error)
        if self.metrics is not None:
            self.metrics.observe_run(state)
        run = self.store.run(run_id) or {}
        diagnosis = Diagnosis.of(run, self.store)
        row = self.store.incident(incident) if incident is not None else None
        if diagnosis is not None and row is not None:  # the diagnosis reaches people, not only the database
            self.events.append(Event("diagnosed", row, diagnosis=diagnosis.to_dict()))
        return Outcome(run_id, state, answer, count, error, diagnosis=diagnosis)

    def _loop(self, run_id: int, on_step: Callable[[ActionStep], None] | None) -> tuple[str, str | None, str | None, int]:
        """The step loop that works on smolagents 1.26 (see NOTES.md): (state, answer, error, steps)."""
        self.agent.interrupt_switch = False
        deadline = time.monotonic() + self.config.agent.run_timeout
        done: set[str] = set()
        for number in range(1, self.config.agent.max_steps + 1):
            if self.interrupted.is_set():
                return INTERRUPTED, None, "the daemon is stopping", number - 1
            if time.monotonic() > deadline:
                return TIMEOUT, None, f"run took longer than {self.config.agent.run_timeout:g}s", number - 1
            self._guide(done)
            step, failure = self._take_step(number)
            calls = self.box.take_calls()
            self._audit_unran(step, calls)
            done.update(c.name for c in calls if c.ok)
            if (step.error is not None or not calls) and hasattr(self.model, "nudge"):
                self.model.nudge()
            self.store.add_step(run_id, step_row(step, calls))
            if self.metrics is not None:
                self.metrics.observe_step()
            if on_step is not None:
                on_step(step)
            if failure is not None:
                kind = TIMEOUT if is_timeout(failure) else (
                    MODEL_ERROR if isinstance(failure, AgentGenerationError) else CRASHED)
                return kind, None, str(failure).split("\nTraceback")[0].strip()[:500], number
            if step.is_final_answer:
                return SUCCESS, str(step.action_output), None, number
        steps = self.config.agent.max_steps
        return MAX_STEPS, None, f"no final_answer within {steps} steps; a reply that is not one is not kept", steps

    def _audit_unran(self, step: ActionStep, calls: list[Any]) -> None:
        """A remediate call the tool never ran (not offered, bad arguments) is audited like a refused one."""
        message = step.model_output_message
        asked = [c.function for c in (message.tool_calls if message is not None else None) or []
                 if c.function.name == "remediate"]
        for call in asked[sum(c.name == "remediate" for c in calls):]:
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            self.store.audit_remediation(
                str(arguments.get("name"))[:128], str(arguments.get("action"))[:128], dry_run=True, ok=False,
                detail=f"refused: invalid call {urls.redact_text(json.dumps(call.arguments, default=str))[:300]}",
                run_id=self.box.run_id)

    def _guide(self, done: set[str]) -> None:
        """With ``agent.guided``, offer the model only the tools that make sense next."""
        offer = getattr(self.model, "offer", None)
        if offer is None:
            return
        if not self.config.agent.guided:
            offer(None)
            return
        tools = self.agent.tools
        pending = next((name for name in GUIDED_ORDER if name in tools and name not in done), None)
        if pending == "record_diagnosis":
            offer({pending}, populate_template(self.templates["diagnose_hint"], {"reading": self.box.reading()}))
        elif pending is not None:
            offer({pending})
        else:
            offer({"final_answer"} | ({"remediate"} - done if self._may_remediate() else set()),
                  self.templates["answer_hint"])

    def _may_remediate(self) -> bool:
        """A guided (small) model may only repeat a known fix: remediate is offered after an actionable
        diagnosis that names a related past incident, never to improvise one."""
        if "remediate" not in self.agent.tools or self.box.run_id is None:
            return False
        diagnosis = Diagnosis.of(self.store.run(self.box.run_id) or {}, self.store)
        return diagnosis is not None and diagnosis.actionable and diagnosis.related_incident is not None

    def _take_step(self, number: int) -> tuple[ActionStep, BaseException | None]:
        """One step, ended the way ``run()`` ends it (end time, callbacks), then appended to memory.

        Returns the step and the failure that must end the run, if any: a model error, or a bug.
        """
        step = ActionStep(step_number=number, timing=Timing(start_time=time.time()))
        failure: BaseException | None = None
        try:
            output = self.agent.step(step)
            step.is_final_answer, step.action_output = output.is_final_answer, output.output
        except AgentGenerationError as exc:  # the model or its server failed
            step.error, failure = exc, exc
        except AgentError as exc:  # the model's mistake: it reads the error in the next step
            step.error = exc
        except Exception as exc:  # a bug: keep what we have, end the run, never crash the daemon
            log.exception("agent step crashed")
            step.error, failure = AgentError(f"{type(exc).__name__}: {exc}", self.agent.logger), exc
        self.agent._finalize_step(step)
        with self.memory.lock:
            self.steps.append(step)
        return step, failure

    def settle(self) -> None:
        """End the runs a lost database cut short as interrupted, with their incidents, once it answers again
        (raises the database's error while it does not)."""
        for run_id, (incident, why) in list(self.unfinished.items()):
            self.store.finish_run(run_id, INTERRUPTED, None, why)
            if incident is not None:
                self._record_on_incident(incident, run_id, INTERRUPTED, why)
            del self.unfinished[run_id]

    def _record_on_incident(self, incident: int, run_id: int, state: str, error: str | None) -> None:
        reason = f": {error}" if error else ""
        note = None if state == SUCCESS else f"agent run #{run_id} ended in {state}{reason}; the detection stands"
        self.tracker.annotate(incident, note, agent_state=state)

    def take_events(self) -> list[Event]:
        events, self.events = self.events, []
        return events
