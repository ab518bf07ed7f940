"""The extension points (monitor/core/plugins.py): a check kind, an agent tool, an alert receiver and a web page, each
found in one entry point group of the installed distributions, monitor's own built-ins as a plugin's."""

from __future__ import annotations

import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from monitor.agent import tools
from monitor.config.alerts import BUILTIN_RECEIVERS
from monitor.core import plugins
from monitor.web import routes

ROOT = Path(__file__).parent.parent
BUILTIN = {plugins.TOOLS: tools.BUILTIN, plugins.RECEIVERS: BUILTIN_RECEIVERS, plugins.PAGES: routes.BUILTIN}


@pytest.mark.parametrize("group", list(BUILTIN))
def test_the_built_ins_are_monitors_own_entry_points_in_their_order(group: str) -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"][group]
    assert tuple(declared) == BUILTIN[group]
    installed = {p.name: p.value for p in entry_points(group=group) if plugins.is_ours(p)}
    assert installed == declared, "the installed metadata is stale: pip install -e ."


def test_the_agents_tools_and_the_web_uis_pages_are_what_the_entry_points_name() -> None:
    assert [tool.name for tool in tools.loaded()][: len(tools.BUILTIN)] == list(tools.BUILTIN)
    assert [page.name for page in routes.loaded()][: len(routes.BUILTIN)] == list(routes.BUILTIN)
    assert routes.navigation()[:2] == (("/", "Overview"), ("/incidents", "Incidents"))


def test_a_built_in_that_monitors_metadata_does_not_name_says_to_reinstall(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(routes, "BUILTIN", (*routes.BUILTIN, "gone"))
    with pytest.raises(LookupError, match="'gone' is built in, but no installed monitor-agent names it in monitor.pages"):
        routes.loaded()
