"""Incidents: from check results to incidents, with one writer.

recorder.py     the one way in for results: store (buffered while the database is locked), metrics, detection
patterns.py     the detectors: pure functions over a target's recent results
tracker.py      opens, updates and resolves incidents from what the detectors find
writer.py       the one writer of incident state: every change, from the daemon, the agent, the CLI and
                the web, is committed with its notifications and published as one event
events.py       those events, and the publisher that hands them to alerts, metrics and the log
maintenance.py  whether a maintenance window silences a target now (the one place that decides)
diagnosis.py    a diagnosis as the writer records it
"""
