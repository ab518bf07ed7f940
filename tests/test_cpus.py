"""``workers: auto`` counts the CPUs a process may use: its affinity, lowered to its cgroup's CPU quota (a
container's ``--cpus``, a pod's CPU limit), read from cgroup files laid out as the kernel lays them out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from monitor.core.cpus import cpus, quota_of


def hierarchy(tmp_path: Path, files: dict[str, str], cgroup: str) -> tuple[Path, Path]:
    root = tmp_path / "sys-fs-cgroup"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (tmp_path / "cgroup").write_text(cgroup)
    return root, tmp_path / "cgroup"


@pytest.fixture
def sixty_four(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))


def test_a_container_with_two_cpus_on_a_big_host_counts_two(tmp_path: Path, sixty_four: None) -> None:
    root, cgroup = hierarchy(tmp_path, {"cpu.max": "200000 100000\n"}, "0::/\n")  # docker run --cpus 2, cgroup v2
    assert quota_of(root, cgroup) == 2.0 and cpus(root, cgroup) == 2


def test_a_fraction_of_a_cpu_rounds_up_and_no_quota_leaves_the_affinity(tmp_path: Path, sixty_four: None) -> None:
    root, cgroup = hierarchy(tmp_path, {"cpu.max": "150000 100000\n"}, "0::/\n")
    assert cpus(root, cgroup) == 2
    root, cgroup = hierarchy(tmp_path / "none", {"cpu.max": "max 100000\n"}, "0::/\n")
    assert quota_of(root, cgroup) is None and cpus(root, cgroup) == 64


def test_a_systemd_unit_s_quota_is_read_at_its_own_cgroup(tmp_path: Path, sixty_four: None) -> None:
    """CPUQuota=400% on monitor.service: the quota is in the unit's cgroup, not at the root."""
    files = {"cpu.max": "max 100000\n", "system.slice/monitor.service/cpu.max": "400000 100000\n"}
    root, cgroup = hierarchy(tmp_path, files, "0::/system.slice/monitor.service\n")
    assert cpus(root, cgroup) == 4


def test_cgroup_v1_quota_and_period(tmp_path: Path, sixty_four: None) -> None:
    files = {"cpu,cpuacct/docker/abc/cpu.cfs_quota_us": "300000\n", "cpu,cpuacct/docker/abc/cpu.cfs_period_us": "100000\n"}
    root, cgroup = hierarchy(tmp_path, files, "4:cpu,cpuacct:/docker/abc\n3:memory:/docker/abc\n")
    assert cpus(root, cgroup) == 3
    unlimited = {"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}
    root, cgroup = hierarchy(tmp_path / "v1-none", unlimited, "4:cpu,cpuacct:/\n")
    assert cpus(root, cgroup) == 64


def test_unreadable_or_odd_files_leave_the_affinity(tmp_path: Path, sixty_four: None) -> None:
    root, cgroup = hierarchy(tmp_path, {"cpu.max": "lots\n"}, "garbage")
    assert cpus(root, cgroup) == 64
    assert cpus(tmp_path / "missing", tmp_path / "missing-cgroup") == 64
