"""``maintenance:``, windows in which a target's incidents raise no alerts."""

from __future__ import annotations

from datetime import datetime

from pydantic import ValidationInfo, field_validator

from monitor.config.values import Strict


class Maintenance(Strict):
    targets: list[str]
    start: datetime
    end: datetime
    reason: str = ""

    @field_validator("end")
    @classmethod
    def _after_start(cls, end: datetime, info: ValidationInfo) -> datetime:
        start = info.data.get("start")
        if start is not None and end.timestamp() <= start.timestamp():
            raise ValueError(f"ends before it starts ({start.isoformat()})")
        return end

    def covers(self, target: str, at: float) -> bool:
        return target in self.targets and self.start.timestamp() <= at < self.end.timestamp()


