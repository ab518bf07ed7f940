"""A toy tool for the agent, as a new tool is added: one module with a :class:`MonitorTool` that registers itself.

``pass_rate`` says how many of a target's recent checks passed, read from the store; it acts only on the targets
the investigation may reach, and a failure is ``ERROR: ...`` text the model reads, as with every tool.
"""

from __future__ import annotations

from monitor.agent import tools
from monitor.agent.tools import MonitorTool, ToolFailure


class PassRate(MonitorTool):
    name = "pass_rate"
    description = "How many of a target's last n checks passed, e.g. 'api: 1 of 3 recent checks passed'."
    inputs = {
        "name": {"type": "string", "description": "The configured target name, e.g. 'api'."},
        "n": {"type": "integer", "description": "How many recent checks to count (1 to 50)."},
    }

    def forward(self, name: str, n: int) -> str:
        return self.guarded(lambda: self._rate(name, n))

    def _rate(self, name: str, n: int) -> str:
        if not 1 <= n <= 50:
            raise ToolFailure(f"n must be 1 to 50, not {n}")
        target = self.target(name).name
        rows = self.box.store.results.recent_results(target, n)
        if not rows:
            return f"{target}: no checks yet"
        return f"{target}: {sum(bool(row.ok) for row in rows)} of {len(rows)} recent checks passed"


tools.register(PassRate)
