"""The demo's past (history.yaml): incidents with their fixes and a past monitoring session, seeded into a fresh
database as if from months of running. The incidents go through the writer, as every incident does."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from monitor import wiring
from monitor.config import Config
from monitor.core.runs import NewStep
from monitor.memory.exports import WORKING_MEMORY
from monitor.store import Store

HISTORY = Path(__file__).with_name("history.yaml")
DAY = 86400


def seed_history(store: Store, config: Config) -> None:
    """Past incidents with their fixes, and a past monitoring session."""
    past = yaml.safe_load(HISTORY.read_text(encoding="utf-8"))
    now, clock_back = time.time(), store.clock
    try:
        _incidents(store, config, past["incidents"], now)
        store.clock = _at(now - DAY)
        _session(store, past["session"], now - DAY)
    finally:
        store.clock = clock_back


def _at(moment: float) -> Callable[[], float]:
    return lambda: moment


def _incidents(store: Store, config: Config, incidents: list[dict[str, Any]], now: float) -> None:
    writer = wiring.writer(config, store)
    for past in incidents:
        store.clock = _at(now - past["days"] * DAY)
        opened = writer.open(past["target"], past["pattern"], past["summary"], root_cause=past["root_cause"])
        assert opened is not None, f"{past['target']} has an open incident already"
        writer.annotate(opened.incident.id, diagnosis=past["diagnosis"])
        writer.resolve(opened.incident.id, resolution=past["resolution"])


def _session(store: Store, session: dict[str, Any], at: float) -> None:
    """One finished run, and the working memory it left: its summary, its task and its one step."""
    call, observations = session["call"], session["observations"]
    run = store.runs.start_run(session["task"], target=session["target"], model="builtin")
    step = NewStep(1, "action", at, 0.2, tool_calls=json.dumps([call]), observations=observations, tool_ok=1, tool_seconds=0.03)
    store.runs.add_step(run, step)
    store.runs.finish_run(run, "success", session["answer"])
    summary = {"type": "summary", "folded": session["folded"], "text": session["summary"]}
    action = {"type": "action", "step_number": 1, "start": at, "end": at, "observations": observations}
    action["tool_calls"] = [{"id": "call_1", **call}]
    store.memory.save_memory(WORKING_MEMORY, [summary, {"type": "task", "task": session["task"]}, action])
