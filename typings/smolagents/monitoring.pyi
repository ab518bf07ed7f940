from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

@dataclass
class TokenUsage:
    input_tokens: int
    output_tokens: int
    total_tokens: int = field(init=False)

@dataclass
class Timing:
    start_time: float
    end_time: float | None = None
    @property
    def duration(self) -> float | None: ...

class LogLevel(IntEnum):
    OFF = -1
    ERROR = 0
    INFO = 1
    DEBUG = 2

class AgentLogger:
    level: LogLevel
    def __init__(self, level: LogLevel = ..., console: Any | None = None) -> None: ...
    def log_error(self, error_message: str) -> None: ...
