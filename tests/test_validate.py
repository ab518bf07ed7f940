"""``monitor validate`` as a new user meets it (hostile input, round three, findings 17 and 19)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from monitor.cli.main import main
from monitor.config import ConfigError, parse

SHIPPED = Path(__file__).parent.parent / "config" / "monitor.yaml"


def validate(path: Path, **env: str) -> Result:
    return CliRunner().invoke(main, ["validate", str(path)], env=env)


def test_the_shipped_config_points_to_validate_not_to_a_check_that_writes_a_database() -> None:
    head = SHIPPED.read_text().splitlines()[:5]
    assert any("monitor validate config/monitor.yaml" in line for line in head), head
    assert not any("monitor check --config" in line for line in head)


def test_validate_names_the_database_that_will_be_used(tmp_path: Path) -> None:
    """It printed "database none" when ./monitor.db would be used; the default is monitor.db beside the config."""
    path = tmp_path / "m.yaml"
    path.write_text("targets:\n- {name: a, url: 'http://a/'}\n")
    done = validate(path)
    assert done.exit_code == 0 and f"database {tmp_path / 'monitor.db'}," in done.output
    assert "database none" not in done.output
    path.write_text("database: data/m.db\ntargets:\n- {name: a, url: 'http://a/'}\n")
    assert f"database {tmp_path / 'data' / 'm.db'}" in validate(path).output


def test_a_timeout_the_target_would_read_stale_before_is_refused() -> None:
    """interval: 100ms with timeout: 1h validated; the rule: a check ends before its target reads as stale."""
    with pytest.raises(
        ConfigError,
        match=r"targets\[0\]: timeout 3600s is longer than interval 0.1s allows: a check "
        r"must end before the target reads as stale \(3 intervals and 30s, 30.3s\)",
    ):
        parse("targets:\n- {name: a, url: 'http://a/', interval: 100ms, timeout: 1h}\n")
    with pytest.raises(ConfigError, match=r"targets\[0\]: timeout 90s is longer than interval 15s allows"):
        parse("defaults: {timeout: 90s}\ntargets:\n- {name: a, url: 'http://a/', interval: 15s}\n")
    assert parse("targets:\n- {name: a, url: 'http://a/', interval: 200ms, timeout: 2s}\n").targets[0].timeout == 2.0
    # a one-off check has no interval for its timeout to fit in
    done = CliRunner().invoke(main, ["check", "http://127.0.0.1:1/", "--timeout", "45s"])
    assert done.exit_code == 2, done.output


@pytest.mark.parametrize("value", ["s3cret\\r\\nX-Injected: 1", "s3cret\\n", "s3\\u0000cret"])
def test_a_header_value_with_a_line_break_is_refused_naming_the_header(tmp_path: Path, value: str) -> None:
    """Finding 19: it validated, then failed every check."""
    path = tmp_path / "m.yaml"
    path.write_text(f'targets:\n- name: a\n  url: "http://a/"\n  headers: {{X-Token: "{value}"}}\n')
    done = validate(path)
    assert done.exit_code == 3
    assert f"{path}:4: targets[0].headers: header X-Token: its value holds a line break or NUL" in done.output
    assert "s3cret" not in done.output  # a header's value is often a secret
    path.write_text('alerts:\n  webhooks:\n  - url: "http://hook/"\n    headers: {Authorization: "${HOOK_AUTH}"}\n')
    done = validate(path, HOOK_AUTH="Bearer x\n")
    assert done.exit_code == 3 and "alerts.webhooks[0].headers: header Authorization" in done.output


def test_validate_prints_each_error_on_a_line_of_its_own(tmp_path: Path) -> None:
    """Finding 19: errors and output ran together; each error is now a `monitor: file:line: field: message` line."""
    path = tmp_path / "m.yaml"
    path.write_text("targets:\n- {name: a, url: 'http://a/', interval: soon}\n- {name: b, url: 'http://b/', timeout: never}\n")
    done = CliRunner().invoke(main, ["validate", str(path)])
    lines = done.output.splitlines()
    assert done.exit_code == 3 and len(lines) == 2, lines
    assert lines[0].startswith(f"monitor: {path}:2: targets[0].interval:")
    assert lines[1].startswith(f"monitor: {path}:3: targets[1].timeout:")
