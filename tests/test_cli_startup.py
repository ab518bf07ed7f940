"""`monitor check URL` starts fast because it imports only what a check needs: held here on its import graph, so the
gain cannot silently regress (bench/startup.py measures the time). The commands are imported when they run, and
``monitor --help`` still lists every one."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner
from servers import Misbehaving

import monitor.config
from monitor.cli.main import COMMANDS, command, main

# What a one-shot check of a URL never needs: the agent and its model libraries, the web UI, the store, the other
# commands, and the parts of a config beside its targets.
NEVER = (
    "litellm",
    "smolagents",
    "starlette",
    "uvicorn",
    "sqlite_utils",
    "psycopg",
    "rich",
    "importlib.metadata",  # pydantic's plugin loader imports it to find plugins: a check uses none
    "monitor.agent",
    "monitor.memory",
    "monitor.web",
    "monitor.store",
    "monitor.incidents",
    "monitor.alerts",
    "monitor.daemon",
    "monitor.cli.agent",
    "monitor.cli.web",
    "monitor.cli.run",
    "monitor.cli.incidents",
    "monitor.config.schema",
    "monitor.config.agent",
    "monitor.config.alerts",
    "monitor.config.status",
    "monitor.config.loader",
)
CHECK = (
    "import json, sys\n"
    "from monitor.cli.main import main\n"
    "try:\n    main(sys.argv[1:])\n"
    "except SystemExit as exc:\n    code = exc.code\n"
    "print(json.dumps([code, sorted(sys.modules)]))\n"
)


def imported_by(*args: str) -> tuple[int, list[str]]:
    """The exit code of ``monitor ARGS`` run in a fresh interpreter, and every module it imported."""
    done = subprocess.run([sys.executable, "-c", CHECK, *args], capture_output=True, text=True, timeout=60)
    code, modules = json.loads(done.stdout.strip().splitlines()[-1])
    return code, modules


def loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == name or m.startswith(f"{name}.") for name in names))


def test_checking_a_url_imports_no_agent_web_store_or_whole_config(web: Misbehaving) -> None:
    code, modules = imported_by("check", web.url("/healthy"))
    assert code == 0
    assert loaded(modules, NEVER) == []
    assert "monitor.checks.http" in modules and "monitor.config.targets" in modules  # it did check, with its targets


def test_a_failed_check_imports_no_more(web: Misbehaving) -> None:
    code, modules = imported_by("check", web.url("/500"), "--json")
    assert code == 2
    assert loaded(modules, NEVER) == []


def test_help_lists_every_command_and_each_is_found_by_its_name() -> None:
    done = CliRunner().invoke(main, ["--help"])
    assert done.exit_code == 0, done.output
    listed = [line.split()[0] for line in done.output.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == sorted(COMMANDS)
    for name in COMMANDS:
        found = command(name)
        assert isinstance(found, click.Command) and found.name == name
    assert command("no-such-command") is None


def test_an_unknown_command_is_a_usage_error() -> None:
    done = CliRunner().invoke(main, ["chekc"])
    assert done.exit_code == 3 and "No such command 'chekc'" in done.output


def test_every_name_of_the_config_package_is_found_where_it_is_said_to_be() -> None:
    assert sorted(monitor.config._WHERE) == sorted(monitor.config.__all__)
    for name in monitor.config.__all__:
        assert getattr(monitor.config, name) is not None, name


# Three dependencies load what a one-shot check never uses, and none has a public setting that stops it: httpcore
# imports trio at import when it is installed (about 105 ms here), httpx imports its own CLI (click, rich, pygments:
# about 57 ms), and pydantic imports importlib.metadata to read the plugin setting it offers
# (PYDANTIC_DISABLE_PLUGINS, set too) before it reads it (about 31 ms). ``monitor check`` blocks the first two through
# the import system's own rule (a None in sys.modules is an ImportError, which both catch) and answers the third's
# loader with none. The tests below fail when a dependency changes so that a block is no longer needed, or no longer
# works: then it goes, or is written again.
def fresh(code: str) -> list[str]:
    """The modules a fresh interpreter has loaded after ``code`` (a name blocked with None is not loaded)."""
    listed = "import json, sys\nprint(json.dumps(sorted(name for name, module in sys.modules.items() if module is not None)))"
    done = subprocess.run([sys.executable, "-c", f"{code}\n{listed}"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def tried_imports(package: str) -> set[str]:
    """What ``package``'s modules import at their top level inside a ``try`` that takes an ImportError as "not
    installed" (read off its source, so it holds in a venv where those are not installed)."""
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.submodule_search_locations
    found = set()
    for path in Path(next(iter(spec.submodule_search_locations))).rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.Try):
                continue
            caught = [ast.unparse(handler.type) for handler in node.handlers if handler.type]
            if any("ImportError" in names for names in caught):
                found |= {alias.name for n in node.body if isinstance(n, ast.Import) for alias in n.names}
    return found


def test_httpcore_still_imports_trio_and_takes_no_for_an_answer() -> None:
    # when these fail, httpcore stopped importing trio: the block in cli/check.py goes
    assert "trio" in tried_imports("httpcore")  # a venv without trio (CI's) runs no import of it to see
    if importlib.util.find_spec("trio") is not None:
        assert "trio" in fresh("import httpcore")
    assert "trio" not in fresh("import sys\nsys.modules['trio'] = None\nimport httpcore, httpx")


def test_httpx_still_imports_its_cli_and_takes_no_for_an_answer() -> None:
    assert "rich" in fresh("import httpx")  # when this fails, httpx stopped: the block in cli/__init__.py goes
    blocked = fresh("import sys\nsys.modules['httpx._main'] = None\nimport httpx\nassert callable(httpx.main)")
    assert "rich" not in blocked and "click" not in blocked


def test_pydantic_still_reads_its_plugin_setting_after_importing_importlib_metadata() -> None:
    model = "import pydantic\nclass A(pydantic.BaseModel):\n    x: int\nA(x=1)\n"
    setting = "import os\nos.environ['PYDANTIC_DISABLE_PLUGINS'] = '__all__'\n"
    assert "importlib.metadata" in fresh(setting + model)  # when this fails, the setting is enough: the loader goes
    quiet = fresh(f"{setting}from monitor.cli.check import without_pydantic_plugins\nwithout_pydantic_plugins()\n{model}")
    assert "importlib.metadata" not in quiet
    import pydantic.plugin._schema_validator as asking

    assert "from ._loader import get_plugins" in inspect.getsource(asking)  # the one name the loader answers for


def test_anyio_still_keeps_its_asyncio_backend_where_the_http_check_preloads_it() -> None:
    # checks/http.py imports anyio's private backend module ahead of the first check (there is no public name for
    # it); when this fails, anyio moved it and the preload in checks/http.py must follow or go
    run = "import anyio\nasync def main() -> None:\n    await anyio.sleep(0)\nanyio.run(main, backend='asyncio')"
    assert "anyio._backends._asyncio" in fresh(run)
    assert "anyio._backends._asyncio" in fresh("import monitor.checks.http")
