"""Where a config's database is: relative to the config file, whatever directory a command runs in, as an MCP
client starts ``monitor mcp`` (from its own directory); the old place, the working directory, still read with a
warning; ``monitor mcp`` answering before the daemon ever ran, and every error naming the absolute path."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from servers import Misbehaving
from test_mcp import said

from monitor.config import load
from monitor.store import Store

pytestmark = pytest.mark.sqlite_only("where a SQLite file is")
READ_TOOLS = {"targets", "target", "results", "incidents", "incident", "recall", "review"}
GATUS = """\
endpoints:
  - name: api
    url: {url}
    interval: 1m
    conditions:
      - "[STATUS] == 200"
"""


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("MONITOR_DATABASE", "MONITOR_CONFIG")}


def monitor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "monitor", *args], cwd=cwd, env=clean_env(), capture_output=True, text=True, timeout=120)


@pytest.fixture
def imported(tmp_path: Path, web: Misbehaving) -> Path:
    """A Gatus config imported by ``monitor import gatus`` into conf/imported.yaml; its target answers 200."""
    (tmp_path / "gatus.yaml").write_text(GATUS.format(url=web.url("/healthy")))
    (tmp_path / "conf").mkdir()
    done = monitor("import", "gatus", "gatus.yaml", "-o", "conf/imported.yaml", "--report", "report.txt", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path / "conf" / "imported.yaml"


def beside(config: Path) -> Path:
    """The database an imported config names (``monitor.db`` when it names none), beside it."""
    database = Path(load(config).database or "")
    assert database.parent == config.parent, database
    return database


def elsewhere(tmp_path: Path, name: str) -> Path:
    place = tmp_path / name
    place.mkdir()
    return place


@asynccontextmanager
async def session(config: Path, cwd: Path, errors: Path) -> AsyncIterator[ClientSession]:
    """The SDK's client talking to ``monitor mcp --config CONFIG`` started in ``cwd``, as an MCP client starts it."""
    server = StdioServerParameters(command=sys.executable, args=["-m", "monitor", "mcp", "--config", str(config)], cwd=cwd, env=clean_env())
    with errors.open("w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            yield client


async def tools_and_targets(client: ClientSession) -> tuple[set[str], dict[str, Any]]:
    listed = {tool.name for tool in (await client.list_tools()).tools}
    found = await client.call_tool("targets", {})
    assert not found.is_error, found.content
    assert found.structured_content is not None
    return listed, found.structured_content


def test_mcp_from_another_directory_serves_before_and_after_the_daemon_ran(imported: Path, tmp_path: Path) -> None:
    database = beside(imported)
    client_dir, daemon_dir = elsewhere(tmp_path, "client"), elsewhere(tmp_path, "daemon")

    async def script() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with session(imported, client_dir, tmp_path / "mcp-before.txt") as client:
            seen["before"] = await tools_and_targets(client)
            refused = await client.call_tool("confirm_suggestion", {"incident": 1, "other": 2, "same": True})
            seen["refused"] = (refused.is_error, said(refused))
            seen["made"] = database.exists()  # a reader makes no database
            ran = await anyio.to_thread.run_sync(lambda: monitor("run", "--once", "--config", str(imported), cwd=daemon_dir))
            assert ran.returncode == 0, ran.stderr
            seen["same session"] = await tools_and_targets(client)  # the daemon's database, once it is there
        async with session(imported, client_dir, tmp_path / "mcp-after.txt") as client:
            seen["after"] = await tools_and_targets(client)
        return seen

    seen = anyio.run(script)
    listed, before = seen["before"]
    assert listed >= READ_TOOLS
    assert [(item["name"], item["state"]) for item in before["items"]] == [("api", "unknown")]
    assert before["note"] == f"no checks have been recorded yet: {database} does not exist until the daemon (monitor run) has started"
    assert seen["refused"][0] and str(database) in seen["refused"][1]
    assert seen["made"] is False
    assert database.exists() and not (daemon_dir / database.name).exists() and not (client_dir / database.name).exists()
    for when in ("same session", "after"):
        listed, answered = seen[when]
        assert listed >= READ_TOOLS
        assert [(item["name"], item["state"]) for item in answered["items"]] == [("api", "up")], when
        assert "note" not in answered


def test_every_command_finds_the_database_beside_the_config(imported: Path, tmp_path: Path) -> None:
    ran = monitor("run", "--once", "--config", str(imported), cwd=elsewhere(tmp_path, "daemon"))
    assert ran.returncode == 0, ran.stderr
    other = elsewhere(tmp_path, "other")
    status = monitor("status", "--config", str(imported), "--json", cwd=other)
    assert status.returncode == 0, status.stderr
    assert [(row["target"], row["state"]) for row in json.loads(status.stdout)["targets"]] == [("api", "up")]
    listed = monitor("incidents", "list", "--config", str(imported), cwd=other)
    assert listed.returncode == 0, listed.stderr
    validated = monitor("validate", str(imported.relative_to(tmp_path)), cwd=tmp_path)
    assert f"database {beside(imported)}," in validated.stdout


def test_an_error_names_the_absolute_path_it_tried(imported: Path, tmp_path: Path) -> None:
    done = monitor("status", "--config", os.path.relpath(imported, tmp_path / "conf"), cwd=tmp_path / "conf")
    assert done.returncode == 3
    assert f"no database {beside(imported)} " in done.stderr


def test_the_old_place_is_read_with_a_warning_naming_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A daemon that named no database kept it in the directory it ran in: that file goes on being used until
    one is beside the config."""
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "monitor.yaml"
    config.write_text("targets:\n  - {name: api, url: 'http://127.0.0.1:9/'}\n")
    monkeypatch.chdir(tmp_path)
    assert load(config).database == str(tmp_path / "conf" / "monitor.db")  # nothing anywhere: beside the config
    Store(tmp_path / "monitor.db").close()
    with caplog.at_level(logging.WARNING, logger="monitor.config"):
        assert load("conf/monitor.yaml").database == str(tmp_path / "monitor.db")
    warned = caplog.text
    assert str(tmp_path / "monitor.db") in warned and str(tmp_path / "conf" / "monitor.db") in warned
    Store(tmp_path / "conf" / "monitor.db").close()
    assert load(config).database == str(tmp_path / "conf" / "monitor.db")  # once it is there, the new place
