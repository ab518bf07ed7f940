"""Adding a check kind is one module that declares and registers itself (tests/toy_kind.py): a config names it
(``kind: toy``, its own ``toy:`` settings) and is validated as any; the Checker checks its targets among the others,
their results are stored like any, counted on /metrics, and /probe probes with it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry
from pydantic import ValidationError

from monitor.checks import registry
from monitor.checks.engine import Checker
from monitor.config import ConfigError, Target, parse
from monitor.config.probe import ProbeConfig
from monitor.core import kinds
from monitor.metrics import Metrics
from monitor.metrics.probes import probe_exposition
from monitor.store import Store


@pytest.fixture
def toy() -> Iterator[None]:
    import toy_kind  # declares and registers the kind, as importing a kind's module does

    kinds.declare(toy_kind.KIND)  # again after another test forgot it: the same declaration is fine
    registry.register("toy", toy_kind.Toy)
    yield
    registry.unregister("toy")
    kinds.forget("toy")


def toy_target(name: str, path: Path) -> Target:
    return Target(name=name, url=f"toy:{path}")


def test_a_config_names_a_declared_kind_with_its_own_settings(toy: None, tmp_path: Path) -> None:
    config = parse(
        f"targets:\n- {{name: job, url: 'toy:{tmp_path}/up', toy: {{word: ready}}}}\n"
        f"- {{name: batch, kind: toy, url: 'toy:{tmp_path}/batch'}}\n"
    )
    import toy_kind

    job, batch = config.targets
    assert (job.kind, job.settings_as(toy_kind.ToySettings).word, batch.settings_as(toy_kind.ToySettings).word) == ("toy", "ready", "up")
    assert job.model_dump()["toy"] == {"word": "ready"}


def test_a_declared_kinds_settings_and_address_are_validated(toy: None) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(
            "targets:\n- {name: a, url: 'toy:relative'}\n- {name: b, url: 'toy:/x', toy: {word: LOUD, size: 1}}\n"
            "- {name: c, url: 'http://c/', toy: {word: up}}\n- {name: d, kind: toys, url: 'toy:/x'}\n",
            "t.yaml",
        )
    lines = str(caught.value).splitlines()
    assert lines[0] == "t.yaml:2: targets[0].url: 'toy:relative' is not a toy address: write it toy:/absolute/path"
    assert lines[1] == "t.yaml:3: targets[1].toy.word: String should match pattern '^[a-z]{1,20}$'"
    assert lines[2] == "t.yaml:3: targets[1].toy.size: unknown field (allowed here: word)"
    assert lines[3] == "t.yaml:4: targets[2]: a http target takes no toy: settings (they are for toy targets)"
    assert lines[4] == "t.yaml:5: targets[3].kind: Input should be 'http', 'tcp', 'tls', 'dns', 'icmp', 'heartbeat' or 'toy'"


def test_a_kind_forgotten_is_no_kind_of_the_config() -> None:
    assert not kinds.known("toy")
    with pytest.raises(ConfigError, match=r"targets\[0\]\.kind: Input should be 'http', 'tcp', 'tls', 'dns', 'icmp' or 'heartbeat'\n"):
        parse("targets:\n- {name: a, kind: toy, url: 'toy:/x'}\n", "t.yaml")


def test_a_declared_kinds_results_are_on_metrics(toy: None, tmp_path: Path) -> None:
    (tmp_path / "up").write_text("up\n")
    metrics = Metrics(CollectorRegistry())
    metrics.observe_results(Checker(clock=lambda: 1000.0).run([toy_target("job", tmp_path / "up"), toy_target("gone", tmp_path / "no")]))
    text = metrics.scrape().decode()
    assert 'monitor_check_up{kind="toy",target="job"} 1\n' in text
    assert 'monitor_check_up{kind="toy",target="gone"} 0\n' in text


def test_a_probe_module_probes_with_a_declared_kind_and_answers_its_series(toy: None, tmp_path: Path) -> None:
    (tmp_path / "up").write_text("ready\n")
    settings = ProbeConfig.model_validate({"modules": {"ready": {"prober": "toy", "toy": {"word": "ready"}}}})
    module = settings.modules["ready"]
    target = module.target(module.address(f"{tmp_path}/up"))
    [result] = Checker().run([target])
    body = probe_exposition(result, 0.1).decode()
    assert (target.url, result.ok) == (f"toy:{tmp_path}/up", True)
    assert "probe_success 1.0" in body and "probe_toy_word_found 1.0" in body
    with pytest.raises(ValidationError, match=r"modules\.bad\.toy\.word"):
        ProbeConfig.model_validate({"modules": {"bad": {"prober": "toy", "toy": {"word": "NO"}}}})


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
