"""cli: the ``monitor`` command (:mod:`monitor.cli.main`), one module per group of commands."""

import sys

# httpx imports its own CLI (click + rich) when both are installed; we never use it.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
