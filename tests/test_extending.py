"""Adding a check kind is one module that registers itself (tests/toy_kind.py): the Checker then
checks targets of that kind among the others, and their results are stored like any."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from monitor.checks import registry
from monitor.checks.engine import Checker
from monitor.config import Target
from monitor.store import Store


@pytest.fixture
def toy() -> Iterator[None]:
    import toy_kind  # registers the kind, as importing a kind's module does

    registry.register("toy", toy_kind.Toy)  # again after another test unregistered it: the same factory is fine
    yield
    registry.unregister("toy")


def toy_target(name: str, path: Path) -> Target:
    # The config's own kinds are a closed list (config.Kind): a new kind adds itself there for YAML;
    # here the target is made directly, as a plugin's own loader would.
    return Target(name=name, url="http://127.0.0.1:1/").model_copy(update={"kind": "toy", "url": f"toy:{path}"})


def test_a_registered_kind_is_checked_by_the_checker_and_stored(toy: None, tmp_path: Path) -> None:
    (tmp_path / "up").write_text("up\n")
    (tmp_path / "down").write_text("maintenance\n")
    store = Store(tmp_path / "monitor.db")
    refused = Target(name="web", url="http://127.0.0.1:9/", timeout=1)  # an http target in the same batch
    results = Checker(clock=lambda: 1000.0).run([toy_target("job", tmp_path / "up"), refused, toy_target("batch", tmp_path / "down")])
    store.add_results(results)
    assert [(r.name, r.kind, r.severity, r.error) for r in results] == [
        ("job", "toy", "ok", None),
        ("web", "http", "critical", "connection_refused"),
        ("batch", "toy", "critical", "toy_down"),
    ]
    [stored] = store.recent_results("batch")
    assert (stored["ok"], stored["severity"], stored["error"], stored["detail"], stored["checked_at"]) == (
        0,
        "critical",
        "toy_down",
        "the file says maintenance",
        1000.0,
    )
    assert "toy" in registry.names()


def test_the_checker_closes_the_kinds_it_opened(toy: None, tmp_path: Path) -> None:
    import toy_kind

    [result] = Checker().run([toy_target("job", tmp_path / "none")])
    assert (result.error, result.detail) == ("toy_down", "the file says nothing")
    assert toy_kind.MADE and toy_kind.MADE[-1].closed is True


def test_an_unknown_kind_names_itself_and_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"no check kind 'ping'; known kinds: dns, heartbeat, http, icmp, tcp, tls"):
        registry.factory("ping")


def test_a_second_factory_for_a_kind_is_refused(toy: None) -> None:
    with pytest.raises(ValueError, match="check kind 'toy' is already registered"):
        registry.register("toy", lambda context: None)  # type: ignore[arg-type,return-value]
