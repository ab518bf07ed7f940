"""cli: the ``monitor`` command (:mod:`monitor.cli.main`), one module per group of commands."""

import sys

# httpx imports its own CLI (click + rich, 57 ms) when both are installed, with no setting that stops it; we never use
# it. A None in sys.modules is the import system's "not installed", which httpx catches (it keeps a ``main`` that says
# so); tests/test_cli_startup.py fails when httpx stops importing it, or stops taking the answer.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
