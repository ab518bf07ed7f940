"""monitor: HTTP health checks that remember and reason.

The data's path: config → checks → store → patterns → agent/memory → metrics/alerts.
"""

__version__ = "0.1.0"
