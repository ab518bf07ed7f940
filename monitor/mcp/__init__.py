"""``monitor mcp``: the incident memory and the targets' state over the Model Context Protocol.

An assistant that speaks MCP (Claude Desktop, VS Code, ...) reads what the web API shows, through tools::

    answers.py        what each tool answers, read from the store (the web's Pages: the same data)
    likeness.py       recall: the past incidents like one, asserted or suggested as every channel says them
    investigating.py  investigate: one configured target checked and investigated, never remediated
    server.py         the tools, bound to a store and a config (the official ``mcp`` SDK's MCPServer)
    source.py         the daemon's store, opened once it is there: before the daemon first ran, empty answers
    http.py           streamable HTTP behind the web token; stdio is the SDK's own
    bounds.py         what one HTTP request may cost: a token's requests in flight, a body's size and elements

Needs the ``mcp`` extra: ``pip install 'monitor-agent[mcp]'``.
"""
