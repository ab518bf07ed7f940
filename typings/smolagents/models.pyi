from dataclasses import dataclass
from enum import Enum
from typing import Any

from smolagents.monitoring import TokenUsage
from smolagents.tools import Tool

def get_tool_json_schema(tool: Tool) -> dict[str, Any]: ...

class MessageRole(str, Enum):  # noqa: UP042 (smolagents' own bases: stubtest compares them)
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL_CALL = "tool-call"
    TOOL_RESPONSE = "tool-response"
    @classmethod
    def roles(cls) -> list[str]: ...

@dataclass
class ChatMessageToolCallFunction:
    arguments: Any
    name: str
    description: str | None = None

@dataclass
class ChatMessageToolCall:
    function: ChatMessageToolCallFunction
    id: str
    type: str

@dataclass
class ChatMessage:
    role: MessageRole
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ChatMessageToolCall] | None = None
    raw: Any | None = None
    token_usage: TokenUsage | None = None
    @classmethod
    def from_dict(cls, data: dict[str, Any], raw: Any | None = None, token_usage: TokenUsage | None = None) -> ChatMessage: ...
    def dict(self) -> dict[str, Any]: ...

class Model:
    model_id: str | None
    kwargs: dict[str, Any]
    def __init__(
        self,
        flatten_messages_as_text: bool = False,
        tool_name_key: str = "name",
        tool_arguments_key: str = "arguments",
        model_id: str | None = None,
        **kwargs: Any,
    ) -> None: ...
    def generate(
        self,
        messages: list[ChatMessage],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Tool] | None = None,
        **kwargs: Any,
    ) -> ChatMessage: ...

class ApiModel(Model):
    client: Any
    def __init__(
        self,
        model_id: str,
        custom_role_conversions: dict[str, str] | None = None,
        client: Any | None = None,
        requests_per_minute: float | None = None,
        retry: bool = True,
        **kwargs: Any,
    ) -> None: ...
    def create_client(self) -> Any: ...

class LiteLLMModel(ApiModel):
    api_base: str | None
    api_key: str | None
    def __init__(
        self,
        model_id: str | None = None,
        api_base: str | None = None,
        api_key: str | None = None,
        custom_role_conversions: dict[str, str] | None = None,
        flatten_messages_as_text: bool | None = None,
        **kwargs: Any,
    ) -> None: ...
    # generate: as Model's (an agent passes ChatMessages; LiteLLMModel also takes plain dicts)
