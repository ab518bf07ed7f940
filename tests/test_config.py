"""Every config error names the file, the field's path and what is allowed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from monitor import config
from monitor.config import ConfigError

GOOD = """
database: monitor.db
defaults:
  interval: 30s
  timeout: 5s
  expect:
    status: [2xx]
targets:
  - name: api
    url: https://api.example.com/health
    headers: {Authorization: "Bearer ${API_TOKEN}"}
    expect:
      max_latency: 800ms
      json: {path: status, equals: ok}
  - name: web
    url: http://web.example.com/
    interval: 2m
    timeout: 500ms
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "monitor.yaml"
    path.write_text(text)
    return path


def error(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        config.load(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    return message


def test_good_config_fills_defaults_and_parses_durations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_TOKEN", "s3cret")
    cfg = config.load(write(tmp_path, GOOD))
    api, web = cfg.targets
    assert api.headers["Authorization"] == "Bearer s3cret"
    assert (api.interval, api.timeout, api.expect.max_latency) == (30.0, 5.0, 0.8)
    assert (web.interval, web.timeout) == (120.0, 0.5)
    assert api.expect.status == frozenset(range(200, 300)) and 404 not in web.expect.status
    assert api.expect.json_ is not None and api.expect.json_.equals == "ok"
    assert cfg.database == str(tmp_path / "monitor.db")


def test_the_shipped_example_config_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_TOKEN", "x")
    cfg = config.load(Path(__file__).parent.parent / "config" / "monitor.yaml")
    assert cfg.targets


def test_bad_status_names_its_path_and_what_is_allowed(tmp_path: Path) -> None:
    message = error(
        tmp_path,
        "targets:\n- {name: a, url: 'http://a/'}\n- {name: b, url: 'http://b/'}\n"
        "- {name: c, url: 'http://c/', expect: {status: [200, 999]}}\n",
    )
    assert "targets[2].expect.status: 999 is not a status code: use codes from 100 to 599 or classes like 2xx" in message


@pytest.mark.parametrize(
    "token, message",
    [
        ("'                '", "web.token has spaces in it"),
        ("aaaaaaaaaaaaaaaa", "web.token has only 1 different characters"),
        ("abababababababab", "web.token has only 2 different characters"),
        ("abcdefghabcdefgh", "web.token repeats 'abcdefgh'"),
        ("abcdefgh", "web.token: String should have at least 16 characters"),
    ],
)
def test_a_guessable_web_token_is_refused(tmp_path: Path, token: str, message: str) -> None:
    """Hostile input, round three, finding 7: these validated."""
    assert message in error(tmp_path, f"web: {{token: {token}}}\ntargets:\n- {{name: a, url: 'http://a/'}}\n")


def test_bad_duration(tmp_path: Path) -> None:
    message = error(tmp_path, "targets:\n- {name: a, url: 'http://a/', interval: soon}\n")
    assert "targets[0].interval: 'soon' is not a duration: write it like 30s, 500ms, 2m or 1h" in message


def test_zero_duration(tmp_path: Path) -> None:
    assert "targets[0].timeout: a duration must be greater than zero" in error(
        tmp_path, "targets:\n- {name: a, url: 'http://a/', timeout: 0s}\n"
    )


def test_unknown_field_lists_the_allowed_ones(tmp_path: Path) -> None:
    message = error(tmp_path, "targets:\n- {name: a, url: 'http://a/', expect: {stauts: 200}}\n")
    assert (
        "targets[0].expect.stauts: unknown field (allowed here: body_contains, body_not_contains, cert_min_days, json, max_latency, status)"
    ) in message


def test_unknown_top_level_field(tmp_path: Path) -> None:
    assert "tagrets: unknown field (allowed here: " in error(tmp_path, "tagrets: []\n")


def test_missing_url(tmp_path: Path) -> None:
    assert "targets[0].url: is required" in error(tmp_path, "targets:\n- {name: a}\n")


def test_bad_url(tmp_path: Path) -> None:
    assert "targets[0].url: 'ftp://a/' is not an http:// or https:// URL" in error(tmp_path, "targets:\n- {name: a, url: 'ftp://a/'}\n")


def test_bad_method_lists_the_allowed_ones(tmp_path: Path) -> None:
    message = error(tmp_path, "targets:\n- {name: a, url: 'http://a/', method: FETCH}\n")
    assert "targets[0].method: Input should be 'GET', 'HEAD', 'POST', 'PUT' or 'OPTIONS'" in message


def test_bad_name(tmp_path: Path) -> None:
    assert "targets[0].name: String should match pattern" in error(tmp_path, "targets:\n- {name: 'has spaces', url: 'http://a/'}\n")


def test_duplicate_names(tmp_path: Path) -> None:
    assert "target name 'a' is used twice; names must be unique" in error(
        tmp_path, "targets:\n- {name: a, url: 'http://a/'}\n- {name: a, url: 'http://b/'}\n"
    )


def test_missing_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_TOKEN", raising=False)
    message = error(tmp_path, "targets:\n- {name: a, url: 'http://a/', headers: {X: '${NOPE_TOKEN}'}}\n")
    assert "targets[0].headers.X: environment variable ${NOPE_TOKEN} is not set" in message


def test_environment_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_TOKEN", raising=False)
    cfg = config.load(write(tmp_path, "targets:\n- {name: a, url: '${NOPE_URL:-http://fallback/}'}\n"))
    assert cfg.targets[0].url == "http://fallback/"


def test_invalid_yaml_names_line_and_column(tmp_path: Path) -> None:
    assert "monitor.yaml:3: invalid YAML at column 1: " in error(tmp_path, "targets:\n  - name: [unclosed\n")


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    assert "the top level must be a mapping" in error(tmp_path, "- just\n- a list\n")


def test_detector_window_must_fit(tmp_path: Path) -> None:
    assert "detectors: window_failures cannot exceed window_size" in error(tmp_path, "detectors: {window_failures: 5, window_size: 3}\n")


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="missing.yaml: cannot read config: No such file"):
        config.load(tmp_path / "missing.yaml")


def test_ollama_host_overrides_the_default_api_base(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11434")
    assert config.parse("{}").model.api_base == "http://gpu-box:11434"


@pytest.mark.parametrize(("text", "seconds"), [("500ms", 0.5), ("30s", 30), ("2m", 120), ("1h", 3600), (5, 5)])
def test_durations(text: object, seconds: float) -> None:
    assert config.parse_duration(text) == seconds


def test_an_allowed_host_with_a_scheme_or_port_is_refused(tmp_path: Path) -> None:
    message = error(tmp_path, "web:\n  allowed_hosts: [monitor.example.org, 'https://evil.example:443']\n")
    assert "monitor.yaml:2: web.allowed_hosts: 'https://evil.example:443' is not a host name" in message


@pytest.mark.every_core
@pytest.mark.parametrize(("cpus", "workers"), [({0}, 1), ({0, 2, 5, 7}, 4), (set(range(300)), 256)])
def test_workers_default_to_a_process_per_core(cpus: set[int], workers: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Left out, ``workers`` is ``auto``: at most one per core the process may run on (one process on one core), at most
    256."""
    from monitor.core import cpus as cpu_count

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: cpus)
    monkeypatch.setattr(cpu_count, "quota_of", lambda root, cgroup: None)  # as on a machine with no CPU quota
    assert config.parse("concurrency: 8\n").workers == workers
    assert config.Config().workers == workers
    assert config.parse("workers: auto\n").workers == workers
    assert config.parse("workers: 3\n").workers == 3


def test_targets_hold_their_equal_parts_once_and_each_keeps_what_it_was_written_with() -> None:
    """50,000 targets weighed 3.2 KB each, half of it a set of written field names and a default ``expect`` of
    their own: now shared, in the config and in what a worker unpickles. Each target still says what it set."""
    import pickle

    from monitor.config import Config
    from monitor.config.targets import DEFAULT_EXPECT

    config = Config.model_validate(
        {
            "targets": [
                {"name": "a", "url": "http://127.0.0.1:9/a"},
                {"name": "b", "url": "http://127.0.0.1:9/b"},
                {"name": "c", "url": "http://127.0.0.1:9/c", "expect": {"status": ["2xx", "3xx"]}},
                {"name": "d", "url": "http://127.0.0.1:9/d", "timeout": 2},
            ]
        }
    )
    a, b, c, d = config.targets
    assert a.expect is b.expect is d.expect is DEFAULT_EXPECT and c.expect is not DEFAULT_EXPECT
    assert c.expect == DEFAULT_EXPECT and c.expect.model_fields_set == {"status"}  # written: its conditions say so
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__ and a.model_fields_set == {"name", "url", "kind"}
    assert d.model_fields_set == {"name", "url", "kind", "timeout"}
    copied = a.model_copy(update={"timeout": 3.0})
    assert "timeout" in copied.model_fields_set and "timeout" not in b.model_fields_set  # a copy has its own
    sent = pickle.loads(pickle.dumps(config.targets))  # as a worker gets its share
    assert sent[0].expect is sent[1].expect and sent[0].__pydantic_fields_set__ is sent[1].__pydantic_fields_set__
    assert sent == config.targets


def test_targets_from_target_files_hold_their_equal_parts_once_too(tmp_path: Path) -> None:
    """Target files' targets join the config after its validators ran: they share their parts all the same."""
    from monitor.config.loader import load
    from monitor.config.targets import DEFAULT_EXPECT

    (tmp_path / "fleet").mkdir()
    (tmp_path / "fleet" / "a.yaml").write_text("".join(f"- {{name: t{i}, url: 'http://127.0.0.1:9/{i}'}}\n" for i in range(3)))
    (tmp_path / "monitor.yaml").write_text("target_files: ['fleet/*.yaml']\ntargets:\n  - {name: a, url: 'http://127.0.0.1:9/a'}\n")
    targets = load(tmp_path / "monitor.yaml").targets
    assert len(targets) == 4 and all(t.expect is DEFAULT_EXPECT for t in targets)
    assert targets[1].__pydantic_fields_set__ is targets[2].__pydantic_fields_set__ is targets[3].__pydantic_fields_set__
