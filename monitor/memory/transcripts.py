"""Stored agent runs as smolagents memory, in the three forms smolagents gives another agent.

``monitor memory export --format full|succinct|messages`` rebuilds each run's steps from ``agent_steps``
(:func:`rebuild`: the recall as a past ``TaskStep`` plus a historical ``ActionStep``, as the agent saw
it, then the task, then each ``ActionStep``) and writes what smolagents' own methods return for them:
``AgentMemory.get_full_steps()``, ``AgentMemory.get_succinct_steps()``, or
``MultiStepAgent.write_memory_to_messages()`` (as ``ChatMessage.dict()``). The file::

    {"format": "smolagents-memory", "version": 1, "form": "full",
     "runs": [{"run": {...}, "incident": {...} or null, "steps": [<get_full_steps()>]}]}
    {"format": "smolagents-memory", "version": 1, "form": "messages", "messages": [<ChatMessage.dict()>]}

What the store does not keep is absent from the steps: each request's ``model_input_messages`` and
``model_output_message`` (None), and an error's class (every error is an ``AgentError``).

Round trips (:func:`load`): ``full`` and ``succinct`` go back into ``agent_runs`` and ``agent_steps``
(with their incidents), so that a fresh database exports the same file again (a step's tool success
and time are not in smolagents' forms and are lost). ``messages`` become working-memory steps
(:func:`steps_of`) whose ``to_messages()`` give back the same messages; they carry no timing.
"""

from __future__ import annotations

import ast
import json
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import smolagents
from smolagents.agents import MultiStepAgent, populate_template
from smolagents.memory import ActionStep, AgentMemory, MemoryStep, TaskStep, ToolCall
from smolagents.models import MessageRole
from smolagents.monitoring import AgentLogger, LogLevel, Timing, TokenUsage
from smolagents.utils import AgentError

from monitor.config import MemoryConfig
from monitor.core.incidents import Incident
from monitor.core.runs import Run, Step
from monitor.core.urls import redacted
from monitor.memory import exports, working
from monitor.memory.exports import WORKING_MEMORY
from monitor.memory.working import SummaryStep, prompts
from monitor.store import Store

if TYPE_CHECKING:
    from monitor.incidents.writer import Writer

FORMAT, VERSION = "smolagents-memory", 1
FORMS = ("full", "succinct", "messages")
RUN_FIELDS = (
    "task",
    "target",
    "model",
    "state",
    "final_answer",
    "started_at",
    "ended_at",
    "input_tokens",
    "output_tokens",
    "error",
    "diagnosis",
    "root_cause",
    "confidence",
)
NOT_EXPORTED = ("id", "related_incident")  # ids are this database's own
TASK, OBSERVATION, ERROR = "New task:\n", "Observation:\n", "Error:\n"
RETRY = "\nNow let's retry: take care not to repeat previous errors!"
SUMMARY = "Summary of earlier investigations ("
QUIET = AgentLogger(level=LogLevel.OFF)


def recall_task(target: str | None, pattern: str | None) -> str:
    return str(populate_template(prompts()["recall_ranked_task"], {"target": target or "", "pattern": pattern or "manual"}))


def tool_calls(text: str | None, run_id: Any) -> list[ToolCall] | None:
    """A stored step's tool calls; None for none (smolagents leaves a step without calls at None)."""
    calls = json.loads(text or "[]")
    return [ToolCall(c["name"], c.get("arguments"), c.get("id") or f"call_{run_id}_{n}") for n, c in enumerate(calls)] or None


def action(step: Step, final_answer: str | None) -> ActionStep:
    """A stored step of kind action as the ActionStep it was."""
    start, duration = step.started_at or 0.0, step.duration
    tokens = (step.input_tokens or 0, step.output_tokens or 0)
    return ActionStep(
        step_number=step.step_number,
        timing=Timing(start, start + duration if duration is not None else None),
        tool_calls=tool_calls(step.tool_calls, step.run_id),
        error=AgentError(step.error, QUIET) if step.error else None,
        model_output=step.model_output,
        observations=step.observations,
        action_output=answered(step.tool_calls) or final_answer if step.is_final else None,
        token_usage=TokenUsage(*tokens) if any(tokens) else None,
        is_final_answer=bool(step.is_final),
    )


def answered(text: str | None) -> str | None:
    """The answer a final step's own final_answer call gave: the model's words (the run keeps what may be said of
    them, :func:`monitor.memory.claims.answer_said`)."""
    try:
        calls = json.loads(text or "[]")
    except ValueError:
        return None
    for call in calls if isinstance(calls, list) else []:
        arguments = call.get("arguments") if isinstance(call, dict) and call.get("name") == "final_answer" else None
        if isinstance(arguments, dict) and isinstance(arguments.get("answer"), str):
            return str(arguments["answer"])
    return None


def rebuild(run: Run, stored: list[Step], incident: Incident | None = None) -> list[MemoryStep]:
    """One run's steps as its agent held them: the recall (a TaskStep and step 0), the task, the actions."""
    steps: list[MemoryStep] = []
    for recall in (s for s in stored if s.kind == "recall"):
        start = recall.started_at or 0.0
        steps += [
            TaskStep(task=recall_task(run.target, incident.pattern if incident else None)),
            ActionStep(step_number=0, timing=Timing(start, start), observations=recall.observations),
        ]
    steps.append(TaskStep(task=run.task))
    return steps + [action(step, run.final_answer) for step in stored if step.kind == "action"]


def memory_of(steps: list[MemoryStep], system_prompt: str = "") -> AgentMemory:
    memory = AgentMemory(system_prompt)
    memory.steps = list(steps)
    return memory


def messages(steps: list[MemoryStep], system_prompt: str = "") -> list[dict[str, Any]]:
    """``write_memory_to_messages()`` of an agent holding ``steps``, each message as ``ChatMessage.dict()``."""
    holder = SimpleNamespace(memory=memory_of(steps, system_prompt))
    return [m.dict() for m in MultiStepAgent.write_memory_to_messages(holder)]  # type: ignore[arg-type]  # it reads .memory only


def selected_runs(store: Store, *, run_id: int | None = None, since: float | None = None) -> list[Run]:
    if run_id is not None:
        run = store.runs.run(run_id)
        if run is None:
            raise ValueError(f"no agent run #{run_id} in {store.path}")
        return [run]
    return store.runs.runs_started(since or 0.0)


def dump(store: Store, form: str, *, run_id: int | None = None, since: float | None = None, system_prompt: str = "") -> dict[str, Any]:
    """The export of ``form`` (one of :data:`FORMS`) for one run, or the runs started since ``since``."""
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}: one of {', '.join(FORMS)}")
    head = {"format": FORMAT, "version": VERSION, "form": form, "smolagents": smolagents.__version__}
    runs, every = [], []
    for run in selected_runs(store, run_id=run_id, since=since):
        incident = store.incidents.incident(run.incident_id) if run.incident_id else None
        steps = rebuild(run, store.runs.steps(run.id), incident)
        every += steps
        memory = memory_of(steps)
        runs.append(
            {
                "run": {k: getattr(run, k) for k in RUN_FIELDS},
                "incident": {k: v for k, v in incident.to_json().items() if k not in NOT_EXPORTED} if incident else None,
                "steps": memory.get_full_steps() if form == "full" else memory.get_succinct_steps(),
            }
        )
    if form == "messages":
        return {**head, "runs": len(runs), "messages": json.loads(json.dumps(messages(every, system_prompt)))}
    return {**head, "runs": runs}


def export(store: Store, path: str, form: str, **options: Any) -> dict[str, int]:
    data = dump(store, form, **options)
    with open(path, "w", encoding="utf-8") as out:
        json.dump(redacted(data), out, indent=1, default=str)
    if form == "messages":
        return {"agent_runs": data["runs"], "messages": len(data["messages"])}
    return {"agent_runs": len(data["runs"]), "steps": sum(len(r["steps"]) for r in data["runs"])}


# -- back in ---------------------------------------------------------------------------------


def step_rows(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A run's exported steps (full or succinct) as ``agent_steps`` rows; the run's own task is on the run."""
    rows = []
    for n, step in enumerate(steps):
        if "task" in step:
            continue
        timing, usage, error = step.get("timing") or {}, step.get("token_usage") or {}, step.get("error")
        follows_task = n > 0 and "task" in steps[n - 1]
        if step.get("step_number") == 0 and follows_task and not step.get("tool_calls"):
            rows.append(
                {"step_number": 0, "kind": "recall", "started_at": timing.get("start_time"), "observations": step.get("observations")}
            )
            continue
        calls = [
            {"id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in step.get("tool_calls") or []
        ]
        rows.append(
            {
                "step_number": step["step_number"],
                "kind": "action",
                "started_at": timing.get("start_time"),
                "duration": timing.get("duration"),
                "model_output": step.get("model_output"),
                "tool_calls": json.dumps(calls),
                "observations": step.get("observations"),
                "error": error.get("message") if isinstance(error, dict) else None,
                "input_tokens": usage.get("input_tokens") or 0,
                "output_tokens": usage.get("output_tokens") or 0,
                "is_final": int(bool(step.get("is_final_answer"))),
            }
        )
    return rows


def tables(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """A full or succinct export as the tables ``Store.load`` adds (incidents, agent_runs, agent_steps)."""
    incidents: dict[tuple[Any, ...], dict[str, Any]] = {}
    runs, steps = [], []
    for n, entry in enumerate(data.get("runs") or [], start=1):
        incident = entry.get("incident")
        incident_id = None
        if incident:
            key = (incident["target"], incident["pattern"], incident["opened_at"])
            incidents.setdefault(key, {**incident, "id": len(incidents) + 1})
            incident_id = incidents[key]["id"]
        runs.append({**entry["run"], "id": n, "incident_id": incident_id})
        steps += [{**row, "run_id": n} for row in step_rows(entry.get("steps") or [])]
    return {"incidents": list(incidents.values()), "agent_runs": runs, "agent_steps": steps}


def steps_of(chat: list[dict[str, Any]]) -> list[MemoryStep]:
    """Messages (``ChatMessage.dict()``) back into steps whose ``to_messages()`` give the same messages."""
    steps: list[MemoryStep] = []
    current: tuple[ActionStep, int] | None = None  # the step being read, and the last part of it read
    for message in chat:
        role, text = MessageRole(message["role"]), text_of(message)
        if role == MessageRole.SYSTEM:
            continue
        if role == MessageRole.USER:
            current = None
            steps.append(TaskStep(task=text[len(TASK) :]) if text.startswith(TASK) else summary(text))
            continue
        part = part_of(role, text)
        if current is None or part <= current[1]:
            current = (ActionStep(step_number=len(steps), timing=Timing(0.0)), -1)
            steps.append(current[0])
        fill(current[0], part, text)
        current = (current[0], part)
    return steps


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def summary(text: str) -> MemoryStep:
    head, _, body = text.partition("\n")
    if not head.startswith(SUMMARY):
        raise ValueError(f"a user message that is neither a task nor a summary: {text[:60]!r}")
    return SummaryStep(body, int(head[len(SUMMARY) :].split(" ")[0]))


def part_of(role: MessageRole, text: str) -> int:
    """Where a message comes in a step's messages: output, tool calls, observation, error."""
    if role == MessageRole.ASSISTANT:
        return 0
    if role == MessageRole.TOOL_CALL:
        return 1
    return 3 if ERROR in text and not text.startswith(OBSERVATION) else 2


def fill(step: ActionStep, part: int, text: str) -> None:
    if part == 0:
        step.model_output = text
    elif part == 1:
        step.tool_calls = [
            ToolCall(c["function"]["name"], c["function"]["arguments"], c["id"])
            for c in ast.literal_eval(text.removeprefix("Calling tools:\n"))
        ]
    elif part == 2:
        step.observations = text[len(OBSERVATION) :]
    else:
        message = text.split(ERROR, 1)[1].rsplit(RETRY, 1)[0]
        step.error = AgentError(message, QUIET)


# -- the file --------------------------------------------------------------------------------

RUN = {
    "task": "text!",
    "started_at": "number!",
    "ended_at": "number",
    "input_tokens": "integer",
    "output_tokens": "integer",
    **dict.fromkeys(("target", "model", "state", "final_answer", "error", "diagnosis", "root_cause", "confidence"), "text"),
}
STEP = {
    "step_number": "integer",
    "task": "text",
    "model_output": "text",
    "observations": "text",
    "is_final_answer": "flag",
    "tool_calls": "list",
}
MESSAGE = {"role": "text!"}


def check(data: Any) -> str:
    """The form of a smolagents-memory export, every entry checked; ``ValueError("where: what")`` at the first bad one."""
    if data.get("version", VERSION) != VERSION:
        raise ValueError(f"version: {exports.shown(data['version'])} is not one this monitor reads ({VERSION})")
    form = data.get("form")
    if form not in FORMS:
        raise ValueError(f"form: must be one of {', '.join(FORMS)}, not {exports.shown(form)}")
    if form == "messages":
        for n, message in enumerate(listed(data, "messages")):
            exports.check_fields(message, MESSAGE, f"messages[{n}]")
            if message["role"] not in MessageRole.roles():
                raise ValueError(f"messages[{n}].role: one of {', '.join(MessageRole.roles())}, not {exports.shown(message['role'])}")
            check_content(message, f"messages[{n}].content")
        return str(form)
    for n, entry in enumerate(listed(data, "runs")):
        exports.check_fields(entry, {}, f"runs[{n}]")
        exports.check_fields(entry.get("run"), RUN, f"runs[{n}].run")
        if entry.get("incident") is not None:
            exports.check_fields(entry["incident"], exports.ROWS["incidents"], f"runs[{n}].incident")
        for m, step in enumerate(listed(entry, "steps", f"runs[{n}].")):
            exports.check_fields(step, STEP, f"runs[{n}].steps[{m}]")
            exports.scan(step, f"runs[{n}].steps[{m}]")
    return str(form)


def check_content(message: dict[str, Any], where: str) -> None:
    """A message becomes a working-memory step: its text is held to a step's size, and :func:`exports.scan`'s rules."""
    exports.scan(message.get("content"), where)
    size = len(text_of(message))
    if size > exports.MAX_STEP_TEXT:
        raise ValueError(f"{where}: {size:,} characters, at most {exports.MAX_STEP_TEXT:,} in a step")


def listed(data: dict[str, Any], key: str, where: str = "") -> list[Any]:
    items = data.get(key) or []
    if not isinstance(items, list):
        raise ValueError(f"{where}{key}: must be a list, not {exports.shown(items)}")
    return items


def load(writer: Writer, data: dict[str, Any]) -> dict[str, int]:
    """Add a checked smolagents-memory export: runs (full, succinct) to the store (through the incident writer:
    a bulk import), messages to working memory."""
    if check(data) != "messages":
        return writer.import_dump(tables(data))
    imported = [working.to_json(step) for step in steps_of(data["messages"])]
    current = [working.to_json(step) for step in working.saved_steps(writer.reader)]
    if imported and current[-len(imported) :] != imported:  # the same messages imported again add nothing
        writer.save_working_memory(WORKING_MEMORY, current + imported)  # compacted when the agent next runs
        return {"working_steps": len(imported)}
    return {"working_steps": 0}


def import_(writer: Writer, path: str, config: MemoryConfig | None = None) -> dict[str, int]:
    """``monitor memory import``: a smolagents-memory export (:func:`load`), or monitor's own dump."""
    try:
        with open(path, encoding="utf-8") as source:
            data = json.load(source)
    except (OSError, ValueError, RecursionError) as exc:
        raise ValueError(f"{path}: not a readable JSON memory export ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return working.import_(writer, path, config)
    try:
        return load(writer, data)
    except (ValueError, KeyError, TypeError, SyntaxError) as exc:
        raise ValueError(f"{path}: {exc}") from None
