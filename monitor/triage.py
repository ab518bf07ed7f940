"""The builtin model: deterministic triage that works with no LLM at all.

``TriageModel`` is a smolagents ``Model``. It reads the task (the target, the
incident and the pattern) and what its tools have returned so far, and calls
the tools a careful operator would, in order:

1. ``check_target``: is the problem still there?
2. ``recent_results``: how often has it failed lately, and how?
3. ``search_incidents``: how did similar incidents end, and what fixed them?
4. ``record_diagnosis``: write down the diagnosis, the pattern and the most
   similar past fix;
5. ``final_answer``: the same diagnosis.

It goes through the same agent loop, memory and callbacks as an LLM, so the
product behaves the same offline, in the demo and in tests. Token usage is an
estimate (characters / 4).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model
from smolagents.monitoring import TokenUsage

ORDER = ["check_target", "recent_results", "search_incidents", "record_diagnosis", "final_answer"]

CAUSES = {
    "timeout": "the service is overloaded or hung: checks time out",
    "connection_refused": "the process is down or not listening on its port",
    "connection_reset": "the process crashes or a proxy drops connections",
    "dns": "the host name no longer resolves (DNS change or outage)",
    "tls": "a TLS or certificate problem (expired, rotated or misconfigured certificate)",
    "protocol": "something other than the service answers on that port",
    "too_many_redirects": "a redirect loop in the routing or auth configuration",
    "body_too_large": "the endpoint returns far more data than a health check should",
    "unexpected_status": "the application itself is failing (error status codes)",
    "condition_failed": "the service answers but its health content or latency is off",
}


def text_of(message: ChatMessage | dict[str, Any]) -> str:
    content = message.content if isinstance(message, ChatMessage) else message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def field(task: str, name: str) -> str | None:
    match = re.search(rf"^\s*{name}:\s*(.+?)\s*$", task, re.MULTILINE)
    return match.group(1) if match else None


def last_task(texts: list[str]) -> int:
    for index in range(len(texts) - 1, -1, -1):
        if texts[index].startswith("New task:"):
            return index
    return 0


def tool_history(texts: list[str]) -> list[tuple[str, str]]:
    """(tool name, observation) pairs, in call order, from the flattened history."""
    history: list[tuple[str, str]] = []
    for text in texts:
        if text.startswith("Calling tools:"):
            history.extend((name, "") for name in re.findall(r"'function': \{'name': '(\w+)'", text))
        elif text.startswith("Observation:") and history:
            name, _ = history[-1]
            history[-1] = (name, text.removeprefix("Observation:").strip())
        elif text.startswith(("Call id:", "Error:")) and history:
            name, _ = history[-1]
            history[-1] = (name, "ERROR: " + text)
    return history


def past_fix(*observations: str) -> tuple[str, str] | None:
    """The first incident line with a resolution: (incident ref, resolution)."""
    for text in observations:
        for line in text.splitlines():
            match = re.search(r"(#\d+)[^|]*\|.*?resolution: ([^|]+)", line)
            if match:
                return match.group(1), match.group(2).strip()
    return None


class TriageModel(Model):
    """A deterministic operator: see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(model_id="builtin", **kwargs)

    def generate(self, messages: list[ChatMessage], stop_sequences: list[str] | None = None,
                 response_format: dict[str, str] | None = None, tools_to_call_from: list[Any] | None = None,
                 **kwargs: Any) -> ChatMessage:
        texts = [text_of(m) for m in messages]
        start = last_task(texts)
        task = texts[start]
        history = tool_history(texts[start + 1:])
        context = "\n".join(texts[:start])
        available = {t.name for t in tools_to_call_from or []}
        usage = TokenUsage(input_tokens=sum(map(len, texts)) // 4, output_tokens=40)
        if not tools_to_call_from:
            return ChatMessage(role=MessageRole.ASSISTANT, content=self.diagnose(task, history, context),
                               token_usage=usage)
        name, arguments = self.next_call(task, history, context, available)
        call = ChatMessageToolCall(
            function=ChatMessageToolCallFunction(name=name, arguments=arguments),
            id=f"call_{len(history) + 1}", type="function",
        )
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call], token_usage=usage)

    def next_call(self, task: str, history: list[tuple[str, str]], context: str,
                  available: set[str]) -> tuple[str, dict[str, Any]]:
        target = field(task, "target")
        if target is None:
            return "final_answer", {"answer": "The task names no target, so there is nothing to investigate."}
        done = {name for name, _ in history}
        incident = field(task, "incident")
        pattern = field(task, "pattern") or "failure"
        for step in ORDER:
            if step in done or (step not in available and step != "final_answer"):
                continue
            if step == "check_target":
                return step, {"name": target}
            if step == "recent_results":
                return step, {"name": target, "n": 10}
            if step == "search_incidents":
                errors = " ".join(self.errors(history))
                return step, {"query": f"{target} {pattern} {errors}".strip(), "k": 3}
            if step == "record_diagnosis" and incident and incident.isdigit():
                diagnosis, cause = self.findings(task, history, context)
                return step, {"incident_id": int(incident), "diagnosis": diagnosis, "suspected_cause": cause}
        return "final_answer", {"answer": self.diagnose(task, history, context)}

    @staticmethod
    def errors(history: list[tuple[str, str]]) -> list[str]:
        kinds = Counter(re.findall(r"\b([a-z_]+):", " ".join(obs for name, obs in history
                                                             if name in ("check_target", "recent_results"))))
        return [k for k, _ in kinds.most_common() if k in CAUSES][:2]

    def findings(self, task: str, history: list[tuple[str, str]], context: str) -> tuple[str, str]:
        observed = dict(history)
        target = field(task, "target") or "the target"
        pattern = field(task, "pattern") or "failure"
        recheck = observed.get("check_target", "")
        if recheck.startswith("ERROR"):
            now = f"could not be re-checked ({recheck[:120]})"
        elif match := re.search(r"\b(?:CRITICAL|WARNING)\b ?(.*)", recheck.splitlines()[0]):
            now = "is still failing: " + match.group(1)[:160]
        else:
            now = "passes again on re-check"
        recent = observed.get("recent_results", "").splitlines()
        trend = recent[0].split(": ", 1)[-1] if recent and not recent[0].startswith("ERROR") else "history unknown"
        errors = self.errors(history)
        cause = CAUSES.get(errors[0], "unknown: no error kind stood out") if errors else (
            "a transient problem: it did not repeat on re-check" if "passes again" in now else "unknown")
        fix = past_fix(observed.get("search_incidents", ""), context)
        diagnosis = f"{target} {now}. Pattern: {pattern} ({trend})."
        if fix:
            diagnosis += f" Most similar past incident {fix[0]} was fixed by: {fix[1]}."
            cause += f". Past fix ({fix[0]}): {fix[1]}"
        else:
            diagnosis += " No similar past incident with a known fix."
        return diagnosis, cause

    def diagnose(self, task: str, history: list[tuple[str, str]], context: str) -> str:
        diagnosis, cause = self.findings(task, history, context)
        return f"{diagnosis} Suspected cause: {cause}."
