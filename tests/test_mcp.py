"""``monitor mcp`` through the MCP SDK's own client: a real ``monitor mcp`` child over stdio and over streamable HTTP,
on a real SQLite store whose incidents went through the real writer. Every tool answers; the HTTP endpoint answers
only with the web token; a secret in a diagnosis never leaves; ``investigate`` only where the agent may run, and
``remediate`` never."""

from __future__ import annotations

import concurrent.futures
import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import yaml
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent
from past import known
from servers import Misbehaving, free_port, stop_processes, wait_for

from monitor.config import Config
from monitor.core.diagnoses import Diagnosed
from monitor.core.results import Result
from monitor.incidents.diagnosis import asserted_line, suggestion_line
from monitor.memory import claims
from monitor.store import Store
from monitor.wiring import writer as incident_writer

TOKEN = "mcp-test-token-7f3a9c2e51"
NOW = 1_800_000_000.0
SECRETS = ("hunter2", "pgpass99", "TOPSECRET123")
HOSTILE = "pgbouncer refused: postgres://app:pgpass99@db-internal:5432/app password=hunter2 via http://gw/x?token=TOPSECRET123"
OPENED = {"status_code": 503, "error": "unexpected_status", "detail": "status 503", "excerpt": "HTTP 503 pgbouncer: no more connections"}
READ_TOOLS = {"targets", "target", "results", "incidents", "incident", "recall", "review"}
SAYING = {"confirm_suggestion"}  # a person's word on a past incident: offered whatever the agent may do
Call = Callable[[str, dict[str, Any]], Awaitable[Any]]


def result(target: str, at: float, ok: bool) -> Result:
    return Result(target, "http://127.0.0.1:1/", ok, "ok" if ok else "critical", 200 if ok else 503, 12.0,
                  None if ok else "unexpected_status", "" if ok else "status 503", at)  # fmt: skip


def written(store: Store) -> tuple[int, int]:
    """A past incident of api fixed by hand, and the open one diagnosed as it (asserted), through the real writer."""
    writer = incident_writer(Config(), store)  # the writer the CLI and the agent use: what it changes, it queues for alerts
    evidence = json.dumps(OPENED)
    said = "api answers 503: pgbouncer has no more connections"
    past = writer.open("api", "consecutive_failures", said, root_cause="server_error", evidence=evidence)
    assert past is not None
    past_id = int(past.incident.id)
    writer.resolve(past_id, resolution="raised pgbouncer max_client_conn to 500")
    now = writer.open("api", "consecutive_failures", "api answers 503 again", evidence=evidence)
    assert now is not None
    now_id = int(now.incident.id)
    claim = claims.Claim(asserted=past_id)
    writer.diagnose(
        None,
        now_id,
        Diagnosed(
            diagnosis=f"pool exhausted: {HOSTILE}",
            root_cause="server_error",
            related_incident=past_id,
            confidence="high",
            suspected_cause="pgbouncer pool",
            claim=claim.to_json(),
        ),
    )
    return past_id, now_id


@pytest.fixture
def memory(tmp_path: Path, db_path: str, store_location: Callable[..., str], web: Misbehaving) -> Iterator[dict[str, Any]]:
    """The config (its path) over a store with results and two incidents; api answers 500 on loopback."""
    store = Store(db_path)
    store.results.add_results(
        [result("api", NOW - 60 * i, ok=False) for i in range(5)] + [result("db", NOW - 60 * i, ok=True) for i in range(5)]
    )
    past_id, now_id = written(store)
    store.close()
    config = {
        "database": store_location(db_path, tmp_path),
        "targets": [{"name": "api", "url": web.url("/500")}, {"name": "db", "url": web.url("/healthy")}],
        "web": {"token": TOKEN},
        "model": {"id": "builtin"},
        "memory": {"embedder": "none"},
    }
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(config))
    yield {"path": path, "config": config, "past": past_id, "now": now_id}


def configured(memory: dict[str, Any], **changes: Any) -> Path:
    path = memory["path"].with_name("changed.yaml")
    path.write_text(yaml.safe_dump({**memory["config"], **changes}))
    return Path(path)


@asynccontextmanager
async def over_stdio(config: Path, errors: Path) -> AsyncIterator[ClientSession]:
    server = StdioServerParameters(command=sys.executable, args=["-m", "monitor", "mcp", "--config", str(config)], cwd=config.parent)
    with errors.open("w") as errlog:
        async with stdio_client(server, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def over_http(url: str, token: str | None = TOKEN) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    client = httpx2.AsyncClient(headers=headers, timeout=60)  # the SDK's client for HTTP (httpx2), with the token
    async with client, streamable_http_client(url, http_client=client) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def talk(connect: Callable[[], AbstractAsyncContextManager[ClientSession]], script: Callable[[ClientSession], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        async with connect() as session:
            return await script(session)

    return anyio.run(run)


def said(answer: CallToolResult) -> str:
    """The text of a tool's answer: its first content block, text as every tool of ours answers ("" when none)."""
    if not answer.content:
        return ""
    first = answer.content[0]
    assert isinstance(first, TextContent), first
    return first.text


async def every_answer(session: ClientSession, memory: dict[str, Any]) -> dict[str, Any]:
    """tools/list, then each read tool called once: name -> structured answer (and the whole text said)."""
    listed = {tool.name for tool in (await session.list_tools()).tools}
    calls: dict[str, dict[str, Any]] = {
        "targets": {},
        "target": {"name": "api"},
        "results": {"name": "api", "limit": 3},
        "incidents": {"status": "all"},
        "incident": {"id": memory["now"]},
        "recall": {"id": memory["now"]},
        "review": {"since": "3650d"},
    }
    answers: dict[str, Any] = {"listed": listed}
    for name, arguments in calls.items():
        found = await session.call_tool(name, arguments)
        assert not found.is_error, (name, found.content)
        answers[name] = found.structured_content
        answers[f"{name} said"] = json.dumps(found.model_dump(mode="json"))
    missing = await session.call_tool("incident", {"id": 999})
    answers["missing"] = (missing.is_error, said(missing))
    return answers


def check_answers(answers: dict[str, Any], memory: dict[str, Any]) -> None:
    assert answers["listed"] >= READ_TOOLS and "remediate" not in answers["listed"]
    states = {item["name"]: item["state"] for item in answers["targets"]["items"]}
    assert states == {"api": "down", "db": "up"}
    assert answers["target"]["state"] == "down" and [i["id"] for i in answers["target"]["open_incidents"]] == [memory["now"]]
    assert [r["status_code"] for r in answers["results"]["items"]] == [503, 503, 503]
    assert [i["id"] for i in answers["incidents"]["items"]] == [memory["now"], memory["past"]]
    incident = answers["incident"]
    assert incident["diagnosis"]["related_incident"] == memory["past"]
    assert asserted_line(memory["past"], "raised pgbouncer max_client_conn to 500") in incident["diagnosis"]["text"]
    recalled = answers["recall"]
    named = ([recalled["asserted"]["id"]] if recalled["asserted"] else []) + [s["id"] for s in recalled["suggested"]]
    assert memory["past"] in named
    lines = [asserted_line(recalled["asserted"]["id"], recalled["asserted"]["fix"])] if recalled["asserted"] else []
    assert recalled["text"] == "\n".join(lines + [suggestion_line(s) for s in recalled["suggested"]])
    review = answers["review"]
    assert review["incidents"] == 2 and [(n["fixed"], n["again"]) for n in review["not_held"]] == [(memory["past"], memory["now"])]
    assert f"#{memory['past']} api server_error resolved (raised pgbouncer max_client_conn to 500)" in review["review"]
    assert answers["missing"] == (True, "Error executing tool incident: no incident #999")
    said = " ".join(v for k, v in answers.items() if k.endswith(" said"))
    assert "pool exhausted" in said and not [s for s in SECRETS if s in said]


def test_every_tool_answers_over_stdio(memory: dict[str, Any], tmp_path: Path) -> None:
    answers = talk(lambda: over_stdio(memory["path"], tmp_path / "stderr"), lambda s: every_answer(s, memory))
    check_answers(answers, memory)
    assert "investigate" in answers["listed"]  # agent.mode on_anomaly: the agent may run


def test_investigate_is_offered_only_where_the_agent_may_run_and_remediate_never(memory: dict[str, Any], tmp_path: Path) -> None:
    async def listed(session: ClientSession) -> set[str]:
        return {tool.name for tool in (await session.list_tools()).tools}

    off = configured(memory, agent={"mode": "off"})
    assert talk(lambda: over_stdio(off, tmp_path / "stderr"), listed) == READ_TOOLS | SAYING
    remediating = configured(memory, agent={"mode": "on_anomaly", "remediation": "on"})
    assert talk(lambda: over_stdio(remediating, tmp_path / "stderr"), listed) == READ_TOOLS | SAYING | {"investigate"}


def test_investigate_checks_and_diagnoses_a_configured_target_only(memory: dict[str, Any], tmp_path: Path) -> None:
    async def script(session: ClientSession) -> tuple[Any, Any]:
        found = await session.call_tool("investigate", {"target": "api"})
        elsewhere = await session.call_tool("investigate", {"target": "http://169.254.169.254/latest/meta-data"})
        return found, elsewhere

    found, elsewhere = talk(lambda: over_stdio(memory["path"], tmp_path / "stderr"), script)
    assert not found.is_error, found.content
    answer = found.structured_content
    assert answer["result"]["ok"] is False and answer["result"]["status_code"] == 500
    assert answer["investigation"]["diagnosis"]["root_cause"] == "server_error"
    assert elsewhere.is_error and "no configured target" in elsewhere.content[0].text
    store = Store(str(memory["config"]["database"]))
    assert known(store.runs.run(answer["investigation"]["run"])).root_cause == "server_error"
    store.close()


def test_confirm_suggestion_keeps_a_persons_word_and_refuses_what_cannot_stand(memory: dict[str, Any], tmp_path: Path) -> None:
    now, past = memory["now"], memory["past"]

    async def script(session: ClientSession) -> list[Any]:
        calls = [
            {"incident": now, "other": past, "same": True, "note": "the pool again, password=hunter2"},
            {"incident": now, "other": now, "same": False},
            {"incident": now, "other": 999, "same": False},
            {"incident": now, "other": past, "same": False, "note": "x" * 1001},
            {"incident": now, "other": 2**63, "same": False},
        ]
        answers = [await session.call_tool("confirm_suggestion", arguments) for arguments in calls]
        return [*answers, await session.call_tool("incident", {"id": now})]

    said, itself, missing, long, huge, shown = talk(lambda: over_stdio(memory["path"], tmp_path / "stderr"), script)
    assert not said.is_error, said.content
    assert said.structured_content["said"] == f"same failure as #{past} (said from mcp): the pool again, password=***"
    assert itself.is_error and "cannot be linked to itself" in itself.content[0].text
    assert missing.is_error and missing.content[0].text.endswith("no incident #999")
    assert long.is_error and "at most 1,000" in long.content[0].text
    assert huge.is_error and "an incident's number" in huge.content[0].text
    assert [(x["other"], x["verdict"], x["actor"]) for x in shown.structured_content["links"]] == [(past, "same", "mcp")]
    store = Store(str(memory["config"]["database"]))
    assert [(x.other, x.verdict) for x in store.incidents.incident_links([now])] == [(past, "same")]
    store.close()


@pytest.fixture
def http_server(http_child: tuple[str, subprocess.Popen[bytes]]) -> str:
    return http_child[0]


@pytest.fixture
def http_child(memory: dict[str, Any], tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    errors = (tmp_path / "http-stderr").open("w")
    child = subprocess.Popen(
        [sys.executable, "-m", "monitor", "mcp", "--config", str(memory["path"]), "--http", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors, cwd=tmp_path,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_for(lambda: child.poll() is not None or "serving" in (tmp_path / "http-stderr").read_text(), timeout=60)
        assert child.poll() is None, (tmp_path / "http-stderr").read_text()
        yield url, child
    finally:
        stop_processes([child])
        errors.close()


def test_every_tool_answers_over_http_with_the_token(memory: dict[str, Any], http_server: str) -> None:
    check_answers(talk(lambda: over_http(http_server), lambda s: every_answer(s, memory)), memory)


def test_the_http_endpoint_refuses_without_the_token(http_server: str) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream"}
    for given in ({}, {"Authorization": "Bearer not-the-token-at-all"}, {"Authorization": f"Basic {TOKEN}"}):
        refused = httpx.post(http_server, json=hello, headers={**headers, **given})
        assert refused.status_code == 401 and "tools" not in refused.text
    rebound = httpx.post(http_server, json=hello, headers={**headers, "Authorization": f"Bearer {TOKEN}", "Host": "evil.example"})
    assert rebound.status_code == 421
    with pytest.raises(ExceptionGroup) as refused_sdk:  # the SDK's client: its session ends in an error, with no tools
        talk(lambda: over_http(http_server, token=None), lambda s: s.list_tools())
    assert refused_sdk.group_contains(MCPError)


def test_every_integer_argument_is_range_checked_with_an_error_that_names_it(memory: dict[str, Any], tmp_path: Path) -> None:
    calls: list[tuple[str, dict[str, Any], str]] = [
        ("incidents", {"before": 2**63}, "before: a whole number from 1 to 9,223,372,036,854,775,807"),
        ("incidents", {"limit": 0}, "limit: a whole number from 1 to 200"),
        ("targets", {"page": 10**30}, "page: a whole number from 1 to 1,000,000"),
        ("targets", {"limit": 201}, "limit: a whole number from 1 to 200"),
        ("results", {"name": "api", "limit": -1}, "limit: a whole number from 1 to 200"),
        ("incident", {"id": 2**64}, "id: a whole number from 1 to 9,223,372,036,854,775,807"),
        ("recall", {"id": 10**40}, "id: a whole number from 1 to 9,223,372,036,854,775,807, not a number of that size"),
        ("recall", {"id": memory["now"], "k": 11}, "k: a whole number from 1 to 10"),
    ]

    async def script(session: ClientSession) -> list[Any]:
        return [await session.call_tool(name, arguments) for name, arguments, _ in calls]

    errors = tmp_path / "stderr"
    answers = talk(lambda: over_stdio(memory["path"], errors), script)
    for (name, _, said), found in zip(calls, answers, strict=True):
        assert found.is_error and said in found.content[0].text, (name, found.content)
    assert "Traceback" not in errors.read_text() and "OverflowError" not in errors.read_text()


def post_raw(url: str, body: bytes, *, sent: int | None = None) -> socket.socket:
    """A request to ``url`` with the token whose ``body`` is sent only up to ``sent`` bytes (the rest later)."""
    host, port = url.split("/")[2].split(":")
    head = (f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n\r\n")  # fmt: skip
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.sendall(head.encode() + body[:sent])
    return sock


def test_http_bounds_a_tokens_requests_in_flight_and_each_bodys_elements(http_server: str) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {TOKEN}"}
    body = json.dumps(hello).encode()
    dripping = [post_raw(http_server, body, sent=5) for _ in range(4)]  # four in flight, their bodies still coming
    busy = wait_for(lambda: r if (r := httpx.post(http_server, json=hello, headers=headers)).status_code == 503 else None)
    assert "at most 4 requests" in busy.text and busy.headers["retry-after"] == "1"
    for sock in dripping:
        sock.sendall(body[5:])
        assert sock.recv(65536).startswith(b"HTTP/1.1 200"), "a request in flight is answered once whole"
        sock.close()
    assert httpx.post(http_server, json=hello, headers=headers).status_code == 200
    flat = {**hello, "params": {"_meta": {"x": [{}] * 20_000}}}  # 120 KB that would decode into 20,000 objects
    deep = {**hello, "params": {"_meta": {"x": json.loads("[" * 100 + "]" * 100)}}}
    for hostile in (flat, deep):
        refused = httpx.post(http_server, content=json.dumps(hostile), headers={**headers, "Content-Type": "application/json"})
        assert refused.status_code == 413 and "at most 10,000 elements" in refused.text
    huge = httpx.post(http_server, content=b" " * (5 * 1024 * 1024), headers={**headers, "Content-Type": "application/json"})
    assert huge.status_code == 413
    assert httpx.post(http_server, json={**hello, "params": {"_meta": {"note": "[{" * 20_000}}}, headers=headers).status_code == 200


def test_24_concurrent_4_mib_requests_leave_the_servers_memory_bounded(http_child: tuple[str, subprocess.Popen[bytes]]) -> None:
    url, child = http_child
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"x":[' + b",".join([b"{}"] * 1_390_000) + b"]}}}"
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def post(chunked: bool) -> int:  # chunked: no Content-Length, so the body is read until it is too long
        content = (body[i : i + 65536] for i in range(0, len(body), 65536)) if chunked else body
        return httpx.post(url, content=content, headers=headers, timeout=60).status_code

    with concurrent.futures.ThreadPoolExecutor(24) as pool:
        answered = list(pool.map(post, [i % 2 == 0 for i in range(24)]))
    assert set(answered) <= {413, 503} and 413 in answered
    peak = next(line for line in Path(f"/proc/{child.pid}/status").read_text().splitlines() if line.startswith("VmHWM"))
    assert int(peak.split()[1]) < 400 * 1024, peak


def test_http_without_a_web_token_does_not_start(memory: dict[str, Any], tmp_path: Path) -> None:
    config = configured(memory, web={})
    done = subprocess.run(
        [sys.executable, "-m", "monitor", "mcp", "--config", str(config), "--http", f"127.0.0.1:{free_port()}"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3 and "web.token" in done.stderr


def test_without_the_sdk_it_says_which_extra_to_install(memory: dict[str, Any], tmp_path: Path) -> None:
    hidden = "import sys; sys.modules['mcp'] = None; from monitor.cli.main import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", hidden, "mcp", "--config", str(memory["path"])], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 3 and "pip install 'monitor-agent[mcp]'" in done.stderr


def test_without_remediation_turns_remediation_off_whatever_the_config_says() -> None:
    from monitor.mcp.investigating import without_remediation

    config = Config.model_validate({"agent": {"remediation": "on"}})
    assert without_remediation(config).agent.remediation == "off" and config.agent.remediation == "on"
