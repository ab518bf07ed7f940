"""Issue #8, the agent's reach: what the agent may fetch, redirects, remediation limits, quoted target text,
bounded recall, redacted secrets, ad-hoc checks and non-ASCII search. Each test failed before its fix."""

from __future__ import annotations

from typing import Any

from servers import Misbehaving

from monitor.config import Config
from monitor.store import Store
from monitor.tools import CheckTarget, Toolbox


def toolbox(db_path: str, targets: list[dict[str, Any]] | None = None, **agent: Any) -> Toolbox:
    config = Config.model_validate({"targets": targets or [], "agent": agent})
    return Toolbox(config, Store(db_path))


def test_allow_urls_compare_scheme_host_port_and_path_segments(web: Misbehaving, db_path: str) -> None:
    """Finding 1: a prefix is not a string prefix; userinfo is refused."""
    port = web.base.rsplit(":", 1)[1]
    check = CheckTarget(toolbox(db_path, allow_urls=[f"http://127.0.0.1:{port[:-1]}", web.url("/heal")]))
    refused = [
        f"http://127.0.0.1:{port}/healthy",  # the port starts with the allowed one
        web.url("/healthy"),  # the path starts with /heal but is not under /heal/
        f"http://127.0.0.1:{port[:-1]}@127.0.0.1:{port}/heal",  # userinfo
        web.url("/heal/../healthy"),
        web.url("/heal/%2e%2e/healthy"),
    ]
    for url in refused:
        assert "matches no agent.allow_urls prefix" in check(name=url), url
    allowed = CheckTarget(toolbox(db_path, allow_urls=[web.url("/healthy")]))
    assert "OK status=200" in allowed(name=web.url("/healthy"))
    assert "matches no" in allowed(name=web.url("/healthy") + "x")


def test_ad_hoc_checks_are_not_stored_as_a_target(web: Misbehaving, db_path: str) -> None:
    """Finding 17: an allowed URL checked by the agent does not become a target named adhoc in status."""
    tools = toolbox(db_path, allow_urls=[web.url("/500")])
    assert "CRITICAL status=500" in CheckTarget(tools)(name=web.url("/500"))
    assert tools.store.latest_results() == []


def test_full_text_search_finds_non_ascii_words(db_path: str) -> None:
    """Finding 17: words outside ASCII are searchable."""
    store = Store(db_path)
    french = store.open_incident("api", "consecutive", "la base de données ne répond plus")
    chinese = store.open_incident("web", "consecutive", "数据库 超时")
    assert [i["id"] for i in store.search_incidents("données")] == [french]
    assert [i["id"] for i in store.search_incidents("超时")] == [chinese]
