"""The seam between monitor and smolagents: the agent as the step loop uses it, typed, and the end of
a step as ``run()`` ends it, through smolagents' public API only.

smolagents ships no types. ``typings/smolagents/*.pyi`` types the part monitor uses (steps, memory,
models, tools, the agent's ``step``/``run``, callbacks); ``tests/test_seam.py`` checks those stubs
against the installed smolagents with mypy's stubtest, so a rename there fails a test here.

smolagents 1.26's own step-by-step loop (in its docs) is broken: ``ActionStep`` needs a ``Timing``,
and ``agent.step`` returns an ``ActionOutput``, never None. :func:`take_step` is one step done right:
a model's mistake (``AgentError``) is recorded on the step for the model to read next, a failure of
the model or its server (``AgentGenerationError``) or a bug ends the run, and the step is finished
as ``run()`` finishes it (:func:`finish_step`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from smolagents.agents import ActionOutput
from smolagents.memory import ActionStep, AgentMemory, CallbackRegistry
from smolagents.models import Model
from smolagents.monitoring import AgentLogger, Timing
from smolagents.tools import Tool
from smolagents.utils import AgentError, AgentGenerationError

log = logging.getLogger("monitor.agent.seam")


class Agent(Protocol):
    """What the step loop uses of a smolagents ``ToolCallingAgent``."""

    model: Model
    tools: dict[str, Tool]
    max_steps: int
    memory: AgentMemory
    logger: AgentLogger
    step_callbacks: CallbackRegistry
    interrupt_switch: bool

    def step(self, memory_step: ActionStep) -> ActionOutput: ...


@runtime_checkable
class Guided(Protocol):
    """A model the loop can steer (``models.ServedModel``): which tools it is offered, and a nudge."""

    def offer(self, names: set[str] | None, hint: str | None = None) -> None: ...

    def nudge(self) -> None: ...


def new_step(number: int, clock: Callable[[], float] = time.time) -> ActionStep:
    return ActionStep(step_number=number, timing=Timing(start_time=clock()))


def finish_step(agent: Agent, step: ActionStep, clock: Callable[[], float] = time.time) -> None:
    """End a step as ``run()`` does: its end time, then the step callbacks (which may edit it)."""
    step.timing.end_time = clock()
    agent.step_callbacks.callback(step, agent=agent)


def take_step(agent: Agent, number: int) -> tuple[ActionStep, BaseException | None]:
    """Step ``number``, finished but not yet in memory, and the failure that must end the run, if any."""
    step = new_step(number)
    failure: BaseException | None = None
    try:
        output = agent.step(step)
        step.is_final_answer, step.action_output = bool(output.is_final_answer), output.output
    except AgentGenerationError as exc:  # the model or its server failed
        step.error, failure = exc, exc
    except AgentError as exc:  # the model's mistake: it reads the error in the next step
        step.error = exc
    except Exception as exc:  # a bug: keep what we have, end the run, never crash the daemon
        log.exception("agent step crashed")
        step.error, failure = AgentError(f"{type(exc).__name__}: {exc}", agent.logger), exc
    finish_step(agent, step)
    return step, failure
