"""The check engine: many targets checked at once, each by the check of its kind.

:class:`Checker` finds a target's kind in the registry (:mod:`monitor.checks.registry`: http,
tcp, tls, dns, heartbeat, and any kind a module registers), keeps one instance of each kind it
meets, and runs at most ``concurrency`` checks at a time. A check never raises: a failed target
is a :class:`~monitor.core.results.Result` value (its error kinds: :mod:`monitor.core.errors`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable

from monitor.checks import registry
from monitor.config import Target
from monitor.core.results import PHASES as PHASES  # re-exported: they were defined here
from monitor.core.results import Result as Result
from monitor.core.results import exit_code as exit_code

MIN_PER_PROCESS = 250


class Checker:
    """Checks targets concurrently with bounded concurrency.

    Use as an async context manager, or call :meth:`run` from sync code::

        results = Checker(concurrency=32).run(config.targets)
    """

    def __init__(
        self,
        *,
        concurrency: int = 64,
        processes: int = 1,
        clock: Callable[[], float] = time.time,
        reach: Callable[[str], bool] | None = None,
        heartbeats: registry.Pings | None = None,
    ) -> None:
        self.concurrency = concurrency
        self.heartbeats = heartbeats  # heartbeat.Heartbeats: the pings heartbeat targets are judged on
        self.reach = reach  # None: redirects may go anywhere http(s); else every hop must satisfy it
        self.processes = processes
        self.clock = clock
        self._kinds: dict[str, registry.Kind] = {}

    def _kind(self, name: str) -> registry.Kind:
        kind = self._kinds.get(name)
        if kind is None:
            context = registry.Context(clock=self.clock, reach=self.reach, pings=self.heartbeats)
            kind = self._kinds[name] = registry.factory(name)(context)
        return kind

    async def aclose(self) -> None:
        kinds, self._kinds = list(self._kinds.values()), {}
        for kind in kinds:
            await kind.aclose()

    async def __aenter__(self) -> Checker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def check(self, target: Target, *, worker: int = 0) -> Result:
        """Check one target; always returns a Result within ``target.timeout`` (plus a hair)."""
        return await self._kind(target.kind).check(target, worker=worker)

    async def check_all(self, targets: Iterable[Target]) -> list[Result]:
        """Check every target, at most ``concurrency`` at once; results keep the input order."""
        todo = list(enumerate(targets))
        results: list[Result | None] = [None] * len(todo)
        queue: asyncio.Queue[tuple[int, Target]] = asyncio.Queue()
        for item in todo:
            queue.put_nowait(item)

        async def work(worker: int) -> None:
            while not queue.empty():
                index, target = queue.get_nowait()
                results[index] = await self.check(target, worker=worker)

        await asyncio.gather(*(work(i) for i in range(min(self.concurrency, len(todo)))))
        return [r for r in results if r is not None]

    def run(self, targets: Iterable[Target]) -> list[Result]:
        """Sync entry point: check all targets and close what the kinds keep open.

        With ``processes > 1`` a large batch is split over forked worker
        processes, since one process is CPU-bound at about 1,400 checks/s. Only
        single-threaded callers (the one-shot CLI, benchmarks) should ask for it.
        """
        todo = list(targets)
        if self.processes > 1 and len(todo) >= MIN_PER_PROCESS * 2:
            return self._run_forked(todo)

        async def main() -> list[Result]:
            async with self:
                return await self.check_all(todo)

        return asyncio.run(main())

    def _run_forked(self, todo: list[Target]) -> list[Result]:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        count = min(self.processes, len(todo) // MIN_PER_PROCESS)
        chunks = [todo[i::count] for i in range(count)]
        worker = Checker(concurrency=max(1, self.concurrency // count), clock=self.clock, heartbeats=self.heartbeats)
        with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("fork")) as pool:
            parts = list(pool.map(worker.run, chunks))
        results: list[Result | None] = [None] * len(todo)
        for index, part in enumerate(parts):
            results[index::count] = part
        return [r for r in results if r is not None]
