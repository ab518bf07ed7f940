"""What a judge of recall measured on scored rows, and whether that lets it make the memory assert.

    Calibration                 one model's measure: rows judged, asserted right and wrong, the prompt it read
    wilson_upper(k, n)          the 95% Wilson score upper bound of a rate k/n
    refusal(path, model, limit, prompt)
                                why that model may not vouch ("" when it may); never raises
    record(path, calibration)   one model's calibration written into the file, the other models' kept

``monitor eval --judge MODEL --calibration PATH`` writes it. A *row* is a scenario on which the judge was asked
(recall had an applicable past incident with a fix) and answered; *wrong* is a checked pick that is not the
expected incident (there is another, or none), which the memory would have asserted on the judge's word.

The rule (:func:`refusal`): at least :data:`MIN_ROWS` rows, measured with the same prompt (its digest), and the
Wilson upper bound of wrong / rows at most ``memory.judge.max_false_recall``. A bound, not the rate: with none
wrong, 60 rows bound it at 6.0%, so a limit of 5% takes at least 73 rows without a wrong pick.
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

MIN_ROWS = 60
Z = 1.959964  # 95%, two-sided


def wilson_upper(k: int, n: int, z: float = Z) -> float:
    """The upper bound of the Wilson score interval of ``k`` in ``n`` (1.0 when ``n`` is 0)."""
    if n <= 0:
        return 1.0
    p = min(max(k, 0), n) / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return min(1.0, (centre + spread) / (1 + z * z / n))


@dataclass(frozen=True)
class Calibration:
    """One judge's measure on scored rows (module docstring)."""

    model: str
    rows: int
    right: int
    wrong: int
    prompt: str  # the judge prompt's digest (monitor.memory.judge.prompt_digest)
    said_none: int = 0
    void: int = 0
    failed: int = 0  # asked, but no answer: not rows
    held_out: int = 0  # rows of scenarios tagged unseen
    measured: str = ""  # when, ISO 8601
    scenarios: list[str] = field(default_factory=list)

    @property
    def false_recall(self) -> float | None:
        return self.wrong / self.rows if self.rows else None

    @property
    def upper(self) -> float:
        return wilson_upper(self.wrong, self.rows)

    def refusal(self, limit: float, prompt: str) -> str:
        """Why this measure does not let the judge vouch under ``limit`` ("" when it does)."""
        if prompt != self.prompt:
            return f"calibrated with another judge prompt ({self.prompt}, now {prompt})"
        if self.rows < MIN_ROWS:
            return f"calibrated on {self.rows} rows, fewer than {MIN_ROWS}"
        if self.upper > limit:
            return f"false recall {self.wrong}/{self.rows}, upper bound {self.upper:.3f} over {limit:g}"
        return ""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("model")
        return {**data, "false_recall": self.false_recall, "wilson_upper": round(self.upper, 4)}

    @classmethod
    def of(cls, model: str, data: dict[str, Any]) -> Calibration:
        names = {f for f in cls.__dataclass_fields__ if f != "model"}
        return cls(model, **{k: v for k, v in data.items() if k in names})


def read(path: str | Path) -> dict[str, Calibration]:
    """Every model's calibration in the file (raises OSError or ValueError when it cannot be read)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise ValueError("no 'models' object")
    return {name: Calibration.of(name, entry) for name, entry in models.items() if isinstance(entry, dict)}


def refusal(path: str | None, model: str, limit: float, prompt: str) -> str:
    """Why ``model`` may not vouch by the calibration at ``path`` ("" when it may); a missing or unreadable file
    is a refusal, never an error: the judge then only suggests."""
    if not path:
        return "no calibration configured (memory.judge.calibration)"
    try:
        found = read(path).get(model)
        return found.refusal(limit, prompt) if found is not None else f"no calibration of {model} in {path}"
    except (OSError, ValueError, TypeError) as exc:
        log.warning("judge calibration %s unreadable: %s", path, exc)
        return f"calibration {path} unreadable"


def record(path: str | Path, calibration: Calibration) -> None:
    """Write ``calibration`` into the file at ``path`` (replacing that model's, keeping the others'), atomically;
    a file that is there but cannot be read raises (OSError, ValueError) rather than being overwritten."""
    target = Path(path)
    try:
        models = {name: c.to_dict() for name, c in read(target).items()}
    except FileNotFoundError:
        models = {}
    models[calibration.model] = calibration.to_dict()
    text = json.dumps({"models": dict(sorted(models.items()))}, indent=2) + "\n"
    handle, temporary = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=f".{target.name}.")
    with os.fdopen(handle, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, target)
