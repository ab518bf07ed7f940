"""Agent runs as values: a :class:`Run` (one investigation: its task, its outcome, the diagnosis it recorded) and
its :class:`Step` each (a recall, or an action: what the model said, the tools it called, what they answered).
Both are read from their store rows in one place (:mod:`monitor.store.rows`) and made JSON in one (``to_json``).
A step the agent saves is a :class:`NewStep` (a step before the store numbers it); the steps stored, counted by
kind, a :class:`StepStats` each."""

from __future__ import annotations

from dataclasses import dataclass

from monitor.core.rows import Row


@dataclass(frozen=True)
class Run(Row):
    """One agent run as stored. Fields are the ``agent_runs`` columns, in their order, so :meth:`to_json` is the
    row as the API and exports have shown it."""

    id: int
    incident_id: int | None
    target: str | None
    task: str
    model: str | None
    state: str  # running, success, error, max_steps, interrupted, ...
    final_answer: str | None
    started_at: float
    ended_at: float | None = None
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    error: str | None = None
    root_cause: str | None = None  # the diagnosis it recorded, as the incident holds it
    related_incident: int | None = None
    confidence: str | None = None
    diagnosis: str | None = None
    replica: int = 0  # the daemon replica that started it
    claim: str | None = None  # what the memory claimed, as JSON (monitor.core.claims.Claim)


@dataclass(frozen=True)
class Step(Row):
    """One step of an agent run as stored: a ``recall`` (the past incidents put in front of the run, in
    ``observations``) or an ``action``. Fields are the ``agent_steps`` columns, in their order."""

    id: int
    run_id: int
    step_number: int
    kind: str  # "recall" or "action"
    started_at: float | None = None
    duration: float | None = None
    model_output: str | None = None
    tool_calls: str | None = None  # the calls made, as JSON: [{"name": ..., "arguments": ...}]
    observations: str | None = None
    error: str | None = None
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    is_final: int | None = 0
    tool_ok: int | None = None  # 1: the tools called answered; None: none called
    tool_seconds: float | None = None


@dataclass(frozen=True)
class NewStep:
    """A finished step to save (``add_step``): a :class:`Step` before the store gives it an id and its run. A
    field left out is stored as NULL."""

    step_number: int
    kind: str  # "recall" or "action"
    started_at: float | None = None
    duration: float | None = None
    model_output: str | None = None
    tool_calls: str | None = None  # the calls made, as JSON: [{"id": ..., "name": ..., "arguments": ...}]
    observations: str | None = None
    error: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    is_final: int | None = None
    tool_ok: int | None = None  # 1: the tools called answered; None: none called
    tool_seconds: float | None = None


@dataclass(frozen=True)
class StepStats:
    """The stored steps of one kind (``step_stats``): how many, their bytes of text, the tools they called, how many
    of those answered, and the seconds the tools took."""

    kind: str
    steps: int
    bytes: int
    tool_calls: int
    tool_ok: int
    tool_seconds: float
