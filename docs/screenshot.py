"""Screenshot a page of the web UI in Debian's Chromium, for the README.

    monitor demo --mode full --keep /tmp/demo
    python docs/screenshot.py /tmp/demo/demo.db /incidents/5 docs/incident.png

Serves the database with ``monitor web`` on a free loopback port, opens the page, writes the PNG.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
from playwright.sync_api import sync_playwright

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def main(db: str, path: str, out: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "monitor", "web", "--db", db, "--listen", f"127.0.0.1:{port}"])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(base + "/api/v1/targets", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1200, "height": 1000})
            page.goto(base + path, wait_until="load")
            page.screenshot(path=out)
            browser.close()
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main(*sys.argv[1:4])
