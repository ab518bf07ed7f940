"""The step loop: one investigation, one step at a time, each step saved to the store as it ends.

It ends in one of the states the investigator's docstring lists; a guided model (``agent.guided``)
is offered only the tools that make sense next (:data:`GUIDED_ORDER`, then ``final_answer``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from smolagents.agents import populate_template
from smolagents.memory import ActionStep
from smolagents.utils import AgentGenerationError

from monitor.agent import seam
from monitor.agent.diagnosis import CRASHED, INTERRUPTED, MAX_STEPS, MODEL_ERROR, SUCCESS, TIMEOUT, Diagnosis
from monitor.agent.models import is_timeout
from monitor.agent.tools import Toolbox, registered
from monitor.agent.tools.base import ToolCall
from monitor.config import AgentConfig
from monitor.core import urls
from monitor.core.runs import NewStep
from monitor.memory import recall
from monitor.memory.candidates import clip
from monitor.metrics import Metrics
from monitor.store import Store

# What a careful operator does, in order; a guided model is offered one of these at a time, then final_answer.
GUIDED_ORDER = ("check_target", "recent_results", "search_incidents", "record_diagnosis")
HINT_CANDIDATES = 5  # as many as search_incidents shows by default
HINT_CHARS = 240  # the evidence restated; a candidate's symptom gets half, its fix a third
Ending = tuple[str, str | None, str | None, int]  # (state, answer, error, steps taken)


def guided_order(offered: Collection[str]) -> list[str]:
    """The steps a guided model takes among the tools ``offered``: the built-in evidence, then each registered tool
    (a module's own: its evidence too), then the diagnosis."""
    *evidence, diagnose = GUIDED_ORDER
    return [name for name in [*evidence, *registered(), diagnose] if name in offered]


def step_row(step: ActionStep, calls: list[ToolCall]) -> NewStep:
    """An ActionStep as a row of ``agent_steps``."""
    usage = step.token_usage
    return NewStep(
        step_number=step.step_number,
        kind="action",
        started_at=step.timing.start_time,
        duration=step.timing.duration,
        model_output=step.model_output if isinstance(step.model_output, str) else None,
        tool_calls=json.dumps([{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls or []], default=str),
        observations=step.observations,
        error=str(step.error) if step.error else None,
        input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
        is_final=int(step.is_final_answer),
        tool_ok=int(all(c.ok for c in calls)) if calls else None,
        tool_seconds=sum(c.seconds for c in calls) if calls else None,
    )


def diagnose_facts(box: Toolbox) -> dict[str, Any]:
    """What the closing instruction of record_diagnosis restates, next to the choice: the reading, what the
    target shows now (quoted: the target wrote it), the candidates whose fix could apply, most similar first
    (as offered), and the one recall finds closest (``recall.choose``, the builtin model's pick), if any."""
    reading = box.reading()
    evidence = box.current_evidence()
    fitting = [c for c in box.shown.values() if c.id in box.seen and recall.applicable(c, evidence)]
    shown = sorted(fitting, key=lambda c: -c.score)[:HINT_CANDIDATES] if evidence.actionable else []
    embedder = box.recall_embedder()
    closest = recall.choose(shown, evidence, floor=recall.MIN_COSINES.get(embedder.name, 0.0) if embedder else 0.0)
    return {
        "reading": reading,
        "evidence": clip(evidence.text(), HINT_CHARS).replace("```", "ˋˋˋ"),
        "closest": closest.id if closest else None,
        "candidates": [
            {
                "id": c.id,
                "target": c.target,
                "root_cause": c.root_cause or "unknown",
                "symptom": clip(c.symptom, HINT_CHARS // 2),
                "fix": clip(c.fix or "none noted", HINT_CHARS // 3),
            }
            for c in shown
        ],
    }


class StepLoop:
    """One investigation's steps, on the investigator's agent, toolbox and store (made for each run)."""

    def __init__(
        self,
        agent: seam.Agent,
        box: Toolbox,
        store: Store,
        settings: AgentConfig,
        templates: dict[str, Any],
        *,
        lock: threading.RLock,
        interrupted: threading.Event,
        metrics: Metrics | None = None,
    ) -> None:
        self.agent, self.box, self.store, self.settings, self.templates = agent, box, store, settings, templates
        self.lock, self.interrupted, self.metrics = lock, interrupted, metrics

    def run(self, run_id: int, on_step: Callable[[ActionStep], None] | None = None) -> Ending:
        """Take steps until the model answers, fails, or runs out of steps or time."""
        self.agent.interrupt_switch = False
        deadline = time.monotonic() + self.settings.run_timeout
        done: set[str] = set()
        for number in range(1, self.settings.max_steps + 1):
            if self.interrupted.is_set():
                return INTERRUPTED, None, "the daemon is stopping", number - 1
            if time.monotonic() > deadline:
                return TIMEOUT, None, f"run took longer than {self.settings.run_timeout:g}s", number - 1
            step, failure = self._step(run_id, number, done, on_step)
            if failure is not None:
                kind = TIMEOUT if is_timeout(failure) else (MODEL_ERROR if isinstance(failure, AgentGenerationError) else CRASHED)
                return kind, None, str(failure).split("\nTraceback")[0].strip()[:500], number
            if step.is_final_answer:
                return SUCCESS, str(step.action_output), None, number
        steps = self.settings.max_steps
        return MAX_STEPS, None, f"no final_answer within {steps} steps; a reply that is not one is not kept", steps

    def _step(
        self, run_id: int, number: int, done: set[str], on_step: Callable[[ActionStep], None] | None
    ) -> tuple[ActionStep, BaseException | None]:
        """One step, guided, taken, kept in memory, audited and saved."""
        self._guide(done)
        step, failure = seam.take_step(self.agent, number)
        with self.lock:
            self.agent.memory.steps.append(step)
        calls = self.box.take_calls()
        self._audit_unran(step, calls)
        done.update(c.name for c in calls if c.ok)
        model = self.agent.model
        if (step.error is not None or not calls) and isinstance(model, seam.Guided):
            model.nudge()
        self.store.runs.add_step(run_id, step_row(step, calls))
        if self.metrics is not None:
            self.metrics.observe_step()
        if on_step is not None:
            on_step(step)
        return step, failure

    def _audit_unran(self, step: ActionStep, calls: list[ToolCall]) -> None:
        """A remediate call the tool never ran (not offered, bad arguments) is audited like a refused one."""
        message = step.model_output_message
        asked = [c.function for c in (message.tool_calls if message is not None else None) or [] if c.function.name == "remediate"]
        for call in asked[sum(c.name == "remediate" for c in calls) :]:
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            self.store.runs.audit_remediation(
                str(arguments.get("name"))[:128],
                str(arguments.get("action"))[:128],
                dry_run=True,
                ok=False,
                detail=f"refused: invalid call {urls.redact_text(json.dumps(call.arguments, default=str))[:300]}",
                run_id=self.box.run_id,
            )

    def _guide(self, done: set[str]) -> None:
        """With ``agent.guided``, offer the model only the tools that make sense next."""
        model = self.agent.model
        if not isinstance(model, seam.Guided):
            return
        if not self.settings.guided:
            model.offer(None)
            return
        tools = self.agent.tools
        pending = next((name for name in guided_order(tools) if name not in done), None)
        if pending == "record_diagnosis":
            model.offer({pending}, populate_template(self.templates["diagnose_hint"], diagnose_facts(self.box)))
        elif pending is not None:
            model.offer({pending})
        else:
            model.offer({"final_answer"} | ({"remediate"} - done if self._may_remediate() else set()), self.templates["answer_hint"])

    def _may_remediate(self) -> bool:
        """A guided (small) model may only repeat a known fix: remediate is offered after an actionable
        diagnosis that names a related past incident, never to improvise one."""
        if "remediate" not in self.agent.tools or self.box.run_id is None:
            return False
        diagnosis = Diagnosis.of(self.store.runs.run(self.box.run_id), self.store)
        return diagnosis is not None and diagnosis.actionable and diagnosis.related_incident is not None
