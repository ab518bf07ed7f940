"""A family is told by its fixes as a reader tells them: written in other forms of the same words, named by a
third member too, and seen by clients that each name the failure in their own codes (monitor.memory.families)."""

from __future__ import annotations

from test_families import DAY, member

from monitor.memory import families


def test_one_fix_in_other_forms_of_its_words_is_one_fix() -> None:
    a = member(
        2, opened=0, closed=3600, fix="on each media node umount -l /mnt/media && mount /mnt/media, then systemctl restart gunicorn-media"
    )
    b = member(6, opened=90 * DAY, closed=90 * DAY + 3600, fix="umount -l + mount on all media-api nodes, restarted gunicorn")
    other = member(4, opened=30 * DAY, closed=30 * DAY + 3600, fix="raised the worker timeout to 60s")
    assert families.fix_words(b.fix) >= {"restart", "node", "gunicorn", "media", "mount", "umount"}
    assert {f.ids for f in families.families([a, b, other], now=100 * DAY)} == {frozenset({2, 6}), frozenset({4})}


def test_the_third_member_of_a_family_does_not_make_its_fix_common() -> None:
    fixes = [
        "added /etc/containerd/certs.d/docker.io/hosts.toml (server = harbor.internal/v2/dockerhub) to the ci-spot-v2 node "
        "template and recycled the nodes; pulls go through Harbor again",
        "added the docker.io hosts.toml mirror to preview-pool-b's template, drained and recycled its nodes",
        "added hosts.toml mirror to the arm64 template and recycled nodes; node bootstrap script now installs it (only for "
        "pools created after this change)",
    ]
    found = [member(i, opened=i * 40 * DAY, closed=i * 40 * DAY + 3600, fix=fix) for i, fix in enumerate(fixes, 1)]
    decoy = member(4, opened=10 * DAY, closed=10 * DAY + 3600, fix="raised the pool max to 20 and made previews expire")
    assert {f.ids for f in families.families([*found, decoy], now=200 * DAY)} == {frozenset({1, 2, 3}), frozenset({4})}


def test_clients_naming_one_failure_by_their_own_codes_are_one_family() -> None:
    here = member(3, opened=0, closed=3600, fix="added the hosts.toml mirror to the pool template", kinds=(("code", "ImagePullBackOff"),))
    there = member(
        1,
        opened=DAY * 9,
        closed=DAY * 9 + 3600,
        target="ci",
        fix="hosts.toml mirror added to the node template",
        kinds=(("code", "ErrImagePull"),),
    )
    assert not families.contradict(here, there)  # each target's codes are its own
    mine = member(
        5, opened=DAY * 9, closed=DAY * 9 + 3600, fix="hosts.toml mirror added to the template", kinds=(("code", "ErrImagePull"),)
    )
    assert families.contradict(here, mine)  # on one target, two codes are two failures
