"""The CPUs this process may use: its affinity (which a container's cpuset narrows) and its cgroup's CPU quota.

A container started with ``--cpus 2`` on a 64-core host, or a pod with a CPU limit, keeps all 64 cores in its
affinity: only the quota says it gets two cores' time. ``workers: auto`` starts a process per CPU counted here,
so without the quota such a container would start 64 processes of about 40 MB to share two cores' time.

The quota is read where the process's own cgroup keeps it: cgroup v2's ``cpu.max`` (``max 100000`` is none,
``200000 100000`` is two cores), else cgroup v1's ``cpu.cfs_quota_us`` over ``cpu.cfs_period_us`` (``-1`` is none),
at the process's cgroup path (``/proc/self/cgroup``) and at the root of the hierarchy (what a container sees).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")


def cpus(root: Path = ROOT, cgroup: Path = Path("/proc/self/cgroup")) -> int:
    """The CPUs this process may use: its affinity, lowered to its cgroup's quota (rounded up); at least 1."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = quota_of(root, cgroup)
    return max(1, min(affinity, math.ceil(quota))) if quota is not None else max(1, affinity)


def quota_of(root: Path, cgroup: Path) -> float | None:
    """The cgroup's CPU quota in cores, the tightest found; None where none is set or none can be read."""
    found = [quota for place in places(root, cgroup) if (quota := _read(place)) is not None]
    return min(found) if found else None


def places(root: Path, cgroup: Path) -> list[Path]:
    """Where the quota may be kept: the process's own cgroup in each hierarchy, then each hierarchy's root."""
    try:
        lines = cgroup.read_text().splitlines()
    except OSError:
        lines = []
    out = []
    for line in lines:  # "0::/system.slice/monitor.service" (v2), "4:cpu,cpuacct:/docker/abc" (v1)
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        own = path.lstrip("/")
        if controllers == "":
            out.append(root / own)
        elif "cpu" in controllers.split(","):
            out.extend(root / name / own for name in (controllers, "cpu", "cpu,cpuacct"))
    return [*out, root, root / "cpu", root / "cpu,cpuacct"]


def _read(place: Path) -> float | None:
    """The quota kept in the folder ``place`` (cgroup v2 or v1), in cores; None for none or nothing readable."""
    try:
        if (place / "cpu.max").is_file():
            limit, _, period = (place / "cpu.max").read_text().strip().partition(" ")
            return None if limit == "max" else int(limit) / int(period or "100000")
        if (place / "cpu.cfs_quota_us").is_file():
            quota = int((place / "cpu.cfs_quota_us").read_text())
            return None if quota <= 0 else quota / int((place / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError, ZeroDivisionError):
        return None
    return None
