"""What a new user coming from Uptime Kuma or Gatus gets wrong in ``alert_rules:``, ``alerts.webhooks`` and
``status_pages:``, written from the README: each mistake is a config error naming its line, never a rule that
silently pages nobody or a page that cannot be served."""

from __future__ import annotations

import pytest

from monitor.config import ConfigError, parse

HOOKS = "alerts: {webhooks: [{url: 'http://127.0.0.1:9/a', name: ops}]}\n"
TARGETS = (
    "targets:\n  - {name: api, url: 'http://127.0.0.1:9/', group: backend, labels: {team: core}}\n"
    "  - {name: api-v2, url: 'http://127.0.0.1:9/'}\n"
)


def error(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse(text, "c.yaml")
    return str(caught.value)


@pytest.mark.parametrize(
    "match, where, said",
    [
        ("{targets: [apx]}", "alert_rules[0].match.targets[0]", "no target named 'apx' (configured: api, api-v2)"),
        ("{targets: ['web-*']}", "alert_rules[0].match.targets[0]", "'web-*' matches no target"),
        ("{groups: [backnd]}", "alert_rules[0].match.groups[0]", "no target has group 'backnd' (groups: backend)"),
        ("{labels: {team: cor}}", "alert_rules[0].match.labels.team", "no target has label team: cor"),
    ],
)
def test_a_rule_that_matches_no_target_is_an_error(match: str, where: str, said: str) -> None:
    message = error(HOOKS + f"alert_rules:\n  - match: {match}\n    receivers: [ops]\n" + TARGETS)
    assert f"c.yaml:3: {where}: {said}" in message


def test_a_rule_matching_targets_by_pattern_group_and_label_is_fine() -> None:
    config = parse(
        HOOKS + "alert_rules:\n  - match: {targets: ['api-*'], groups: [], labels: {}}\n    receivers: [ops]\n"
        "  - match: {groups: [backend], labels: {team: core}}\n    receivers: [ops]\n" + TARGETS,
        "c.yaml",
    )
    assert [config.alert_policy(t) is config.alert_rules[0] for t in config.targets] == [False, True]


def test_two_webhooks_of_one_name_are_an_error() -> None:
    message = error(
        "alerts:\n  webhooks:\n    - {url: 'http://127.0.0.1:9/a', name: ops}\n    - {url: 'http://127.0.0.1:9/b', name: ops}\n" + TARGETS
    )
    assert "c.yaml:4: alerts.webhooks[1].name: 'ops' is the name of webhooks[0] already" in message


@pytest.mark.parametrize("name", ["alertmanager", "apprise"])
def test_a_webhook_may_not_take_a_name_rules_give_another_receiver(name: str) -> None:
    message = error(f"alerts:\n  webhooks:\n    - {{url: 'http://127.0.0.1:9/a', name: {name}}}\n" + TARGETS)
    assert f"c.yaml:3: alerts.webhooks[0].name: {name!r} is what rules call " in message


def test_reminders_more_often_than_a_minute_say_so_in_durations() -> None:
    message = error(HOOKS + "alert_rules:\n  - receivers: [ops]\n    repeat_every: 10s\n" + TARGETS)
    assert "c.yaml:4: alert_rules[0].repeat_every: 10s is too often: reminders come at most once a minute (1m)" in message


@pytest.mark.parametrize("slug", ["../admin", "Public", "a/b", "-x"])
def test_a_bad_slug_says_what_a_slug_is(slug: str) -> None:
    message = error(TARGETS + f"status_pages:\n  - slug: '{slug}'\n    title: t\n    groups: [{{name: g, targets: [api]}}]\n")
    assert (
        f"status_pages[0].slug: {slug!r} is not a slug: lowercase letters, digits, - and _, up to 64, beginning with a letter or digit"
    ) in message


@pytest.mark.parametrize(
    "logo, said",
    [
        ("https://example.com/" + "a" * 5000, "a logo URL of more than 2048 characters"),
        ("https://ex;ample.com/logo.png", "is not a host name"),
        ("https://user:pw@example.com/logo.png", "a logo URL with a user name or password"),
    ],
    ids=["long", "semicolon", "userinfo"],
)
def test_a_logo_is_a_short_url_of_a_plain_host(logo: str, said: str) -> None:
    message = error(TARGETS + f"status_pages:\n  - slug: p\n    title: t\n    logo: '{logo}'\n    groups: [{{name: g, targets: [api]}}]\n")
    assert "status_pages[0].logo: " in message and said in message and len(message) < 1000
