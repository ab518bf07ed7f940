"""The diagnosis eval (`monitor eval`): scenarios run for real on loopback, scored per model.

Only the CLI imports this package; the daemon never does.

    scenario.py  the scenario file format and its loader
    servers.py   what a scenario's target does, served on loopback (http, tcp, tls, dns, heartbeat)
    harness.py   one scenario on one model: seed the past, check once, detect, investigate
    verdict.py   what a model concluded beside what was expected
    scores.py    the scores, per model and per tag, as tables or JSON
"""
