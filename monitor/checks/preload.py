"""What every forked worker shares: imported last by the daemon's fork server, before it forks any worker.

``workers: N`` forks its checking processes from one server process (``multiprocessing``'s fork server) that has
imported the worker and every check kind (the ``monitor.kinds`` entry points: a plugin's too). Each worker is a
fork of it, so the pages of those modules (about 45 MB: Python, pydantic, the config's models, the HTTP client) are
shared between the workers instead of each importing its own. Importing this module imports the kinds and then
moves everything imported so far out of the garbage collector's reach (``gc.freeze``): a collection in a worker
would otherwise write to every object's header, and so copy every shared page into that worker. The server ignores
SIGTERM, as the workers do: systemd stops a unit by sending it to every process in it, and the daemon stops its
workers itself, then the server ends with the daemon. Nothing else imports this module.
"""

from __future__ import annotations

import gc
import signal

from monitor.checks import worker  # noqa: F401
from monitor.core import kinds

kinds.loaded()  # every installed kind, a plugin's as a built-in's

signal.signal(signal.SIGTERM, signal.SIG_IGN)
gc.collect()
gc.freeze()
