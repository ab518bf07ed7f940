"""The web UI and JSON API (Starlette): read-only pages, and actions that go through the incident writer.

app.py      create_app: routes, security headers, error pages
routes/     one module per page group: overview, targets, incidents, runs, memory, api
site.py     what every handler shares: the store, the config in force, the templates
pages.py    what each page shows, read from the store
params.py   query parameters, checked
charts.py   SVG charts, server-side
server.py   uvicorn, started beside the daemon or by `monitor web`
"""
