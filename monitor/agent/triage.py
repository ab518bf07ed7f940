"""The builtin model: deterministic triage that works with no LLM at all.

``TriageModel`` is a smolagents ``Model``. It reads the task (the target, the
incident and the pattern) and what its tools have returned so far, and calls
the tools a careful operator would, in order:

1. ``check_target``: is the problem still there?
2. ``recent_results``: how often has it failed lately, and how?
3. ``search_incidents``: which past incidents are like this one, and what fixed them?
4. ``record_diagnosis``: write down the literal root cause and the past incident
   whose fix applies: the one most like the evidence among those with the same
   root cause on this target or on a component the evidence names, if it is
   close enough (``monitor.memory.recall.choose``), else none;
5. ``final_answer``: the same diagnosis.

It goes through the same agent loop, memory and callbacks as an LLM, so the
product behaves the same offline, in the demo and in tests. Token usage is an
estimate (characters / 4).
"""

from __future__ import annotations

import re
from typing import Any

from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole, Model
from smolagents.monitoring import TokenUsage

from monitor.core.causes import ROOT_CAUSES, root_cause_of
from monitor.memory import recall
from monitor.memory.candidates import Candidate, parse_listing

ORDER = ["check_target", "recent_results", "search_incidents", "record_diagnosis", "final_answer"]


def text_of(message: ChatMessage | dict[str, Any]) -> str:
    content = message.content if isinstance(message, ChatMessage) else message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def task_fields(task: str) -> dict[str, str]:
    """Target, incident and pattern from the task sentence (monitor/agent/prompts/agent.yaml, ``task``)."""
    found = {
        "target": re.search(r'target "([^"]+)"', task),
        "incident": re.search(r"incident #(\d+) is open", task),
        "pattern": re.search(r"detectors report (\S+?):", task),
    }
    return {key: match.group(1) for key, match in found.items() if match}


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


def related(target: str, cause: str, listing: str) -> Candidate | None:
    """The past incident whose fix applies, read from search_incidents' candidates: the applicable one most
    like the evidence, or None (:func:`monitor.memory.recall.choose`); never the first or the newest."""
    candidates, floor = parse_listing(listing, target)
    return recall.choose(candidates, recall.Evidence(target, reading=cause), floor=floor)


class TriageModel(Model):
    """A deterministic operator: see the module docstring."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(model_id="builtin", **kwargs)

    def generate(
        self,
        messages: list[ChatMessage],
        stop_sequences: list[str] | None = None,
        response_format: dict[str, str] | None = None,
        tools_to_call_from: list[Any] | None = None,
        **kwargs: Any,
    ) -> ChatMessage:
        texts = [text_of(m) for m in messages]
        start = last_task(texts)
        task = texts[start]
        history = tool_history(texts[start + 1 :])
        context = "\n".join(texts[:start])
        available = {t.name for t in tools_to_call_from or []}
        usage = TokenUsage(input_tokens=sum(map(len, texts)) // 4, output_tokens=40)
        if not tools_to_call_from:
            return ChatMessage(role=MessageRole.ASSISTANT, content=self.diagnose(task, history, context), token_usage=usage)
        name, arguments = self.next_call(task, history, context, available)
        call = ChatMessageToolCall(
            function=ChatMessageToolCallFunction(name=name, arguments=arguments), id=f"call_{len(history) + 1}", type="function"
        )
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call], token_usage=usage)

    def next_call(self, task: str, history: list[tuple[str, str]], context: str, available: set[str]) -> tuple[str, dict[str, Any]]:
        fields = task_fields(task)
        target = fields.get("target")
        if target is None:
            return "final_answer", {"answer": "The task names no target, so there is nothing to investigate."}
        done = {name for name, _ in history}
        pattern = fields.get("pattern") or "failure"
        for step in ORDER:
            if step in done or (step not in available and step != "final_answer"):
                continue
            if step == "check_target":
                return step, {"name": target}
            if step == "recent_results":
                return step, {"name": target, "n": 10}
            if step == "search_incidents":
                return step, {"query": f"{target} {self.cause(history, pattern)}", "k": 5}
            if step == "record_diagnosis":
                return step, self.findings(target, pattern, history, context)
        found = self.findings(target, pattern, history, context)
        return "final_answer", {"answer": f"{found['root_cause']}: {found['summary']}"}

    @staticmethod
    def cause(history: list[tuple[str, str]], pattern: str) -> str:
        """The root cause the re-check (else the latest failure in history) points to."""
        observed = dict(history)
        lines = [observed.get("check_target", "")] + observed.get("recent_results", "").splitlines()[1:]
        for line in lines:
            match = re.search(r"\b(OK|WARNING|CRITICAL) status=(\S+) latency=\S+(?: (\w+):)?(.*)", line)
            if match is None:
                continue
            state, status, error, detail = match.groups()
            if state == "OK" and not any(p in pattern for p in ("flapping", "latency_drift", "window")):
                return "recovered"
            if state == "OK" and "window" in pattern:
                continue  # failures scattered among passes: the cause is that of the latest failure
            return root_cause_of(error, int(status) if status.isdigit() else None, detail, pattern)
        return root_cause_of("connection_error", pattern=pattern)

    def findings(self, target: str, pattern: str, history: list[tuple[str, str]], context: str) -> dict[str, Any]:
        """record_diagnosis arguments: the literal root cause, and the past incident whose fix applies."""
        cause = self.cause(history, pattern)
        past = related(target, cause, dict(history).get("search_incidents", ""))
        summary = f"{target}: {ROOT_CAUSES[cause]} (detectors: {pattern})."
        if past:
            summary += f" #{past.id} on {past.target}: '{past.fix or 'no resolution noted'}'"
        else:
            summary += " No past incident is certain to apply."
        return {
            "root_cause": cause,
            "related_incident": f"#{past.id}" if past else "no",
            "confidence": "high" if past or cause == "recovered" else "medium",
            "summary": summary[:400],
        }

    def diagnose(self, task: str, history: list[tuple[str, str]], context: str) -> str:
        fields = task_fields(task)
        found = self.findings(fields.get("target", "the target"), fields.get("pattern") or "failure", history, context)
        return f"{found['root_cause']}: {found['summary']}"
