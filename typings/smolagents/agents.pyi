from abc import ABCMeta
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smolagents.memory import ActionStep, AgentMemory, CallbackRegistry, MemoryStep
from smolagents.models import ChatMessage, Model
from smolagents.monitoring import AgentLogger, LogLevel
from smolagents.tools import Tool

_StepCallbacks = list[Callable[..., Any]] | dict[type[MemoryStep], Callable[..., Any] | list[Callable[..., Any]]]

def populate_template(template: str, variables: dict[str, Any]) -> str: ...

@dataclass
class ActionOutput:
    output: Any
    is_final_answer: bool

class MultiStepAgent(metaclass=ABCMeta):
    model: Model
    tools: dict[str, Tool]
    max_steps: int
    memory: AgentMemory
    logger: AgentLogger
    step_callbacks: CallbackRegistry
    interrupt_switch: bool
    prompt_templates: dict[str, Any]
    def __init__(
        self,
        tools: list[Tool],
        model: Model,
        prompt_templates: dict[str, Any] | None = None,
        instructions: str | None = None,
        max_steps: int = 20,
        add_base_tools: bool = False,
        verbosity_level: LogLevel = ...,
        managed_agents: list[Any] | None = None,
        step_callbacks: _StepCallbacks | None = None,
        planning_interval: int | None = None,
        name: str | None = None,
        description: str | None = None,
        provide_run_summary: bool = False,
        final_answer_checks: list[Callable[..., Any]] | None = None,
        return_full_result: bool = False,
        logger: AgentLogger | None = None,
    ) -> None: ...
    def run(
        self,
        task: str,
        stream: bool = False,
        reset: bool = True,
        images: list[Any] | None = None,
        additional_args: dict[str, Any] | None = None,
        max_steps: int | None = None,
        return_full_result: bool | None = None,
    ) -> Any: ...
    def step(self, memory_step: ActionStep) -> ActionOutput: ...
    def write_memory_to_messages(self, summary_mode: bool = False) -> list[ChatMessage]: ...
    def interrupt(self) -> None: ...

class ToolCallingAgent(MultiStepAgent):
    def __init__(
        self,
        tools: list[Tool],
        model: Model,
        prompt_templates: dict[str, Any] | None = None,
        planning_interval: int | None = None,
        stream_outputs: bool = False,
        max_tool_threads: int | None = None,
        **kwargs: Any,
    ) -> None: ...
