"""The daemon: the cycle check → record → detect → agent → alert, the agent's worker, and ``monitor run``.

cycle.py    what happens after checks (with or without a scheduler), and ``monitor investigate``
agent.py    the agent's worker thread, and a reload's new agent settings
indexer.py  the thread that embeds incident memories (recall by meaning), off the check path
service.py  Daemon: wiring, scheduling, housekeeping, reload, signals, a clean stop
"""

from monitor.daemon.cycle import OVER_BUDGET, Cycle, daemon_cycle, investigate_results
from monitor.daemon.service import STOP_GRACE, Daemon

__all__ = ["OVER_BUDGET", "STOP_GRACE", "Cycle", "Daemon", "daemon_cycle", "investigate_results"]
