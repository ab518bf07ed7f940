"""The docs hold to the code: every config block in README.md and docs/ passes the real ``monitor validate``, the
configuration reference covers every field of every config model, and the README stays short.

A config block is a fenced block opened with ```` ```yaml title="monitor.yaml" ````. Other blocks of the same page
with a file name as title (```` ```yaml title="targets/web.yaml" ````) are written beside it first, so a config that
reads them finds them; ``${VAR}`` in a block gets a value. A plain ```` ```yaml ```` block is a fragment (an eval
scenario, part of a config) and is not validated: CONTRIBUTING.md says when to use one.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner

from monitor.cli.main import main

ROOT = Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r'^```yaml title="([^"]+)"\n(.*?)^```', re.S | re.M)
CONFIG = "monitor.yaml"
TOKEN = "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789_-ab"  # passes as a heartbeat's token and the web's


def blocks(page: Path) -> list[tuple[int, str, str]]:
    """Every titled yaml block of a page: its line, its title and its text."""
    text = page.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)) for m in BLOCK.finditer(text)]


def configs() -> list[tuple[Path, int]]:
    return [(page, line) for page in PAGES for line, title, _ in blocks(page) if title == CONFIG]


def where(page: Path, line: int) -> str:
    return f"{page.relative_to(ROOT)}:{line}"


@pytest.mark.parametrize("page, line", configs(), ids=[where(p, n) for p, n in configs()])
def test_every_config_block_validates(page: Path, line: int, tmp_path: Path) -> None:
    found = blocks(page)
    for _, title, body in found:
        if title != CONFIG:
            (tmp_path / title).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / title).write_text(body)
    config = next(body for n, title, body in found if n == line)
    (tmp_path / CONFIG).write_text(config)
    variables = set(re.findall(r"\$\{(\w+)", "".join(body for _, _, body in found)))
    env = {var: TOKEN for var in variables} | {"MONITOR_REPLICA_INDEX": "0"}
    done = CliRunner().invoke(main, ["validate", str(tmp_path / CONFIG)], env=env)
    assert done.exit_code == 0, f"{where(page, line)}: the config block does not validate:\n{done.output}"


def test_the_pages_have_config_blocks() -> None:
    """The marker is in use: a typo in it would leave every block unchecked."""
    assert len(configs()) >= 12 and any(page.name == "README.md" for page, _ in configs())


def reference() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reference", ROOT / "docs" / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_describes_every_field_of_every_config_model() -> None:
    hook = reference()
    assert hook.missing() == [], "described in neither the model nor docs/hooks/fields.yaml"
    assert hook.stale() == [], "described in docs/hooks/fields.yaml, but no config model has it"


def test_the_reference_page_has_a_row_for_every_field() -> None:
    hook = reference()
    page = hook.render()
    for model in hook.models():
        assert f"{{#{hook.anchor(model)}}}" in page, model
        for name, field in hook.written(model):
            assert f"| `{hook.key_of(name, field)}` |" in page, f"{model.__name__}.{name}"
    marked = (ROOT / "docs" / hook.PAGE).read_text()
    assert hook.MARKER in marked, "the reference page lost the marker the hook fills in"


def test_the_reference_generator_reads_types_and_defaults() -> None:
    hook = reference()
    page = hook.render()
    assert "| `interval` | duration | `30s` |" in page
    assert "| `retention` | duration | `30d` |" in page
    assert "| `workers` | integer or `auto` (≥ 1, ≤ 256) | `auto` | Checking processes on this machine: `auto` (as many" in page
    assert "| `protocol` | one of `udp`, `tcp` | `udp` |" in page
    assert "| `json` | [JsonExpect](#jsonexpect) or none | none |" in page


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines; the rest belongs in docs/"
