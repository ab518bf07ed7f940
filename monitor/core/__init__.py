"""The domain core: the values every other part passes around, with no dependencies.

    results.py    Result (what one check found), severities, the Nagios exit code
    state.py      a target's state (up, warning, down, maintenance...): computed here, read by every part
    errors.py     the error kinds a Result names
    causes.py     root causes: the closed set a diagnosis picks from, read off a result
    incidents.py  Pattern (what a detector found), Event (a change to an incident), Bulk (to many)
    urls.py       what the agent may reach, and how a URL is written down
    redaction.py  how a secret is hidden in a URL, any text or a JSON value, before it leaves the process
    catalogue.py  what is a secret: the keys that name one, token shapes, values the config substituted

Nothing here imports another part of monitor, nor anything outside the standard library.
"""
