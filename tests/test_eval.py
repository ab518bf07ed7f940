"""The diagnosis eval: every scenario for real on the builtin model, the scores, the loader's errors, the CLI."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from ollama import FakeOllama

from monitor.checks import network
from monitor.checks.tls import Tls
from monitor.cli.main import main
from monitor.eval import harness as evaluation
from monitor.eval.scenario import ScenarioError, load, load_all
from monitor.eval.servers import Behaviour
from monitor.eval.verdict import BASELINE

SCENARIOS = Path(__file__).parents[1] / "bench" / "scenarios"
# The 38 scenarios run once for the module (about 20 s alone), in the first test that asks for them: on a machine
# shared with a model server that took 133 s, over the suite's default timeout.
pytestmark = pytest.mark.timeout(360)
SCORES = {
    "scenarios",
    "root_cause_accuracy",
    "actionable_accuracy",
    "memory_hit_at_1",
    "first_shown",
    "suggested_at_3",
    "recall_at_k",
    "false_recall",
    "false_alarm_rate",
    "valid_tool_calls",
    "diagnosis_recorded",
    "success",
    "tools_required",
    "tools_forbidden_absent",
    "median_steps",
    "input_tokens",
    "output_tokens",
    "p50_seconds",
    "p95_seconds",
    "recall_p50_seconds",
    "recall_p95_seconds",
    "judge_p50_seconds",
    "judge_p95_seconds",
    "judge",
    "infra_errors",
}
SCENARIO_KEYS = {
    "scenario",
    "tags",
    "expected",
    "got",
    "correct",
    "memory_hit",
    "first_shown",
    "false_recall",
    "state",
    "steps",
    "valid_calls",
    "tools",
    "recalled",
    "tools_required_ok",
    "tools_forbidden_ok",
    "input_tokens",
    "output_tokens",
    "seconds",
    "recall_seconds",
    "judge_seconds",
    "infra_error",
    "incident",
    "pattern",
    "answer",
    "claim",
}


def tags_runnable_here() -> tuple[str, ...]:
    return () if shutil.which("openssl") else ("http", "timeout", "network", "latency", "flapping", "content", "recovery", "noise")


NEW = {"blind", "unseen"}  # the scenarios written blind to the code; `unseen` ones are never tuned on


def original(scenarios: list[Any]) -> list[Any]:
    return [s for s in scenarios if not NEW & set(s.tags)]


@pytest.fixture(scope="module")
def suite() -> dict[str, Any]:
    """The 38 scenarios the builtin was developed against, once for this module (about 20 s)."""
    return evaluation.evaluate(original(load_all(SCENARIOS, tags=tags_runnable_here())), ["builtin"])


def row(data: dict[str, Any], model: str) -> dict[str, Any]:
    return next(m for m in data["models"] if m["model"] == model)


def test_the_builtin_model_diagnoses_the_suite(suite: dict[str, Any]) -> None:
    """Full marks on the scenarios the builtin was developed against; the held-out ones as measured."""
    builtin = row(suite, "builtin")
    expected = {s["scenario"]: s["expected"]["related_incident"] for s in builtin["scenarios"]}
    misses = [
        (
            s["scenario"],
            s["expected"]["root_cause"],
            s["got"]["root_cause"],
            s["expected"]["related_incident"],
            s["got"]["suggested"],
            s["state"],
        )
        for s in builtin["scenarios"]
        if not s["correct"]
        or s["false_recall"]
        or s["got"]["suggested"][:1] != [i for i in [expected[s["scenario"]]] if i is not None][:1]
        and expected[s["scenario"]] is not None
        or s["got"]["actionable"] != s["expected"]["actionable"]
        or s["state"] != "success"
    ]
    assert misses == []  # the right past incident asserted, or suggested first; none asserted wrongly
    scores = builtin["scores"]
    assert scores["scenarios"] >= 22 and scores["infra_errors"] == 0
    for complete in (
        "root_cause_accuracy",
        "actionable_accuracy",
        "suggested_at_3",
        "recall_at_k",
        "success",
        "diagnosis_recorded",
        "valid_tool_calls",
        "tools_required",
        "tools_forbidden_absent",
    ):
        assert scores[complete]["hits"] == scores[complete]["of"] > 0, complete
    # Asserted only where the evidence decides (monitor.memory.claims): 10 of the 20 as measured (11 until the words'
    # line moved from 15% to 17%, which took 4 wrong assertions off the `unseen` rows); the rest suggested first
    assert scores["memory_hit_at_1"]["of"] >= 10 and scores["memory_hit_at_1"]["hits"] >= 10
    assert scores["false_recall"]["hits"] == 0 and scores["false_alarm_rate"]["hits"] == 0
    assert scores["false_alarm_rate"]["of"] >= 2
    assert scores["median_steps"] >= 4 and scores["input_tokens"] > scores["output_tokens"] > 0
    # Wall time is the eval report's figure, not this test's: on a loaded machine the p95 was 7.4 s. The bound
    # only catches a run that waits on something (a model, a socket) it should not.
    assert 0 < scores["p50_seconds"] <= scores["p95_seconds"] < 60


def test_the_detector_only_row_knows_the_failure_but_not_the_past_or_the_noise(suite: dict[str, Any]) -> None:
    """It also shows each scenario's target fails the way the scenario says (refused, dns, tls, reset...)."""
    baseline = row(suite, BASELINE)
    assert baseline["baseline"] and suite["models"][0] is baseline
    for scenario in baseline["scenarios"]:
        actionable = scenario["expected"]["actionable"]
        assert scenario["correct"] == actionable, scenario["scenario"]
        assert scenario["got"]["related_incident"] is None and scenario["got"]["actionable"]
    scores = baseline["scores"]
    noise = scores["false_alarm_rate"]["of"]
    assert scores["root_cause_accuracy"]["hits"] == scores["scenarios"] - noise
    assert scores["memory_hit_at_1"]["hits"] == 0 and scores["false_alarm_rate"]["hits"] == noise
    assert scores["success"] is None and scores["valid_tool_calls"] is None and scores["p50_seconds"] is None
    alerts = {s["scenario"]: s["got"]["root_cause"] for s in baseline["scenarios"]}
    assert alerts.get("latency-drift-known-fix", "slow_response") == "slow_response"
    assert alerts.get("flapping-no-history", "flapping") == "flapping"


def test_scores_by_tag_count_the_tagged_scenarios(suite: dict[str, Any]) -> None:
    builtin = row(suite, "builtin")
    for tag, scores in builtin["by_tag"].items():
        assert scores["scenarios"] == sum(tag in s["tags"] for s in builtin["scenarios"])
    assert builtin["by_tag"]["memory"]["suggested_at_3"]["of"] == builtin["by_tag"]["memory"]["scenarios"]


def test_the_report_prints_as_plain_text(suite: dict[str, Any]) -> None:
    out = io.StringIO()  # not a terminal
    evaluation.render(suite, file=out)
    text = out.getvalue()
    assert "Scores (hits/of)" in text and "By tag" in text and "Scenarios: builtin" in text
    assert "\x1b[" not in text
    alerts, agent = text.split("Scenarios: detector only")[1].split("Scenarios: builtin")
    line = next(ln for ln in alerts.splitlines() if ln.startswith("http-500-known-fix "))
    assert line.split()[1:5] == ["server_error", "server_error", "#2/none", "miss:"]
    line = next(ln for ln in agent.splitlines() if ln.startswith("http-500-known-fix "))
    assert line.split()[1:6] == ["server_error", "server_error", "#2/#2", "ok", "success"]


@pytest.mark.sqlite_only("the eval runs each scenario on its own SQLite file, whatever the store under test")
@pytest.mark.timeout(360)  # 278 scenarios, about two minutes; more on a loaded machine
def test_the_blind_scenarios_score_as_measured() -> None:
    """The 278 `blind` scenarios (written without sight of the code, in fourteen batches, each held out until it
    was measured once; tuned on since): the figures measured at the last change without an embedder, so that it
    runs in a minute or two (asserted and right 70/190, suggested@3 185/190, asserted and wrong 3/278: a past fix
    is asserted only where the evidence decides, monitor.memory.claims). A regression fails here. The held-out
    ones are only measured (README), never asserted one by one, so that nobody tunes on them."""
    if tags_runnable_here():
        pytest.skip("openssl is needed for the tls scenarios")
    data = evaluation.evaluate(load_all(SCENARIOS, tags=("blind",)), ["builtin"], baseline=False, embedder="none")
    scores = row(data, "builtin")["scores"]
    assert scores["scenarios"] >= 278 and scores["infra_errors"] == 0
    assert scores["root_cause_accuracy"]["hits"] == scores["scenarios"]
    assert scores["memory_hit_at_1"]["hits"] >= 70 and scores["false_recall"]["hits"] <= 3
    assert scores["suggested_at_3"]["hits"] >= 185
    assert scores["false_alarm_rate"]["hits"] == 0


def test_the_new_scenarios_cover_the_memory_issue() -> None:
    """At least 30 written blind, 12 of them held out, notes in four languages or more, each kind of trap."""
    new = [s for s in load_all(SCENARIOS) if NEW & set(s.tags)]
    assert len(new) >= 30 and sum("unseen" in s.tags for s in new) >= 12
    languages = {"japanese", "chinese", "german", "french", "spanish", "portuguese"}
    assert len(languages & {t for s in new for t in s.tags}) >= 4
    for kind in ("paraphrase", "multilingual", "shared-component", "label-change", "blip", "many-candidates", "injection"):
        assert sum(kind in s.tags for s in new) >= 2, kind


def test_the_suite_covers_the_issue_list() -> None:
    scenarios = original(load_all(SCENARIOS))
    assert len(scenarios) >= 22
    related = sum(s.expect.related_incident is not None for s in scenarios)
    assert 0.4 <= related / len(scenarios) <= 0.6
    assert {s.serve.kind for s in scenarios} == {"http", "refused", "dns", "tls", "redirect_loop", "tcp", "dns_server", "heartbeat"}
    assert {s.serve.cert for s in scenarios if s.serve.kind == "tls"} == {"untrusted", "expired", "wrong_name", "expiring"}
    assert {s.target.kind for s in scenarios} == {"http", "tcp", "tls", "dns", "heartbeat"}
    assert sum(not s.expect.actionable for s in scenarios) >= 2


# -- the command ------------------------------------------------------------------------------------


def test_eval_json_and_out_file_have_the_documented_keys(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    result = CliRunner().invoke(main, ["eval", "--only", "http-500-known-fix", "--only", "noise-single-blip", "--json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert json.loads(out.read_text()).keys() == data.keys() == {"models", "hardware", "date"}
    assert [m["model"] for m in data["models"]] == [BASELINE, "builtin"]
    for model in data["models"]:
        assert model.keys() == {"model", "baseline", "scores", "by_tag", "scenarios"}
        assert model["scores"].keys() == SCORES
        assert {s["scenario"] for s in model["scenarios"]} == {"http-500-known-fix", "noise-single-blip"}
        for scenario in model["scenarios"]:
            assert scenario.keys() == SCENARIO_KEYS
            assert scenario["expected"].keys() == {"root_cause", "related_incident", "actionable"}
            assert scenario["got"].keys() == {"root_cause", "related_incident", "suggested", "actionable"}
    assert data["hardware"]["cpus"] >= 1 and data["hardware"]["python"]
    assert "builtin: noise-single-blip:" in result.stderr


def test_no_baseline_and_tag_filter() -> None:
    result = CliRunner().invoke(main, ["eval", "--tag", "refused", "--no-baseline", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert [m["model"] for m in data["models"]] == ["builtin"]
    names = [s["scenario"] for s in data["models"][0]["scenarios"]]
    assert {"connection-refused-known-fix", "tcp-refused-known-fix"} <= set(names)
    assert all("refused" in load(SCENARIOS / name / "scenario.yaml").tags for name in names)


def test_eval_of_builtin_never_imports_litellm() -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom monitor.cli.main import main\n"
        "r = CliRunner().invoke(main, ['eval', '--only', 'noise-single-blip', '--json'])\n"
        "print(r.exit_code, 'litellm' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.split()[-2:] == ["0", "False"], done.stderr


def test_a_bad_scenarios_directory_exits_3(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["eval", "--scenarios", str(tmp_path / "none")])
    assert result.exit_code == 3 and "not a directory of scenarios" in result.output


# -- infra errors --------------------------------------------------------------------------------


def test_a_model_server_that_fails_is_an_infra_error_not_a_wrong_diagnosis() -> None:
    [scenario] = load_all(SCENARIOS, only=("http-500-known-fix",))
    with FakeOllama(default={"status": 500, "error": "out of memory"}) as ollama:
        data = evaluation.evaluate([scenario], ["ollama_chat/llama3.2"], api_base=ollama.url, model_options={"retries": 0, "timeout": "5s"})
    model = row(data, "ollama_chat/llama3.2")
    [verdict] = model["scenarios"]
    assert verdict["state"] == "model_error" and verdict["infra_error"].startswith("model_error: ")
    assert model["scores"]["infra_errors"] == 1 and model["scores"]["success"]["hits"] == 0
    assert row(data, BASELINE)["scores"]["infra_errors"] == 0
    assert any("infra" in line for _, _, rows in evaluation.tables(data) for line in map(" ".join, rows))


# -- the loader ----------------------------------------------------------------------------------

GOOD = """\
name: {name}
description: a test
tags: [t]
target: {{name: api, path: /health, timeout: 1s, expect: {{status: [200]}}}}
serve: {{script: [{{status: 500}}]}}
history: {{results: [{{ok: false, status_code: 500, error: unexpected_status, times: 3}}]}}
past_incidents:
  - {{target: api, summary: s, root_cause: server_error, resolution: r}}
expect: {{root_cause: server_error, related_incident: 1}}
"""


def write(tmp_path: Path, text: str, name: str = "case") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


def test_a_good_scenario_loads(tmp_path: Path) -> None:
    scenario = load(write(tmp_path, GOOD.format(name="case")))
    assert scenario.expect.root_cause == ["server_error"] and scenario.target_for("http://x/health").timeout == 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ("root_cause: server_error, related", "root_cause: server_eror, related"),
            "expect.root_cause: 'server_eror' is not a root cause (one of: server_error, ",
        ),
        (("expect: {status: [200]}", "expect: {stauts: [200]}"), "target.expect.stauts: unknown field (allowed here: "),
        (("status: [200]", "status: [999]"), "target.expect.status: 999 is not a status code"),
        (("related_incident: 1", "related_incident: 4"), "expect.related_incident: #4 is not a past incident"),
        (("error: unexpected_status", "error: boom"), "history.results[0].error: 'boom' is not an error kind"),
        (("serve: {script: [{status: 500}]}", "serve: {kind: ftp}"), "serve.kind: Input should be 'http'"),
        (
            ("serve: {script: [{status: 500}]}", "serve: {script: [{hang: true, reset: true}]}"),
            "serve.script[0]: hang and reset exclude each other",
        ),
        (("serve: {script: [{status: 500}]}", "serve: {kind: dns, cert: expired}"), "serve: cert does not apply to kind dns"),
        (("tags: [t]", "tags: [t]\nconfig: {agent: {remediation: maybe}}"), "config.agent.remediation: Input should be"),
        (("tags: [t]", "tags: [t]\nconfig: {targets: []}"), "config.targets: set by the runner"),
        (
            ("expect: {root_cause: server_error, related_incident: 1}", "expect: {tools_required: [restart]}"),
            "expect.root_cause: is required",
        ),
        (("name: case", "name: other"), "name: 'other' differs from its folder 'case'"),
        (("{name: api, path: /health,", "{name: api, kind: heartbeat,"), "target: a heartbeat target needs heartbeat: {token:"),
        (("serve: {script: [{status: 500}]}", "serve: {kind: heartbeat, failed: true}"), "serve: failed: true needs last_ping"),
        (
            ("serve: {script: [{status: 500}]}", "serve: {kind: heartbeat, last_ping: 1h, message: boom}"),
            "serve: message is what a job said with its failure: it needs failed: true",
        ),
        (("description: a test", "description: [a: b"), "invalid YAML"),
    ],
)
def test_a_bad_scenario_names_the_file_and_the_field(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    text = GOOD.format(name="case")
    assert change[0] in text
    path = write(tmp_path, text.replace(*change))
    with pytest.raises(ScenarioError) as error:
        load(path)
    assert str(error.value).startswith(f"{path}: ") and message in str(error.value)


def test_tools_and_open_incidents_are_checked(tmp_path: Path) -> None:
    text = GOOD.format(name="case").replace("related_incident: 1}", "related_incident: 1, tools_required: [restart]}")
    with pytest.raises(ScenarioError, match=r"expect.tools_required: 'restart' is not a tool \(one of: check_target"):
        load(write(tmp_path, text))
    text = GOOD.format(name="open").replace("resolution: r}", "resolution: r, status: open}")
    with pytest.raises(ScenarioError, match=r"past_incidents\[0\]: an open incident on 'api' would be the current"):
        load(write(tmp_path, text, "open"))


TLS_CASE = """name: case
description: d
target: {{name: gw, kind: tls, tls: {{server_name: partner-gw.example.com}}}}
serve: {{kind: tls, cert: {cert}}}
expect: {{root_cause: tls_error}}
"""


@pytest.mark.parametrize(
    ("cert", "error"),
    [("expired", "cert_expired"), ("expiring", "cert_expiring"), ("wrong_name", "cert_hostname_mismatch"), ("untrusted", "cert_untrusted")],
)
def test_a_tls_scenario_serves_a_certificate_for_the_name_its_target_asks(tmp_path: Path, cert: str, error: str) -> None:
    """A certificate served for ``expired`` named only 127.0.0.1, so a target with ``tls.server_name`` saw a
    hostname mismatch: the scenario's failure was never the one checked."""
    scenario = load(write(tmp_path, TLS_CASE.format(cert=cert)))
    assert scenario.target.tls is not None
    with Behaviour(scenario.serve, tmp_path, server_name=scenario.target.tls.server_name) as server:
        target = scenario.target_for(server.url_for(scenario.target), server.ca_file)
        result = asyncio.run(Tls(SimpleNamespace(clock=time.time, dialer=network.ANY_ADDRESS)).check(target))  # type: ignore[arg-type]
    assert result.error == error, result.detail
