"""Model choice, and the model behind a server, built for small models.

Model choice (``model.id``): ``auto`` asks Ollama's ``/api/tags`` for ``model.name`` and uses it
when present, else the ``builtin`` triage model; any other value is a litellm model id
(``ollama_chat/llama3.2``). litellm is imported here only, lazily, with its internet price-list
fetch turned off.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
from smolagents import Tool
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, LiteLLMModel, Model

from monitor.agent.triage import TriageModel
from monitor.config import ModelConfig
from monitor.core import urls

log = logging.getLogger("monitor.agent.models")

NUDGE_TEMPERATURE = 0.8  # the temperature of a request after a step that called no tool, or failed


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


def choose_model(cfg: ModelConfig, *, observe: Callable[[float, int, int], None] | None = None) -> tuple[Model, str, str]:
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
    litellm.register_model(
        {
            model_id: {
                "litellm_provider": provider(model_id),
                "mode": "chat",
                "max_tokens": cfg.num_ctx,
                "max_input_tokens": cfg.num_ctx,
                "max_output_tokens": cfg.max_tokens,
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
                "supports_function_calling": True,
            }
        }
    )


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
        arguments = (
            tool.argument_schema()
            if hasattr(tool, "argument_schema")
            else {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 300}}, "required": ["answer"]}
        )
        choices.append(
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "arguments"],
                "properties": {"name": {"type": "string", "enum": [tool.name]}, "arguments": arguments},
            }
        )
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
    return ChatMessageToolCall(
        function=ChatMessageToolCallFunction(name=data["name"], arguments=arguments or {}),
        id=f"call_{uuid.uuid4().hex[:8]}",
        type="function",
    )


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

    def __init__(self, model_id: str, cfg: ModelConfig, observe: Callable[[float, int, int], None] | None = None) -> None:
        _prepare_litellm(model_id, cfg)
        options: dict[str, Any] = {"num_ctx": cfg.num_ctx} if is_ollama(model_id) else {}
        if cfg.api_key or (not is_ollama(model_id) and api_base(cfg, model_id)):
            options["api_key"] = cfg.api_key or "none"  # local OpenAI-compatible servers need no key
        super().__init__(
            model_id=model_id,
            api_base=api_base(cfg, model_id),
            timeout=cfg.timeout,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            **options,
        )
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

    def generate(
        self,
        messages: list[ChatMessage],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        tools = [t for t in tools_to_call_from or [] if self.offered is None or t.name in self.offered] or (tools_to_call_from or [])
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
        message = self._generate(messages, stop_sequences, schema, None, **kwargs)
        call = parse_tool_call(message.content if isinstance(message.content, str) else "")
        if call is not None:
            message.tool_calls, message.content = [call], ""
        return message

    def create_client(self) -> Any:
        """litellm, wrapped so that the guided hint goes with each request."""
        return HintedClient(super().create_client(), self)

    def _generate(
        self, messages: list[ChatMessage], stop_sequences: list[str] | None, response_format: Any, tools: list[Tool] | None, **kwargs: Any
    ) -> ChatMessage:
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
            self.observe(time.perf_counter() - started, usage.input_tokens if usage else 0, usage.output_tokens if usage else 0)


class HintedClient:
    """litellm, with the guided hint as a message of its own at the end of each request (merged into the
    last observation, small models overlook it)."""

    def __init__(self, litellm: Any, model: ServedModel) -> None:
        self.litellm, self.model = litellm, model

    def completion(self, **kwargs: Any) -> Any:
        if self.model.hint:
            kwargs["messages"] = [*kwargs["messages"], {"role": "user", "content": self.model.hint}]
        return self.litellm.completion(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.litellm, name)
