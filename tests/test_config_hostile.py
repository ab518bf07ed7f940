"""Issue #8, findings 7-9: hostile and mistaken configs are clear errors (file:line: field: what), never a crash."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from monitor import config
from monitor.config import ConfigError

TARGET = "targets:\n- {name: a, url: 'http://a/'}\n"


def error(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "monitor.yaml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(ConfigError) as info:
        config.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}:"), message
    return message


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, levels):
        refs = ", ".join([f"*a{level - 1}"] * width)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(lines) + f"\ntargets:\n- {{name: a, url: 'http://a/', headers: {{X: '${{HOME}}'}}, body: *a{levels - 1}}}\n"


# -- finding 7: what killed the daemon on SIGHUP is a ConfigError ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"targets: []\n# caf\xe9\n", "monitor.yaml:2: not UTF-8 text"),
        ("targets: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than"),
        ("defaults: {interval: .inf}\n" + TARGET, "monitor.yaml:1: defaults.interval: "),
        ("defaults: {interval: 999999999999999999999d}\n" + TARGET, "monitor.yaml:1: defaults.interval: "),
        ("targets:\n- name: a\n  url: 'http://a/'\n  interval: 999999999999999999999d\n", "monitor.yaml:4: targets[0].interval: "),
    ],
    ids=["non-utf8", "nesting", "inf", "huge-flow", "huge-block"],
)
def test_finding7_what_killed_the_daemon_is_a_config_error(tmp_path: Path, text: str | bytes, expected: str) -> None:
    assert expected in error(tmp_path, text)


@pytest.mark.timeout(20)
def test_finding8_an_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    assert "aliases expand to more than" in error(tmp_path, alias_bomb())
    assert time.monotonic() - started < 2


@pytest.mark.timeout(30)
def test_finding8_a_wide_file_under_the_size_limit_is_refused_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    assert "monitor.yaml:1: more than 100,000 nodes" in error(tmp_path, "targets: [" + "1," * 500_000 + "1]\n")
    assert time.monotonic() - started < 2


def test_finding8_a_huge_file_is_refused_unread(tmp_path: Path) -> None:
    assert "larger than 1 MiB" in error(tmp_path, TARGET + "#" * (2 << 20) + "\n")


def test_finding8_a_config_path_that_is_not_a_file_is_refused(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="not a regular file"):
        config.load(fifo)


def test_finding8_anchors_and_merge_keys_still_work(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "x-common: &common {interval: 2m, timeout: 3s}\ntargets:\n"
        "- {<<: *common, name: a, url: 'http://a/'}\n- {<<: *common, name: b, url: 'http://b/', timeout: 1s}\n"
    )
    a, b = config.load(path).targets
    assert (a.interval, a.timeout, b.interval, b.timeout) == (120.0, 3.0, 120.0, 1.0)


# -- finding 9: what validate accepted and the daemon then got wrong ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("defaults: {timeout: .nan}\n" + TARGET, "monitor.yaml:1: defaults.timeout: "),
        ("memory: {retention: .inf}\n", "monitor.yaml:1: memory.retention: "),
        ("detectors: {flap_window: .nan}\n", "monitor.yaml:1: detectors.flap_window: "),
        ("detectors:\n  latency_factor: .inf\n", "monitor.yaml:2: detectors.latency_factor: "),
        ("targets:\n- {name: a, url: 'http://a:99999/'}\n", "monitor.yaml:2: targets[0].url: port 99999 is out of range"),
        (
            "alerts:\n  webhooks:\n  - url: gopher://hooks/\n",
            "monitor.yaml:3: alerts.webhooks[0].url: 'gopher://hooks/' is not an http:// or https:// URL",
        ),
        ("alerts: {alertmanager: not a url}\n", "alerts.alertmanager: 'not a url' is not an http:// or https:// URL"),
        ("model: {api_base: 'http://gpu:77777'}\n", "model.api_base: port 77777 is out of range"),
        ("targets: []\ntargets: []\n", "monitor.yaml:2: targets: duplicate key (first at line 1)"),
        ("agent:\n  remediation: yes\n", "monitor.yaml:2: agent.remediation: "),
        ("agent:\n  remediation: true\n", "monitor.yaml:2: agent.remediation: "),
        ("", "the file is empty"),
        ("# only a comment\n", "the file is empty"),
        (
            TARGET + "maintenance:\n- {targets: [a, ghost], start: 2030-01-01T00:00:00Z, end: 2030-01-02T00:00:00Z}\n",
            "monitor.yaml:4: maintenance[0].targets[1]: no target named 'ghost'",
        ),
        (
            TARGET + "maintenance:\n- {targets: [a], start: 2030-01-02T00:00:00Z, end: 2030-01-01T00:00:00Z}\n",
            "monitor.yaml:4: maintenance[0].end: ends before it starts",
        ),
        ("targets:\n- name: a\n  url: ftp://a/\n", "monitor.yaml:3: targets[0].url: 'ftp://a/' is not an http:// or https:// URL"),
        (
            "targets:\n- {name: a, url: 'http://a/', actions: {restart: {url: 'file:///etc/passwd'}}}\n",
            "targets[0].actions.restart.url: 'file:///etc/passwd' is not an http:// or https:// URL",
        ),
        ("x: {\n", "monitor.yaml:2: invalid YAML"),
        ("maintenance:\n- {targets: [], start: 2030-13-45, end: 2030-01-01}\n", "monitor.yaml:2: "),
    ],
)
def test_finding9_traps_are_clear_errors(tmp_path: Path, text: str, expected: str) -> None:
    assert expected in error(tmp_path, text)


def test_finding9_a_duplicate_target_name_hides_no_other_error(tmp_path: Path) -> None:
    message = error(tmp_path, "targets:\n- {name: a, url: 'http://a/'}\n- {name: a, url: 'http://b/'}\n- {name: c, url: 'ftp://c/'}\n")
    assert "monitor.yaml:3: targets[1].name: target name 'a' is used twice" in message
    assert "monitor.yaml:4: targets[2].url: 'ftp://c/' is not an http:// or https:// URL" in message


def test_finding9_a_bad_default_is_reported_once_and_a_target_override_on_its_own_line(tmp_path: Path) -> None:
    message = error(
        tmp_path, "defaults: {timeout: .nan}\ntargets:\n- {name: a, url: 'http://a/'}\n- {name: b, url: 'http://b/', timeout: .inf}\n"
    )
    assert message.splitlines() == [
        f"{tmp_path / 'monitor.yaml'}:1: defaults.timeout: a duration must be a finite number, not nan",
        f"{tmp_path / 'monitor.yaml'}:4: targets[1].timeout: a duration must be a finite number, not inf",
    ]


def test_a_thousand_problems_make_a_bounded_message() -> None:
    targets = "".join(f"- {{name: t{i}, url: 'ftp://x/', interval: .nan}}\n" for i in range(1000))
    with pytest.raises(ConfigError) as info:
        config.parse("targets:\n" + targets, "m.yaml")
    lines = str(info.value).splitlines()
    assert len(lines) == 51 and lines[-1] == "m.yaml: ... and 1950 more problems"


def test_an_error_about_a_url_never_shows_its_secrets(tmp_path: Path) -> None:
    message = error(
        tmp_path, "alerts:\n  webhooks:\n  - url: 'gopher://bot:hunter2@hooks/?token=abc'\n  alertmanager: 'http://am:hunter2@am:99999/'\n"
    )
    assert "hunter2" not in message and "abc" not in message
    assert "monitor.yaml:3: alerts.webhooks[0].url: 'gopher://***@hooks/?token=***' is not an http" in message


def test_finding9_schema_errors_carry_line_numbers(tmp_path: Path) -> None:
    message = error(tmp_path, "targets:\n- name: a\n  url: 'http://a/'\n  expect:\n    stauts: 200\n")
    assert "monitor.yaml:5: targets[0].expect.stauts: unknown field" in message


def test_finding9_bare_off_and_on_mean_what_users_mean(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("agent: {mode: off, remediation: off}\nmodel: {constrain: on}\ndefaults: {verify_tls: no}\n" + TARGET)
    cfg = config.load(path)
    assert (cfg.agent.mode, cfg.agent.remediation, cfg.model.constrain) == ("off", "off", "on")
    assert cfg.targets[0].verify_tls is False


def test_finding9_nested_defaults_and_a_literal_dollar_brace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_A", raising=False)
    monkeypatch.setenv("SET_B", "http://b/")
    cfg = config.parse(
        "targets:\n- name: a\n  url: '${NOPE_A:-${SET_B}}'\n  headers: {X: 'pa$${ss}', Y: '${NOPE_A:-${NOPE_A:-deep}}', Z: 'a$b'}\n"
    )
    assert cfg.targets[0].url == "http://b/"
    assert cfg.targets[0].headers == {"X": "pa${ss}", "Y": "deep", "Z": "a$b"}


def test_finding9_an_unclosed_substitution_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"<config>:2: targets\[0\].url: unclosed \$\{"):
        config.parse("targets:\n- {name: a, url: '${NOPE_A:-http://a/'}\n")


# -- the fuzz pass: whatever the text, load gives a Config or a ConfigError --------------------------------------

SCALARS = st.sampled_from(
    [
        "0",
        "-1",
        "99999",
        "1e999",
        ".nan",
        ".inf",
        "-.inf",
        "~",
        "null",
        "off",
        "on",
        "yes",
        "no",
        "true",
        "''",
        "30s",
        "500ms",
        "999999999999999999999d",
        "2030-13-45",
        "2030-01-01T00:00:00Z",
        "!!binary 'not base64!'",
        "!!python/object:os.system x",
        "'${HOME}'",
        "'${NOPE_X:-${HOME}}'",
        "'${'",
        "'$${x}'",
        "*nope",
        "&a x",
        "[]",
        "{}",
        "[1, [2, [3]]]",
        "{a: b}",
        "'http://a:99999/'",
        "'gopher://x/'",
        "'http://a/'",
        "2xx",
        "!!float x",
        "!!timestamp 2030-01-01",
        "!!int 0x",
        "? [a]",
        "'\\x00'",
        "\t",
        "|",
        ">",
        "%YAML 1.1",
    ]
)
KEYS = st.sampled_from(
    [
        "database",
        "defaults",
        "targets",
        "detectors",
        "model",
        "agent",
        "memory",
        "metrics",
        "alerts",
        "maintenance",
        "concurrency",
        "name",
        "url",
        "interval",
        "timeout",
        "expect",
        "status",
        "json",
        "path",
        "equals",
        "headers",
        "actions",
        "method",
        "mode",
        "remediation",
        "retention",
        "flap_window",
        "latency_factor",
        "webhooks",
        "alertmanager",
        "start",
        "end",
        "port",
        "api_base",
        "id",
        "max_steps",
        "<<",
        "x",
        "1",
    ]
)


def _yaml(tree: object, indent: int = 0) -> str:
    pad = " " * indent
    if isinstance(tree, dict):
        return "".join(f"\n{pad}{k}:{_yaml(v, indent + 2)}" for k, v in tree.items()) or " {}"
    if isinstance(tree, list):
        return "".join(f"\n{pad}-{_yaml(v, indent + 2)}" for v in tree) or " []"
    return f" {tree}"


TREES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=5)), max_leaves=25)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=st.dictionaries(KEYS, TREES, max_size=6))
@example(tree={"database": "0", "defaults": "0", "alerts": {"database": "0", "webhooks": "-1"}})  # a TypeError once
def test_fuzz_structured_configs_never_raise_anything_but_config_error(tree: dict[str, object]) -> None:
    _parses_or_says_why(_yaml(tree).lstrip("\n").encode())


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=300)
    | st.text(max_size=300).map(str.encode)
    | st.text(alphabet="[]{}&*!|>-:?,#'\"%@<=~ \n\tax1.", max_size=120).map(str.encode)
)
def test_fuzz_arbitrary_bytes_never_raise_anything_but_config_error(data: bytes) -> None:
    _parses_or_says_why(data)


@settings(max_examples=300, deadline=None)
@given(value=st.text(alphabet="${}:-_aZ9\\'\"", max_size=40))
def test_fuzz_substitution_never_raises_anything_but_config_error(value: str) -> None:
    _parses_or_says_why(f"targets:\n- {{name: a, url: 'http://a/', headers: {{X: {json.dumps(value)}}}}}\n".encode())


def _parses_or_says_why(data: bytes) -> None:
    try:
        config.parse_bytes(data, "fuzz.yaml")
    except ConfigError as exc:
        assert str(exc).startswith("fuzz.yaml"), str(exc)


# -- monitor validate: the same errors, exit 3, never a traceback ------------------------------------------------


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "monitor", "validate", str(path)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "text",
    [b"targets: []\n# caf\xe9\n", b"targets: " + b"[" * 5000 + b"]" * 5000, alias_bomb().encode(), b"", b"targets: []\ntargets: []\n"],
    ids=["non-utf8", "nesting", "alias-bomb", "empty", "duplicate-key"],
)
def test_validate_exits_3_with_file_and_line(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "m.yaml"
    path.write_bytes(text)
    done = validate(path)
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"monitor: {path}:"), done.stderr


def test_validate_says_when_run_would_refuse_the_config(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("database: m.db\n")
    done = validate(path)
    assert done.returncode == 0 and "no targets: monitor run needs at least one" in done.stdout


def test_a_url_with_non_ascii_characters_is_checked_not_crashed_on(tmp_path: Path) -> None:
    """An internationalized host or a UTF-8 path reached the HTTP client as written, which refused it with a
    TypeError: the target was never checked, with a traceback each cycle. It is sent IDNA- and percent-encoded."""
    from servers import Misbehaving

    from monitor.checks.engine import Checker

    with Misbehaving() as web:
        path = tmp_path / "monitor.yaml"
        path.write_text(f"targets:\n- {{name: a, url: '{web.url('/é?q=ü')}'}}\n- {{name: b, url: 'http://bücher.invalid/'}}\n")
        loaded = config.load(path)
        assert [t.url for t in loaded.targets] == [web.url("/%C3%A9?q=%C3%BC"), "http://xn--bcher-kva.invalid/"]
        result = Checker().run([loaded.targets[0]])[0]
        assert result.status_code == 404 and web.hits[-1] == "/%C3%A9?q=%C3%BC"
    assert "not an http:// or https:// URL" in error(tmp_path, "targets:\n- {name: a, url: 'http://☃.example/'}\n")
