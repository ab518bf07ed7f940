"""Does the agent's request stay bounded while its memory of incidents grows? (issue 45, item 4)

    python bench/prompt_growth.py [--investigations 1000] [--targets 8] [--recurring 0.6] [--embedder builtin]

Runs investigations one after another as a deployment would, on one long-lived ``Investigator`` through
smolagents -> litellm -> HTTP to the scripted Ollama server (``tests/ollama.py``), guided as by default. Each
investigation: a target (one of ``--targets`` loopback servers) starts failing, its failures are checked and
stored, an incident opens, the agent investigates it (check_target, recent_results, search_incidents,
record_diagnosis naming the past incident the closing instruction says is closest, final_answer), and the
incident is resolved with a fix note; then the daemon's indexer embeds it, so that the memory every later
investigation recalls from holds one incident more. A failure recurs (one the target had before, its fix
noted again with a new ticket) with probability ``--recurring``, else it is new (a component and words not
seen before).

Every request's size is the bytes of its JSON body. Printed: the median size of requests 100-200 (the
baseline, in the same run: by then the working memory holds its summary and ``keep_steps`` older steps) and of
the last hundred, and their ratio (the bar: at most 1.2); then, by hundred investigations, the median request,
the median first request of an investigation (the one that carries what is recalled) and the largest.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from ollama import FakeOllama, call, final  # noqa: E402
from servers import Answering  # noqa: E402

from monitor import wiring  # noqa: E402
from monitor.agent.tools import format_result  # noqa: E402
from monitor.checks.engine import Checker  # noqa: E402
from monitor.config import Config  # noqa: E402
from monitor.daemon.indexer import Indexer  # noqa: E402
from monitor.store import Store  # noqa: E402

# A target's failures that recur: (status, what it answers, the fix noted), {h} a host number, {t} the target
KINDS = (
    (500, "connection pool exhausted on db-{h}", "raised the pool size on db-{h} and restarted {t}"),
    (503, "upstream payments-{h} unavailable", "failed payments-{h} over to its standby"),
    (502, "bad gateway from cache-{h}", "flushed cache-{h} and restarted its proxy"),
    (500, "disk full on /var/lib/{t}", "rotated the logs of {t} and grew the volume"),
    (504, "timeout waiting for search-{h}", "restarted search-{h} after a long GC pause"),
)
WORDS = ("queue", "broker", "shard", "replica", "token", "ledger", "index", "session", "quota", "lease", "vault", "cron", "mailer")
CLOSEST = re.compile(r"The closest by meaning is #(\d+)")


class Fleet:
    """The targets, each a loopback server whose answer a failure sets, and the failures each had."""

    def __init__(self, count: int, rng: random.Random) -> None:
        self.servers = [Answering().__enter__() for _ in range(count)]
        self.rng = rng
        self.seen: dict[str, list[tuple[int, str, str]]] = {}
        self.new = 0

    def names(self) -> list[str]:
        return [f"svc-{n}" for n in range(len(self.servers))]

    def fail(self, index: int, recurring: float) -> tuple[str, str]:
        """Make target ``index`` fail, recurring or new; returns its name and the fix that will be noted."""
        name = f"svc-{index}"
        past = self.seen.setdefault(name, [])
        if past and self.rng.random() < recurring:
            status, error, fix = self.rng.choice(past)
        else:
            status, error, fix = self._new(name)
            past.append((status, error, fix))
        server = self.servers[index]
        server.status, server.body = status, json.dumps({"error": error})
        return name, f"{fix} (ticket OPS-{self.rng.randrange(1000, 9999)})"

    def _new(self, name: str) -> tuple[int, str, str]:
        self.new += 1
        if self.new <= len(KINDS) * 2 or self.rng.random() < 0.5:
            status, error, fix = self.rng.choice(KINDS)
            host = self.rng.randrange(1, 9)
            return status, error.format(h=host, t=name), fix.format(h=host, t=name)
        a, b = self.rng.sample(WORDS, 2)
        part = f"{a}-{self.new}"
        return 500, f"{b} {a} failed in {part}: {self.rng.choice(WORDS)} rejected", f"repaired the {b} of {part} and replayed the {a}"

    def heal(self, index: int) -> None:
        self.servers[index].status, self.servers[index].body = 200, '{"status":"up"}'

    def close(self) -> None:
        for server in self.servers:
            server.__exit__(None, None, None)


def offered(body: dict[str, Any]) -> tuple[str, str]:
    """The tool a guided request offers, and the target name its grammar allows (or '')."""
    schema = body.get("format")
    if isinstance(schema, dict):
        first = schema.get("anyOf", [schema])[0]
        names = first["properties"]["arguments"].get("properties", {}).get("name", {}).get("enum", [""])
        return str(first["properties"]["name"]["enum"][0]), str(names[0])
    tools = [t["function"]["name"] for t in body.get("tools", [])]
    return (tools[0] if tools else "final_answer"), ""


def text_of(body: dict[str, Any]) -> str:
    return json.dumps(body.get("messages", []))


class Scripted:
    """The model: the call a guided request offers, with what a careful model would pass; it sizes each request."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.firsts: list[int] = []  # the first request of each investigation
        self.target = ""

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        self.sizes.append(len(json.dumps(body).encode()))
        tool, name = offered(body)
        if tool == "check_target":
            self.firsts.append(self.sizes[-1])
            return call("check_target", name=name or self.target)
        if tool == "recent_results":
            return call("recent_results", name=name or self.target)
        if tool == "search_incidents":
            return call("search_incidents", query=f"{self.target} failing")
        if tool == "record_diagnosis":
            closest = CLOSEST.findall(text_of(body))
            return call(
                "record_diagnosis",
                root_cause="server_error",
                related_incident=f"#{closest[-1]}" if closest else "no",
                confidence="high",
                summary=f"{self.target} answers an error status; its own error text names the failing part",
            )
        return final(f"{self.target} was failing with error statuses; see the diagnosis recorded on the incident")


def run(args: argparse.Namespace, workdir: str) -> tuple[Scripted, float]:
    rng = random.Random(args.seed)
    fleet = Fleet(args.targets, rng)
    model = Scripted()
    with FakeOllama(default=model) as ollama:
        config = Config.model_validate(
            {
                "targets": [{"name": n, "url": s.url, "timeout": 2} for n, s in zip(fleet.names(), fleet.servers, strict=True)],
                "model": {"id": "ollama_chat/llama3.2", "api_base": ollama.url, "timeout": 30, "retries": 0},
                "memory": {"embedder": args.embedder},
                "workers": 1,
            }
        )
        store = Store(os.path.join(workdir, "prompt_growth.db"))
        investigator = wiring.investigator(config, store)
        indexer = Indexer(store, lambda: config)
        checker = Checker()
        started = time.perf_counter()
        for number in range(1, args.investigations + 1):
            index = rng.randrange(args.targets)
            name, fix = fleet.fail(index, args.recurring)
            model.target = name
            results = checker.run([config.target(name)] * 3)
            store.results.add_results(results)
            investigator.incidents.open(name, "consecutive", f"3 consecutive failures of {name}", root_cause="server_error")
            incident = store.incidents.open_incidents(name)[-1].id
            summary, latest = f"3 consecutive failures of {name}", format_result(results[-1])
            outcome = investigator.investigate(name, incident=incident, pattern="consecutive", summary=summary, latest=latest)
            investigator.incidents.resolve(incident, fix, note="fixed by the on-call engineer")
            fleet.heal(index)
            indexer.index(store)
            if outcome.state != "success":
                print(f"  investigation {number}: {outcome.state} {outcome.error}", file=sys.stderr)
            if number % 100 == 0:
                print(f"  {number} investigations, {len(model.sizes):,} requests, last {model.sizes[-1]:,} B", file=sys.stderr, flush=True)
        elapsed = time.perf_counter() - started
        store.close()
    fleet.close()
    return model, elapsed


def median(values: list[int]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--investigations", type=int, default=1000)
    parser.add_argument("--targets", type=int, default=8)
    parser.add_argument("--recurring", type=float, default=0.6, help="the chance that a failure is one its target had before")
    parser.add_argument("--embedder", default="builtin", help="memory.embedder (builtin, or none for full-text recall)")
    parser.add_argument("--seed", type=int, default=45)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        model, elapsed = run(args, workdir)
    sizes = model.sizes
    early, late = sizes[99:200], sizes[-100:]
    ratio = median(late) / median(early)
    print(f"\n{args.investigations} investigations, {len(sizes):,} requests, {args.targets} targets, memory.embedder: {args.embedder}")
    print(f"{elapsed:.0f} s, {elapsed / args.investigations * 1000:.0f} ms an investigation")
    print(f"median request, requests 100-200 (baseline): {median(early):>9,.0f} B")
    print(f"median request, the last hundred:            {median(late):>9,.0f} B")
    print(f"ratio: {ratio:.3f} (bar: at most 1.2: {'met' if ratio <= 1.2 else 'NOT met'}); largest request {max(sizes):,} B")
    print(f"(requests 1-100, while the working memory fills: {median(sizes[:100]):,.0f} B)")
    print("by hundred investigations: median request, median first request (the one that carries what is recalled), largest")
    per = len(sizes) // max(1, len(model.firsts))
    for start in range(0, len(model.firsts), 100):
        chunk = sizes[start * per : (start + 100) * per]
        firsts = model.firsts[start : start + 100]
        print(f"  {start + 1:>5}-{start + 100:<5} {median(chunk):>9,.0f} B {median(firsts):>9,.0f} B {max(chunk):>9,} B")


if __name__ == "__main__":
    main()
