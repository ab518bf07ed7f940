"""Warnings are errors in the tests, ResourceWarning included: a test that leaves a socket, file or event loop to
the garbage collector fails, itself and not the test that happens to run next (tests/conftest.py collects at each
teardown). Proved on a scratch test module run by pytest with this suite's config and conftest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

SCRATCH = '''
import asyncio
import socket

import pytest


class Holder:
    """A socket in a reference cycle: only the garbage collector finalizes it."""

    def __init__(self, thing):
        self.thing, self.me = thing, self


@pytest.fixture(scope="module")
def held_by_the_module():
    yield Holder(socket.socket())


def test_leaves_a_socket_in_a_cycle():
    Holder(socket.socket())


def test_after_a_leak_closes_what_it_opens():
    with socket.socket():
        pass


def test_leaves_a_file_in_a_cycle(tmp_path):
    Holder(open(tmp_path / "log", "w"))


def test_leaves_an_event_loop():
    Holder(asyncio.new_event_loop())


def test_uses_the_module_fixture(held_by_the_module):
    assert held_by_the_module.thing.fileno() >= 0


def test_last_of_the_module():
    pass
'''


def outcomes(tmp_path: Path) -> dict[str, set[str]]:
    """Each scratch test's outcomes (``PASSED``, ``FAILED``, ``ERROR``: one line per phase that reported)."""
    (tmp_path / "test_scratch.py").write_text(SCRATCH)
    command = [sys.executable, "-m", "pytest", "-c", str(HERE.parent / "pyproject.toml"), "--rootdir", str(tmp_path)]
    command += ["-p", "conftest", "-p", "no:cacheprovider", "-p", "no:benchmark", "-n", "0", "-q", "-rA", "test_scratch.py"]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(command, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120)
    found: dict[str, set[str]] = {}
    for line in run.stdout.splitlines():
        outcome, _, rest = line.partition(" test_scratch.py::")
        if rest and outcome in ("PASSED", "FAILED", "ERROR"):
            found.setdefault(rest.split(" ")[0], set()).add(outcome)
    assert found, run.stdout + run.stderr
    assert "ResourceWarning: unclosed <socket.socket" in run.stdout, run.stdout
    return found


def test_what_a_test_leaves_to_the_garbage_collector_fails_that_test_and_only_it(tmp_path: Path) -> None:
    found = outcomes(tmp_path)
    assert found["test_leaves_a_socket_in_a_cycle"] == {"PASSED", "ERROR"}  # passed, then failed at its teardown
    assert found["test_after_a_leak_closes_what_it_opens"] == {"PASSED"}
    assert found["test_leaves_a_file_in_a_cycle"] == {"PASSED", "ERROR"}
    assert found["test_leaves_an_event_loop"] == {"PASSED", "ERROR"}
    assert found["test_uses_the_module_fixture"] == {"PASSED"}
    # the module fixture's socket, dropped at the module's end: its last test fails, at teardown
    assert found["test_last_of_the_module"] == {"PASSED", "ERROR"}
