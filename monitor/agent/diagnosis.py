"""What an investigation ends with: its :class:`Outcome`, and the :class:`Diagnosis` it recorded."""

from __future__ import annotations

from dataclasses import dataclass, field

from monitor.incidents.diagnosis import Diagnosis as Diagnosis  # a value of incidents: the writer sends it on

SUCCESS, MAX_STEPS, MODEL_ERROR, TIMEOUT, CRASHED = "success", "max_steps", "model_error", "timeout", "crashed"
INTERRUPTED = "interrupted"


@dataclass
class Outcome:
    """How one investigation ended: its run, its end state (see ``investigator``), its answer or error."""

    run_id: int
    state: str
    answer: str | None
    steps: int
    error: str | None = None
    diagnosis: Diagnosis | None = None
    spent: dict[str, float] = field(default_factory=dict)  # seconds in recall and in judging (Toolbox.spent)
