"""The judge of recall: a scripted OpenAI-compatible model on loopback reads the candidates, the product checks its
words, and only a calibrated judge within the limit makes the memory assert (monitor/memory/judge.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from ollama import FakeOpenAI
from servers import free_port

from monitor.cli.main import main
from monitor.config import Config, ConfigError
from monitor.config.loader import parse
from monitor.eval import harness as evaluation
from monitor.eval.scenario import Scenario, load
from monitor.eval.verdict import Verdict
from monitor.memory import calibration, judge
from monitor.memory.calibration import Calibration, wilson_upper
from monitor.memory.candidates import Candidate
from monitor.memory.recall import Evidence

MODEL = "openai/judge-7b"
# Two past incidents of the same target and cause, each with a fix: recall alone cannot tell which applies, so it
# suggests both and asserts neither. The target now names what only #1 named: ledger-db's replica lag.
CASE = """\
name: case
description: two applicable incidents; the target says what only one of them said
tags: [memory]
target: {name: api, path: /health, timeout: 1s, expect: {status: [200]}}
serve:
  script:
    - {status: 500, body: "checkout failed: ledger-db replica lag 412s, refusing stale reads"}
history: {results: [{ok: true, times: 10}, {ok: false, status_code: 500, error: unexpected_status, times: 3}]}
past_incidents:
  - target: api
    summary: api answered 500 at checkout; ledger-db replica lag over 300s, stale reads refused
    root_cause: server_error
    resolution: rebuilt the ledger-db replica from a fresh base backup
  - target: api
    summary: api answered 500 at checkout; the payments provider rejected every request
    root_cause: server_error
    resolution: rotated the payments provider API key
expect: {root_cause: server_error, related_incident: 1}
"""


def answer(same: str, evidence_words: str = "", incident_words: str = "") -> dict[str, Any]:
    return {"content": json.dumps({"same": same, "evidence_words": evidence_words, "incident_words": incident_words})}


RIGHT = answer("#1", "ledger-db replica lag 412s", "ledger-db replica lag over 300s")


@pytest.fixture(scope="module")
def scenarios(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("scenarios")
    (folder / "case").mkdir()
    (folder / "case" / "scenario.yaml").write_text(CASE)
    return folder


@pytest.fixture(scope="module")
def case(scenarios: Path) -> Scenario:
    return load(scenarios / "case" / "scenario.yaml")


def calibrated(path: Path, rows: int, wrong: int, model: str = MODEL) -> str:
    calibration.record(path, Calibration(model, rows=rows, right=rows - wrong, wrong=wrong, prompt=judge.prompt_digest()))
    return str(path)


def run(case: Scenario, api_base: str, **options: Any) -> Verdict:
    settings = {"model": MODEL, "api_base": api_base, "timeout": 5, **options}
    verdict, _ = evaluation.run_scenario(case, "builtin", embedder="none", judge=settings)
    assert verdict.infra_error is None, verdict.infra_error
    return verdict


def test_without_a_judge_recall_alone_suggests_both(case: Scenario) -> None:
    verdict, _ = evaluation.run_scenario(case, "builtin", embedder="none")
    assert verdict.root_cause == "server_error" and verdict.related_incident is None
    assert set(verdict.suggested[:2]) == {1, 2}
    assert verdict.judged is None and verdict.judge_seconds is None and verdict.recall_seconds > 0


def test_an_uncalibrated_judge_only_suggests(case: Scenario) -> None:
    with FakeOpenAI(default=RIGHT) as server:
        verdict = run(case, server.url)
    assert verdict.related_incident is None and 1 in verdict.suggested
    assert verdict.judged is not None and verdict.judged["picked"] == 1 and verdict.judged["void"] == ""
    assert verdict.judged["vouched"] is None and "no calibration" in verdict.judged["refused"]
    [request] = server.chats
    schema = request["response_format"]["json_schema"]["schema"]
    assert sorted(schema["properties"]["same"]["enum"]) == ["#1", "#2", "none"]
    assert request["model"] == "judge-7b" and request["temperature"] == 0.0
    prompt = request["messages"][-1]["content"]
    assert prompt.index("status: 500") < prompt.index("checkout failed: ledger-db") < prompt.index("#1 on api")


def test_a_calibrated_judge_within_the_limit_vouches_and_the_claim_asserts(case: Scenario, tmp_path: Path) -> None:
    with FakeOpenAI(default=RIGHT) as server:
        verdict = run(case, server.url, calibration=calibrated(tmp_path / "c.json", rows=80, wrong=0))
    assert verdict.related_incident == 1 and verdict.memory_hit and verdict.first_shown
    assert verdict.judged is not None and verdict.judged["vouched"] == 1 and verdict.judged["refused"] == ""
    assert verdict.judge_seconds is not None and verdict.judge_seconds > 0


@pytest.mark.parametrize(
    ("rows", "wrong", "model", "why"),
    [
        (80, 8, MODEL, "upper bound"),  # over the limit: 10% wrong
        (59, 0, MODEL, "fewer than 60"),  # too few rows
        (60, 0, MODEL, "upper bound"),  # none wrong, but 60 rows bound it at 6.0%
        (200, 0, "openai/another-model", "no calibration of openai/judge-7b"),  # another model's
    ],
)
def test_a_judge_whose_calibration_does_not_allow_it_does_not_vouch(
    case: Scenario, tmp_path: Path, rows: int, wrong: int, model: str, why: str
) -> None:
    with FakeOpenAI(default=RIGHT) as server:
        verdict = run(case, server.url, calibration=calibrated(tmp_path / "c.json", rows=rows, wrong=wrong, model=model))
    assert verdict.related_incident is None and verdict.judged is not None
    assert verdict.judged["picked"] == 1 and verdict.judged["vouched"] is None and why in verdict.judged["refused"]


@pytest.mark.parametrize(
    ("reply", "void"),
    [
        (answer("#1", "ledger-db is out of memory", "ledger-db replica"), "evidence words are not in the evidence"),
        (answer("#1", "ledger-db replica lag", "ledger-db disk is full"), "incident words are not in #1"),
        (answer("#2", "ledger-db replica lag", "ledger-db replica lag"), "incident words are not in #2"),
        (answer("#1", "500", "api answered 500"), "share nothing specific"),  # a status code ties nothing
        (answer("#1"), "quoted no words"),
        ({"content": "I think it is #1"}, "not the JSON asked for"),
    ],
)
def test_words_that_do_not_bear_the_pick_out_void_it(case: Scenario, tmp_path: Path, reply: dict[str, Any], void: str) -> None:
    with FakeOpenAI(default=reply) as server:
        verdict = run(case, server.url, calibration=calibrated(tmp_path / "c.json", rows=200, wrong=0))
    assert verdict.related_incident is None and verdict.judged is not None
    assert void in verdict.judged["void"] and verdict.judged["vouched"] is None


def test_a_judge_that_is_down_or_fails_leaves_the_diagnosis_to_recall(case: Scenario, tmp_path: Path) -> None:
    path = calibrated(tmp_path / "c.json", rows=200, wrong=0)
    down = run(case, f"http://127.0.0.1:{free_port()}/v1", calibration=path)
    with FakeOpenAI(default={"status": 500, "error": "model crashed"}) as server:
        failing = run(case, server.url, calibration=path)
    for verdict in (down, failing):
        assert verdict.state == "success" and verdict.root_cause == "server_error" and verdict.related_incident is None
        assert verdict.judged is None and verdict.judge_seconds is not None and set(verdict.suggested[:2]) == {1, 2}


def test_a_judge_that_hangs_is_cut_off_by_its_timeout(case: Scenario) -> None:
    with FakeOpenAI(default={"hang": 10}) as server:
        verdict = run(case, server.url, timeout=1)
    assert verdict.root_cause == "server_error" and verdict.judged is None
    assert verdict.judge_seconds is not None and verdict.judge_seconds < 5


def test_eval_judge_writes_its_calibration_and_keeps_other_models(scenarios: Path, tmp_path: Path) -> None:
    path = Path(calibrated(tmp_path / "c.json", rows=70, wrong=1, model="openai/another-model"))
    with FakeOpenAI(default=RIGHT) as server:
        args = ["eval", "--scenarios", str(scenarios), "--no-baseline", "--json", "--embedder", "none"]
        result = CliRunner().invoke(main, [*args, "--judge", MODEL, "--judge-api-base", server.url, "--calibration", str(path)])
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)["models"]
    scores = row["scores"]["judge"]
    assert (scores["rows"], scores["right"], scores["wrong"], scores["failed"]) == (1, 1, 0, 0)
    assert scores["asserted_right"]["hits"] == 1 and scores["first_shown"]["hits"] == 1
    assert row["scores"]["memory_hit_at_1"]["hits"] == 0  # measured, never asserted: the run is recall's own
    assert row["scores"]["judge_p50_seconds"] is not None and row["scores"]["recall_p50_seconds"] is not None
    found = calibration.read(path)
    assert found[MODEL].rows == 1 and found[MODEL].prompt == judge.prompt_digest() and found["openai/another-model"].rows == 70
    assert "fewer than 60" in result.stderr and "suggested #1,#2, judge #1," in result.stderr


# -- the parts alone ----------------------------------------------------------------------------


def test_the_wilson_bound_and_the_rule() -> None:
    assert wilson_upper(0, 60) == pytest.approx(0.0602, abs=1e-4) and wilson_upper(0, 73) <= 0.05 < wilson_upper(0, 72)
    assert wilson_upper(12, 180) == pytest.approx(0.1129, abs=1e-4) and wilson_upper(0, 0) == 1.0 and wilson_upper(5, 2) == 1.0
    ok = Calibration(MODEL, rows=100, right=60, wrong=0, prompt="p")
    assert ok.refusal(0.05, "p") == "" and "another judge prompt" in ok.refusal(0.05, "q")
    assert "upper bound 0.037" in ok.refusal(0.03, "p")


def test_a_missing_or_broken_calibration_is_a_refusal_not_an_error(tmp_path: Path) -> None:
    assert "no calibration configured" in calibration.refusal(None, MODEL, 0.05, "p")
    assert "no calibration of" in calibration.refusal(calibrated(tmp_path / "c.json", 100, 0, "x/y"), MODEL, 0.05, "p")
    (tmp_path / "odd.json").write_text(json.dumps({"models": {MODEL: {"rows": "many", "right": 0, "wrong": 0, "prompt": "p"}}}))
    assert "unreadable" in calibration.refusal(str(tmp_path / "odd.json"), MODEL, 0.05, "p")
    (tmp_path / "bad.json").write_text("{not json")
    assert "unreadable" in calibration.refusal(str(tmp_path / "bad.json"), MODEL, 0.05, "p")
    assert "unreadable" in calibration.refusal(str(tmp_path / "none.json"), MODEL, 0.05, "p")
    with pytest.raises(ValueError):  # never overwritten
        calibration.record(tmp_path / "bad.json", Calibration(MODEL, rows=1, right=1, wrong=0, prompt="p"))


def test_quotes_are_compared_normalised_and_must_share_a_specific_word() -> None:
    evidence = Evidence("api", status_code=503, error="unexpected_status", answer='{"error":"ＥＲＲ  -LOADING  Redis is loading"}')
    past = Candidate(4, "api", "server_error", "resolved", "s", "restart", 0.9, said="Redis -LOADING the dataset in memory")
    assert judge.void(past, evidence, "err -loading redis IS loading", "redis -loading") == ""
    assert judge.void(past, evidence, "503", "memory") == "the words it quoted share nothing specific"
    assert judge.ties("status 503 on api-gw", "api-gw answered 503", "api-gw") == set()


@pytest.mark.parametrize(
    ("judge_section", "model", "message"),
    [
        ({"model": "gpt"}, {}, "memory.judge.model: write none, agent, or a litellm model id"),
        ({"model": True}, {}, "memory.judge.model"),
        ({"model": "agent"}, {"id": "builtin"}, "memory.judge.model: agent, but model.id is builtin, which cannot judge"),
        ({"model": MODEL, "max_false_recall": 0.9}, {}, "memory.judge.max_false_recall"),
        ({"model": MODEL, "max_false_recall": 0}, {}, "memory.judge.max_false_recall"),
        ({"model": MODEL, "api_base": "ftp://x"}, {}, "memory.judge.api_base"),
        ({"model": MODEL, "timeout": "soon"}, {}, "memory.judge.timeout"),
        ({"model": MODEL, "colour": "red"}, {}, "memory.judge.colour"),
    ],
)
def test_bad_judge_config_is_a_clear_error(judge_section: dict[str, Any], model: dict[str, Any], message: str) -> None:
    text = json.dumps({"model": model, "memory": {"judge": judge_section}})
    with pytest.raises(ConfigError) as error:
        parse(text, "config.yaml")
    assert message in str(error.value)


def test_the_judge_is_off_by_default_and_agent_means_the_agents_model() -> None:
    config = Config.model_validate({})
    assert not config.memory.judge.enabled and judge.configured(config.memory.judge, config.model) is None
    model = {"id": "openai/qwen", "api_base": "http://127.0.0.1:9/v1"}
    served = Config.model_validate({"model": model, "memory": {"judge": {"model": "agent"}}})
    reader = judge.configured(served.memory.judge, served.model)
    assert reader is not None and (reader.model, reader.api_base) == ("openai/qwen", "http://127.0.0.1:9/v1")
