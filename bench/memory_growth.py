"""Does the model request stay bounded over many monitoring cycles?

    python bench/memory_growth.py [--cycles 1000]

Runs the same monitoring cycle (check a target, then answer) N times against
the scripted Ollama test server, through smolagents -> litellm -> HTTP, twice
in the same run:

* monitor's Investigator (bounded working memory, recall, callbacks);
* plain smolagents ``ToolCallingAgent.run(task, reset=False)`` with the same
  tools, model and server.

Prints the request size at cycles 10, 100 and 1,000 and the ratio 1000/10 for
both, the agent's own time per step (the server answers in well under a
millisecond), and peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from ollama import FakeOllama, call, final  # noqa: E402
from servers import Misbehaving  # noqa: E402

from monitor import wiring  # noqa: E402
from monitor.agent.tools import toolset  # noqa: E402
from monitor.config import Config  # noqa: E402
from monitor.store import Store  # noqa: E402

MARKS = (10, 100, 1000)


def cycling(replies: list[dict[str, Any]]) -> Any:
    count = [0]

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        count[0] += 1
        return replies[(count[0] - 1) % len(replies)]

    return reply


def measure(name: str, cycles: int, run_cycle: Any, ollama: FakeOllama) -> dict[str, Any]:
    sizes: dict[int, int] = {}
    started = time.perf_counter()
    steps_before = len(ollama.chats)
    for cycle in range(1, cycles + 1):
        run_cycle()
        if cycle in MARKS or cycle == cycles:
            sizes[cycle] = len(json.dumps(ollama.chats[-1]["messages"]))
        if cycle % 100 == 0:
            print(
                f"  {name}: cycle {cycle}, request {sizes.get(cycle) or len(json.dumps(ollama.chats[-1]['messages'])):,} B", file=sys.stderr
            )
    elapsed = time.perf_counter() - started
    steps = len(ollama.chats) - steps_before
    return {"sizes": sizes, "per_step_ms": elapsed / steps * 1000, "steps": steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cycles", type=int, default=1000)
    args = parser.parse_args()
    script = [call("check_target", name="api"), final("api is fine")]
    with Misbehaving() as web, FakeOllama(default=cycling(script)) as ollama, tempfile.TemporaryDirectory() as tmp:
        config = Config.model_validate(
            {
                "targets": [{"name": "api", "url": web.url("/healthy"), "timeout": "1s"}],
                "model": {"id": "ollama_chat/llama3.2", "api_base": ollama.url, "retries": 0},
            }
        )
        store = Store(os.path.join(tmp, "bench.db"))
        investigator = wiring.investigator(config, store)
        ours = measure("monitor", args.cycles, lambda: investigator.investigate("api", pattern="consecutive", summary="api check"), ollama)
        rss_ours = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        from smolagents import LiteLLMModel, ToolCallingAgent
        from smolagents.monitoring import LogLevel

        plain = ToolCallingAgent(
            tools=toolset(wiring.toolbox(config, store)),
            verbosity_level=LogLevel.OFF,
            model=LiteLLMModel("ollama_chat/llama3.2", api_base=ollama.url, timeout=60),
        )
        task = investigator.task("api", incident=None, pattern="consecutive", summary="api check")
        baseline = measure("plain smolagents", args.cycles, lambda: plain.run(task, reset=False), ollama)
        store.close()

    print(f"\n{args.cycles} monitoring cycles (2 model calls each) against the scripted Ollama server")
    marks = [m for m in MARKS if m <= args.cycles]
    print(f"{'':>18}" + "".join(f"{'cycle ' + str(m):>14}" for m in marks) + f"{'ratio':>10}{'per step':>12}")
    for name, figures in (("monitor", ours), ("plain smolagents", baseline)):
        sizes = figures["sizes"]
        ratio = sizes[marks[-1]] / sizes[marks[0]]
        row = "".join(f"{sizes[m]:>12,} B" for m in marks)
        print(f"{name:>18}{row}{ratio:>10.2f}{figures['per_step_ms']:>9.1f} ms")
    growth = (baseline["sizes"][marks[-1]] - baseline["sizes"][marks[0]]) / (marks[-1] - marks[0])
    print(f"plain smolagents grows {growth:,.0f} B per cycle; goal for monitor: ratio <= 1.2")
    print(
        f"peak RSS: {rss_ours:.0f} MiB after monitor's {args.cycles} cycles (server, litellm and smolagents "
        f"included); {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB after plain smolagents'"
    )


if __name__ == "__main__":
    main()
