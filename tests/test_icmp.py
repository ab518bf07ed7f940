"""ICMP checks through unprivileged sockets: a ping to 127.0.0.1, and the kernel's refusal as a failed Result.

Whether this process may open an unprivileged ICMP socket is the host's ``net.ipv4.ping_group_range``.
Where it is not what a test needs, the test runs its check in a network namespace of its own (``unshare``),
where the sysctl is the namespace's and may be set; where no namespace can be made, it is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from monitor.checks.engine import Checker
from monitor.checks.icmp import ICMP_FORBIDDEN, IcmpSettings, unprivileged_allowed
from monitor.config import ConfigError, Target, parse
from monitor.core import errors

ROOT = Path(__file__).resolve().parents[1]
CHECK = """
import json, sys
from monitor.checks.engine import Checker
from monitor.config import Target
[result] = Checker().run([Target(name="lo", url=sys.argv[1], timeout=2)])
print(json.dumps(result.to_dict()))
"""
LOOPBACK_UP = """
import fcntl, socket, struct
with socket.socket() as sock:
    flags = struct.unpack("16sh", fcntl.ioctl(sock, 0x8913, struct.pack("16sh", b"lo", 0)))[1]
    fcntl.ioctl(sock, 0x8914, struct.pack("16sh", b"lo", flags | 1))
"""


def check(url: str, *, allowed: bool) -> dict[str, object]:
    """The check of ``url``, here if the host's sysctl is what the test needs, else in a namespace set so."""
    if unprivileged_allowed() == allowed:
        [result] = Checker().run([Target(name="lo", url=url, timeout=2)])
        return result.to_dict()
    if shutil.which("unshare") is None:
        pytest.skip("net.ipv4.ping_group_range is not what this test needs, and unshare is not installed")
    groups = "0 2147483647" if allowed else "1 0"
    script = (
        f"echo '{groups}' > /proc/sys/net/ipv4/ping_group_range && {sys.executable} -c '{LOOPBACK_UP}' && "
        f"{sys.executable} -c '{CHECK}' {url}"
    )
    flags = "-n" if os.geteuid() == 0 else "-rn"
    done = subprocess.run(
        ["unshare", flags, "sh", "-c", script], capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    if done.returncode != 0:
        pytest.skip(
            f"net.ipv4.ping_group_range is not what this test needs, and no network namespace could be "
            f"set up ({done.stderr.strip()[-200:]})"
        )
    return dict(json.loads(done.stdout.splitlines()[-1]))


def test_a_ping_to_the_loopback_is_answered() -> None:
    result = check("icmp://127.0.0.1", allowed=True)
    assert (result["ok"], result["kind"], result["error"]) == (True, "icmp", None), result["detail"]
    assert str(result["detail"]).startswith("3 of 3 echo replies from 127.0.0.1")
    assert 0 < float(str(result["latency_ms"])) < 1000


def test_a_kernel_that_forbids_unprivileged_icmp_is_a_failed_check_naming_the_sysctl() -> None:
    result = check("icmp://127.0.0.1", allowed=False)
    assert (result["ok"], result["severity"], result["error"]) == (False, "critical", ICMP_FORBIDDEN)
    assert "net.ipv4.ping_group_range is 1 to 0" in str(result["detail"])


def test_a_name_that_does_not_resolve_is_a_dns_failure() -> None:
    [result] = Checker().run([Target(name="x", url="icmp://no-such-host.invalid", timeout=2)])
    assert (result.ok, result.error) == (False, errors.DNS)


def test_icmp_targets_in_the_config() -> None:
    config = parse(
        "targets:\n- {name: gw, url: 'icmp://10.0.0.1', icmp: {count: 5, interval: 100ms}}\n"
        "- {name: gw6, kind: icmp, url: 'icmp://[::1]', conditions: ['[RESPONSE_TIME] < 50']}\n"
    )
    assert [t.kind for t in config.targets] == ["icmp", "icmp"]
    assert config.targets[0].settings_as(IcmpSettings).count == 5
    assert config.targets[1].kind_settings == IcmpSettings()  # the defaults
    assert config.targets[0].model_dump()["icmp"] == {"count": 5, "interval": 0.1, "max_loss": 0.5}
    with pytest.raises(ConfigError) as caught:
        parse(
            "targets:\n- {name: a, url: 'icmp://10.0.0.1:80'}\n- {name: b, url: 'http://b/', icmp: {count: 2}}\n"
            "- {name: c, url: 'icmp://c', expect: {status: 200}, conditions: ['[STATUS] == 200']}\n"
            "- {name: d, url: 'icmp://d', icmp: {count: 50, size: 1}}\n",
            "m.yaml",
        )
    lines = str(caught.value).splitlines()
    assert "m.yaml:2: targets[0].url: 'icmp://10.0.0.1:80' is not an icmp address: write it icmp://host" in lines[0]
    assert "m.yaml:3: targets[1]: a http target takes no icmp: settings" in lines[1]
    assert "m.yaml:4: targets[2].expect.status: a icmp target takes no expect.status" in lines[2]
    assert "targets[2].conditions[0]: '[STATUS] == 200': a icmp target has no [STATUS]" in lines[3]
    assert "m.yaml:5: targets[3].icmp.count: Input should be less than or equal to 20" in lines[4]
    assert "targets[3].icmp.size: unknown field (allowed here: count, interval, max_loss)" in lines[5]
