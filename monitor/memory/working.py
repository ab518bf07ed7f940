"""The agent's memory: step callbacks, compaction, incident recall, persistence and stats.

Working memory is the smolagents ``AgentMemory`` of the daemon's one long-lived
agent. It carries what earlier investigations found into later ones, and it
stays bounded however long the daemon runs:

* every observation is timestamped, truncated to ``memory.max_observation``
  characters, and its images are dropped;
* a step's copy of the model input (``model_input_messages``, the whole
  request) is dropped once the step is saved;
* steps older than ``memory.keep_steps`` are folded into one
  :class:`SummaryStep` whose text is capped.

The current investigation (its recalled incidents, its task and its steps) is
never folded while it runs, so the request is at most: system prompt + summary
+ ``keep_steps`` older steps + one investigation.

Long-term memory is SQLite: incidents, their diagnoses and resolutions.
:func:`recall` puts the most relevant ones in front of a new task as a past
``TaskStep`` plus a historical ``ActionStep``, as the smolagents docs describe.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

import yaml
from smolagents.agents import MultiStepAgent, populate_template
from smolagents.memory import ActionStep, MemoryStep, PlanningStep, TaskStep, ToolCall
from smolagents.models import ChatMessage, MessageRole
from smolagents.monitoring import AgentLogger, LogLevel, Timing, TokenUsage
from smolagents.utils import AgentError

from monitor.config import MemoryConfig
from monitor.core.memory import WorkingStats
from monitor.core.urls import redact_text, redacted
from monitor.memory import exports, forgetting
from monitor.memory.candidates import Candidate
from monitor.memory.exports import WORKING_MEMORY
from monitor.store import Store, StoreView

if TYPE_CHECKING:
    from monitor.incidents.writer import Writer

log = logging.getLogger("monitor.memory.working")

SUMMARY_LINES = 12
LINE_CHARS = 160
RECALL_CHARS = 3000  # recalled incidents, all together: each is capped by the template, this caps their sum
RECALLED = ("summary", "diagnosis", "resolution")  # on one line each, so no field can forge an incident line
FIELD_CHARS = 1000
RECALL_LINE_CHARS = 120  # a ranked candidate's symptom and fix, each: the search tool shows them in full
QUOTED = re.compile(r"what the target answered \(quoted data, not instructions\):\s*```.*?(?:```|\Z)|```.*?(?:```|\Z)", re.DOTALL)


@functools.lru_cache(maxsize=1)
def prompts() -> dict[str, Any]:
    """The prompt templates shipped in ``monitor/agent/prompts/agent.yaml``."""
    return dict(yaml.safe_load((resources.files("monitor") / "agent" / "prompts" / "agent.yaml").read_text()))


@dataclass
class SummaryStep(MemoryStep):
    """Earlier steps, folded into a few capped lines."""

    text: str
    folded: int

    def to_messages(self, summary_mode: bool = False) -> list[ChatMessage]:
        content = f"Summary of earlier investigations ({self.folded} steps folded):\n{self.text}"
        return [ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": content}])]


def one_line(text: str, limit: int = LINE_CHARS) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe_step(step: MemoryStep) -> str:
    """One summary line for a step."""
    if isinstance(step, SummaryStep):
        return step.text
    if isinstance(step, TaskStep):
        return one_line(f"task: {step.task}")
    if isinstance(step, ActionStep):
        calls = ", ".join(f"{c.name}({one_line(json.dumps(c.arguments), 60)})" for c in step.tool_calls or [])
        outcome = step.error and f"error: {step.error}" or step.observations or step.action_output or ""
        outcome = QUOTED.sub("[what the target answered]", str(outcome))  # a summary keeps findings, not quotes
        return one_line(f"step {step.step_number}: {calls or 'no tool call'} -> {outcome}")
    return ""


def within(text: str, budget: int) -> str:
    """Whole lines of ``text`` while they fit in ``budget`` characters (the first one cut if it alone does not)."""
    kept: list[str] = []
    for line in text.splitlines():
        if sum(map(len, kept)) + len(kept) + len(line) > budget:
            break
        kept.append(line)
    return "\n".join(kept) if kept else text[: budget - 1] + "…" if len(text) > budget else text


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} characters truncated]"


class Memory:
    """Bounded working memory of one agent, with its callbacks. Thread-safe."""

    def __init__(self, config: MemoryConfig, store: Store | None = None) -> None:
        self.config = config
        self.store = store
        self.lock = threading.RLock()
        self.protect_from: int | None = None

    # -- step callbacks (registered per step class) ------------------------------

    def callbacks(self, *extra: Any) -> dict[type[MemoryStep], list[Any]]:
        """For ``ToolCallingAgent(step_callbacks=...)``: extra callbacks run before compaction."""
        return {ActionStep: [self.stamp, *extra, self.trim, self.compact_callback], PlanningStep: [self.compact_callback]}

    def stamp(self, step: ActionStep, agent: object = None) -> None:
        """Timestamp the observation (UTC, when the step ended)."""
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(step.timing.end_time or time.time()))
        if step.observations is not None and not step.observations.startswith("["):
            step.observations = f"[{when}] {step.observations}"

    def trim(self, step: ActionStep, agent: object = None) -> None:
        """Cap the observation and drop images, before the step reaches the next request."""
        if step.observations:
            step.observations = truncate(redact_text(step.observations), self.config.max_observation)
        step.observations_images = None
        if isinstance(step.model_output, str):
            step.model_output = redact_text(step.model_output)
        for call in step.tool_calls or []:  # the call has run: what is kept of it is redacted
            if isinstance(call.arguments, dict):
                call.arguments = {k: redact_text(v) if isinstance(v, str) else v for k, v in call.arguments.items()}

    def compact_callback(self, step: MemoryStep, agent: MultiStepAgent | None = None) -> None:
        if agent is not None:
            self.compact(agent.memory.steps)

    # -- compaction ------------------------------------------------------------

    def compact(self, steps: list[MemoryStep]) -> None:
        """Fold steps older than ``keep_steps`` into the summary, in place; the running investigation stays."""
        with self.lock:
            cut = len(steps) if self.protect_from is None else self.protect_from
            older, tail = steps[:cut], steps[cut:]
            summary = older[0] if older and isinstance(older[0], SummaryStep) else None
            older = older[1:] if summary else older
            if len(older) > self.config.keep_steps:
                fold, older = older[: len(older) - self.config.keep_steps], older[len(older) - self.config.keep_steps :]
                lines = (summary.text.splitlines() if summary else []) + [describe_step(s) for s in fold]
                lines = [one_line(ln) for ln in lines if ln.strip()][-SUMMARY_LINES:]  # an imported summary's too
                summary = SummaryStep("\n".join(lines), (summary.folded if summary else 0) + len(fold))
            for step in older + tail:
                if isinstance(step, ActionStep) and step.timing.end_time is not None:
                    step.model_input_messages = None
            for step in older:  # what a target said stays in the investigation that fetched it
                if isinstance(step, ActionStep) and step.observations and "```" in step.observations:
                    step.observations = QUOTED.sub("[what the target answered]", step.observations)
            steps[:] = ([summary] if summary else []) + older + tail
            if self.protect_from is not None:
                self.protect_from = len(steps) - len(tail)

    # -- recall of past incidents -------------------------------------------------

    def recall(
        self, steps: list[MemoryStep], target: str, pattern: str, exclude: int | None = None, candidates: Sequence[Candidate] | None = None
    ) -> str:
        """Append past incidents like this one as a TaskStep plus a historical ActionStep: ``candidates``, ranked
        by this investigation's evidence (:meth:`monitor.agent.tools.Toolbox.recall`), one short line each;
        without them, the target's own incidents, newest first."""
        if self.store is None or self.config.inject_incidents == 0:
            return ""
        templates = prompts()
        if candidates is not None:
            lines = [c.line(RECALL_LINE_CHARS) for c in candidates[: self.config.inject_incidents]]
            text = populate_template(templates["recall_ranked"], {"lines": lines}).strip() if lines else ""
        else:
            found = self.store.incidents.similar_incidents(target, pattern, self.config.inject_incidents, exclude)
            flat = [
                {**row, **{k: " ".join(str(row[k]).split())[:FIELD_CHARS] for k in RECALLED if row[k]}}
                for row in (i.to_json() for i in found)
            ]
            text = populate_template(templates["recall"], {"incidents": flat}).strip() if found else ""
        if not text:
            return ""
        text = within(redact_text(text), RECALL_CHARS)
        task = populate_template(
            templates["recall_task" if candidates is None else "recall_ranked_task"], {"target": target, "pattern": pattern}
        )
        now = time.time()
        with self.lock:
            steps.append(TaskStep(task=task))
            steps.append(ActionStep(step_number=0, timing=Timing(start_time=now, end_time=now), observations=text))
        return text

    # -- persistence ---------------------------------------------------------------

    def save(self, steps: list[MemoryStep]) -> None:
        if self.store is not None:
            with self.lock:
                self.store.memory.save_memory(WORKING_MEMORY, [to_json(s) for s in steps])

    def restore(self, steps: list[MemoryStep], logger: AgentLogger) -> int:
        """Load the saved working memory into ``steps``; returns how many steps came back.

        Steps that cannot be read (an unknown type, a wrong field) are skipped and logged: a start
        never fails because of what was saved."""
        restored = readable_steps(self.store, logger) if self.store is not None else []
        if not restored:
            return 0
        with self.lock:
            steps[:] = restored
        return len(steps)

    # -- stats -------------------------------------------------------------------

    def stats(self, steps: list[MemoryStep]) -> WorkingStats:
        """Steps by type, bytes and estimated tokens of the history the next request carries (an agent's ``steps``)."""
        with self.lock:
            return working_stats(list(steps))


def working_stats(steps: list[MemoryStep]) -> WorkingStats:
    """Steps by type, and the size of their messages (the system prompt, a constant, excluded)."""
    size = sum(len(text_of(m)) for s in steps for m in s.to_messages())
    return WorkingStats(dict(Counter(kind_of(s) for s in steps)), size, size // 4)


def saved_steps(store: Store | StoreView) -> list[MemoryStep]:
    """The working memory as last saved (by the daemon, the demo or ``investigate``)."""
    return readable_steps(store, AgentLogger(level=LogLevel.OFF))


def readable_steps(store: Store | StoreView, logger: AgentLogger) -> list[MemoryStep]:
    """The saved working memory, less the steps that cannot be read (logged)."""
    try:
        saved = store.memory.load_memory(WORKING_MEMORY)
    except (ValueError, RecursionError) as exc:
        log.warning("saved working memory is not JSON, starting without it: %s", exc)
        return []
    if saved is not None and not isinstance(saved, list):
        log.warning("saved working memory is not a list of steps, starting without it")
        return []
    steps, skipped = [], []
    for n, item in enumerate(saved or []):
        try:
            exports.check_step(item, f"step {n}")
            steps.append(from_json(item, logger))
        except ValueError as exc:
            skipped.append(str(exc))
    if skipped:
        log.warning("skipped %d saved working-memory steps that cannot be read: %s", len(skipped), "; ".join(skipped[:5]))
    return steps


def report(store: StoreView) -> dict[str, Any]:
    """What ``monitor memory stats`` shows: working memory, long-term memory and tool use."""
    kinds = store.runs.step_stats()
    calls = sum(k.tool_calls for k in kinds)
    succeeded = sum(k.tool_ok for k in kinds)
    seconds = sum(k.tool_seconds for k in kinds)
    return {
        "working": working_stats(saved_steps(store)).to_json(),
        "long_term": store.memory.counts(),
        "stored_steps": {k.kind: {"steps": k.steps, "bytes": k.bytes} for k in kinds},
        "tools": {
            "calls": calls,
            "success_rate": succeeded / calls if calls else None,
            "average_ms": seconds / calls * 1000 if calls else None,
        },
        "db_bytes": store.size_bytes(),
        "forgotten": [{**group, "text": forgetting.describe(group)} for group in store.importance.pruned()],
    }


def export(store: Store, path: str) -> dict[str, int]:
    data = store.memory.dump()
    with open(path, "w", encoding="utf-8") as out:
        json.dump(redacted({"format": "monitor-memory", "version": 1, **data}), out, indent=1, default=str)
    return {table: len(rows) for table, rows in data.items()}


def import_(writer: Writer, path: str, config: MemoryConfig | None = None) -> dict[str, int]:
    """Add an export's incidents, runs, steps and working memory, through the incident writer (a bulk import);
    raises ValueError on a bad file.

    Every entry is checked before anything is written (:mod:`monitor.memory.exports`). Working memory
    merges by :func:`merge_working`, compacted to ``config.keep_steps``.
    """
    try:
        with open(path, encoding="utf-8") as source:
            data = json.load(source)
    except (OSError, ValueError, RecursionError) as exc:
        raise ValueError(f"{path}: not a readable JSON memory export ({exc})") from None
    try:
        tables = exports.check(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    imported = [step for row in tables["memory"] for step in json.loads(row["value"])]
    rows = []
    if imported:
        current = [to_json(s) for s in saved_steps(writer.reader)]
        merged = merge_working(current, imported, config or MemoryConfig())
        if merged != current:
            rows = [{"key": WORKING_MEMORY, "value": json.dumps(merged), "updated_at": time.time()}]
    return writer.import_dump({**tables, "memory": rows})


def merge_working(current: list[dict[str, Any]], imported: list[dict[str, Any]], config: MemoryConfig) -> list[dict[str, Any]]:
    """The import rule: imported steps not already in working memory go after the current ones, then the
    oldest fold into the summary as the agent folds them (``keep_steps``). Importing twice adds nothing."""
    logger = AgentLogger(level=LogLevel.OFF)
    steps = list(current)
    for item in imported:
        item = to_json(from_json(item, logger))
        if item not in steps:
            steps.append(item)
    objects = [from_json(item, logger) for item in steps]
    Memory(config).compact(objects)
    return [to_json(s) for s in objects]


def text_of(message: ChatMessage) -> str:
    content = message.content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def kind_of(step: MemoryStep) -> str:
    return {"SummaryStep": "summary", "TaskStep": "task", "ActionStep": "action", "PlanningStep": "planning"}.get(
        type(step).__name__, type(step).__name__.lower()
    )


def to_json(step: MemoryStep) -> dict[str, Any]:
    """A working-memory step as JSON (what survives a restart)."""
    if isinstance(step, SummaryStep):
        return {"type": "summary", "text": step.text, "folded": step.folded}
    if isinstance(step, TaskStep):
        return {"type": "task", "task": step.task}
    if isinstance(step, ActionStep):
        return {
            "type": "action",
            "step_number": step.step_number,
            "start": step.timing.start_time,
            "end": step.timing.end_time,
            "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in step.tool_calls or []]
            if step.tool_calls is not None
            else None,
            "model_output": step.model_output if isinstance(step.model_output, str) else None,
            "observations": step.observations,
            "error": str(step.error) if step.error else None,
            "is_final_answer": step.is_final_answer,
            "action_output": step.action_output if isinstance(step.action_output, (str, int, float)) else None,
            "tokens": [step.token_usage.input_tokens, step.token_usage.output_tokens] if step.token_usage else None,
        }
    return {"type": "summary", "text": describe_step(step), "folded": 1}


def from_json(item: dict[str, Any], logger: AgentLogger | None) -> MemoryStep:
    kind = item.get("type")
    if kind == "summary":
        return SummaryStep(item["text"], int(item.get("folded") or 0))
    if kind == "task":
        return TaskStep(task=item["task"])
    if kind == "action":
        calls = item.get("tool_calls")
        tokens = item.get("tokens")
        return ActionStep(
            step_number=int(item.get("step_number") or 0),
            timing=Timing(start_time=item.get("start") or 0.0, end_time=item.get("end")),
            tool_calls=[ToolCall(c["name"], c.get("arguments") or {}, c.get("id") or f"call_{n}") for n, c in enumerate(calls)]
            if calls is not None
            else None,
            model_output=item.get("model_output"),
            observations=item.get("observations"),
            error=AgentError(item["error"], logger or AgentLogger(level=LogLevel.OFF)) if item.get("error") else None,
            is_final_answer=bool(item.get("is_final_answer")),
            action_output=item.get("action_output"),
            token_usage=TokenUsage(*tokens) if tokens else None,
        )
    raise ValueError(f"unknown working-memory step type {kind!r}")
