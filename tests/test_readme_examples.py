"""Every config example in the README validates: a new user pastes them. A fragment (indented, a target of
``targets:``) is read under ``targets:``; an example that names targets it does not define (a status page, a
maintenance window) gets plain ones of those names; ``${VAR}`` gets a value."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.config import parse

README = Path(__file__).parent.parent / "README.md"
BLOCK = re.compile(r"^```yaml\n(.*?)^```", re.S | re.M)


def examples() -> list[tuple[int, str]]:
    text = README.read_text()
    found = []
    for match in BLOCK.finditer(text):
        body = match.group(1)
        line = text.count("\n", 0, match.start()) + 1
        read = yaml.safe_load(body)
        if isinstance(read, list) or (isinstance(read, dict) and "serve" in read):
            continue  # a target file (read with its config below), an eval scenario (tests/test_eval.py)
        found.append((line, body))
    return found


def named(read: dict[str, Any]) -> set[str]:
    names = {n for window in read.get("maintenance") or [] for n in window.get("targets", [])}
    return names | {n for page in read.get("status_pages") or [] for g in page["groups"] for n in g["targets"]}


def completed(body: str) -> str:
    if body.startswith(" "):
        body = "targets:\n" + body
    read = yaml.safe_load(body)
    if "targets" not in read and named(read):
        body += "targets:\n" + "".join(f"  - {{name: {n}, url: 'http://127.0.0.1:9/{n}'}}\n" for n in sorted(named(read)))
    return body


@pytest.mark.parametrize("line, body", examples(), ids=[f"README.md:{line}" for line, _ in examples()])
def test_a_readme_config_example_validates(line: int, body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in set(re.findall(r"\$\{(\w+)\}", body)):
        monkeypatch.setenv(var, "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-ab")
    monkeypatch.setenv("MONITOR_REPLICA_INDEX", "0")
    parse(completed(body), f"README.md:{line}")


def test_the_target_files_example_validates(tmp_path: Path) -> None:
    text = README.read_text()
    config, listed = (
        m.group(1) for m in BLOCK.finditer(text) if "target_files" in m.group(1) or m.group(1).startswith("# targets/web.yaml")
    )
    (tmp_path / "targets").mkdir()
    (tmp_path / "targets" / "web.yaml").write_text(listed)
    (tmp_path / "monitor.yaml").write_text(config)
    from monitor.config import load

    assert [t.name for t in load(tmp_path / "monitor.yaml").targets] == ["api", "web-1", "web-2"]
