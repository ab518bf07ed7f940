"""A minimal keep-alive HTTP/1.1 server for benchmarks, run in its own process.

port = start(reply)           # reply(request_head: bytes) -> response bytes, a module-level function
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Callable
from typing import Any

Reply = Callable[[bytes], bytes]


class _Protocol(asyncio.Protocol):
    def __init__(self, reply: Reply) -> None:
        self.reply, self.buffer = reply, b""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
            self.transport.write(self.reply(head))


def _serve(ports: Any, reply: Reply) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Protocol(reply), "127.0.0.1", 0, backlog=4096)
        ports.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


def start(reply: Reply) -> tuple[str, multiprocessing.Process]:
    """Serve ``reply`` from a new process; returns its base URL and the process."""
    ports: Any = multiprocessing.Queue()
    process = multiprocessing.Process(target=_serve, args=(ports, reply), daemon=True)
    process.start()
    return f"http://127.0.0.1:{ports.get(timeout=10)}", process
