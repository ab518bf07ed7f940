"""``investigate`` over MCP: one configured target checked now and, if it fails, investigated by the agent, as
``monitor investigate`` does (:func:`monitor.daemon.investigate_results`), with remediation off.

Only a configured target's name is taken, never a URL: a client cannot make the checker fetch an address the
config does not name. The agent runs with ``agent.remediation: off`` whatever the config says.
"""

from __future__ import annotations

from typing import Any

from monitor.config import Config
from monitor.mcp.answers import NotFound
from monitor.store import Store


def without_remediation(config: Config) -> Config:
    return config.model_copy(update={"agent": config.agent.model_copy(update={"remediation": "off"})})


def investigate(store: Store, config: Config, name: str) -> dict[str, Any]:
    """The check's result and, for a failing one, the agent run and its diagnosis."""
    from monitor.checks.engine import Checker
    from monitor.daemon import investigate_results

    chosen = [t for t in config.targets if t.name == name]
    if not chosen:
        raise NotFound(f"no configured target {name[:100]!r} (investigate takes a target's name)")
    safe = without_remediation(config)
    results = Checker(concurrency=1).run(chosen)
    result = results[0].to_dict()
    said = {k: result.get(k) for k in ("name", "ok", "severity", "status_code", "latency_ms", "error", "detail", "checked_at")}
    runs = [
        {
            "run": outcome.run_id,
            "state": outcome.state,
            "steps": outcome.steps,
            "diagnosis": outcome.diagnosis.to_dict() if outcome.diagnosis is not None else None,
            "error": outcome.error if outcome.diagnosis is None else None,
        }
        for outcome, _ in investigate_results(safe, store, results)
    ]
    return {"result": said, "investigation": runs[0] if runs else None}
