"""Checks: one module per kind, one engine that runs them, one schedule for the whole fleet.

registry.py   the check kinds by name; a kind registers itself (see docs in README, "Extending")
context.py    what a kind's check is, and what the checker lends it
http.py, tcp.py, tls.py, dns.py, heartbeat.py
              the kinds; each returns a Result (monitor.core.results), never raises for what a target does
transport.py  HTTP's network: httpcore on plain asyncio, timed per phase, keep-alive pools
network.py, probing.py
              what kinds share: naming a failure, resolving, TLS trust; a probe's clock and connection
engine.py     Checker: runs targets of every kind with bounded concurrency
schedule.py   when each target is due: a stable phase per target, oldest due first, one event loop
"""
