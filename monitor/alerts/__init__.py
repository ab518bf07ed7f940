"""Alerts: receivers (one module per kind) and the outbox they are delivered from.

receivers.py     the interface every receiver kind implements
registry.py      the configured receivers by name: the one place names are made and read back
webhook.py       a generic JSON webhook
apprise.py       Apprise channels
alertmanager.py  Prometheus Alertmanager (one, or a cluster)
delivery.py      Alerts: what to queue for each incident event, and the senders that deliver it
"""
