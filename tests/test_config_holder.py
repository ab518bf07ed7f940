"""The config is immutable and swapped whole: ConfigHolder hands each new config to every subscriber."""

from __future__ import annotations

import logging

import pytest
from pydantic import ValidationError

from monitor.config import Config, ConfigHolder, parse


def config(*names: str) -> Config:
    return parse("targets:\n" + "".join(f"- {{name: {n}, url: 'http://127.0.0.1:9/{n}'}}\n" for n in names))


def test_a_loaded_config_cannot_be_changed_in_place() -> None:
    loaded = config("a")
    with pytest.raises(ValidationError, match="frozen"):
        loaded.concurrency = 3
    with pytest.raises(ValidationError, match="frozen"):
        loaded.targets[0].url = "http://127.0.0.1:9/elsewhere"
    with pytest.raises(ValidationError, match="frozen"):
        loaded.detectors.consecutive = 9


def test_derived_fields_are_filled_in_while_validating() -> None:
    loaded = parse("targets: [{name: db, url: 'tcp://127.0.0.1:5432'}]\n")
    assert loaded.replica_index == 0 and loaded.targets[0].tcp is not None


def test_a_swap_hands_the_whole_new_config_to_every_subscriber_in_order() -> None:
    old, new = config("a", "b"), config("a", "c")
    holder, seen = ConfigHolder(old), []
    holder.subscribe(lambda c: seen.append(("first", [t.name for t in c.targets], holder.current is c)))
    holder.subscribe(lambda c: seen.append(("second", [t.name for t in c.targets], holder.current is c)))
    assert holder.swap(new) is True
    assert holder.current is new and [t.name for t in old.targets] == ["a", "b"]  # the old one is untouched
    assert seen == [("first", ["a", "c"], True), ("second", ["a", "c"], True)]


def test_a_failing_subscriber_is_logged_and_the_others_still_apply(caplog: pytest.LogCaptureFixture) -> None:
    holder = ConfigHolder(config("a"))
    applied: list[Config] = []

    def broken(_: Config) -> None:
        raise RuntimeError("a bug in one part")

    holder.subscribe(broken)
    holder.subscribe(applied.append)
    new = config("b")
    with caplog.at_level(logging.ERROR, "monitor.config"):
        assert holder.swap(new) is False
    assert applied == [new] and holder.current is new and "a bug in one part" in caplog.text


def test_an_ended_subscription_hears_no_more_swaps() -> None:
    holder = ConfigHolder(config("a"))
    applied: list[Config] = []
    stop = holder.subscribe(applied.append)
    holder.swap(config("b"))
    stop()
    holder.swap(config("c"))
    assert [[t.name for t in c.targets] for c in applied] == [["b"]]
