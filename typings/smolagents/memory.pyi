from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from smolagents.models import ChatMessage
from smolagents.monitoring import Timing, TokenUsage
from smolagents.utils import AgentError

@dataclass
class ToolCall:
    name: str
    arguments: Any
    id: str

@dataclass
class MemoryStep:
    def to_messages(self, summary_mode: bool = False) -> list[ChatMessage]: ...

@dataclass
class ActionStep(MemoryStep):
    step_number: int
    timing: Timing
    model_input_messages: list[ChatMessage] | None = None
    tool_calls: list[ToolCall] | None = None
    error: AgentError | None = None
    model_output_message: ChatMessage | None = None
    model_output: str | list[dict[str, Any]] | None = None
    code_action: str | None = None
    observations: str | None = None
    observations_images: list[Any] | None = None
    action_output: Any = None
    token_usage: TokenUsage | None = None
    is_final_answer: bool = False

@dataclass
class PlanningStep(MemoryStep):
    model_input_messages: list[ChatMessage]
    model_output_message: ChatMessage
    plan: str
    timing: Timing
    token_usage: TokenUsage | None = None

@dataclass
class TaskStep(MemoryStep):
    task: str
    task_images: list[Any] | None = None

@dataclass
class SystemPromptStep(MemoryStep):
    system_prompt: str

class AgentMemory:
    system_prompt: SystemPromptStep
    steps: list[MemoryStep]
    def __init__(self, system_prompt: str) -> None: ...
    def reset(self) -> None: ...
    def get_succinct_steps(self) -> list[dict[str, Any]]: ...
    def get_full_steps(self) -> list[dict[str, Any]]: ...

class CallbackRegistry:
    def __init__(self) -> None: ...
    def register(self, step_cls: type[MemoryStep], callback: Callable[..., Any]) -> None: ...
    def callback(self, memory_step: MemoryStep, **kwargs: Any) -> None: ...
