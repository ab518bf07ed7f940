"""CI's probe of the scale-out stack (.ci/deploy, deploy/compose.scale-out.yaml): three replicas on one
PostgreSQL, checked from the host.

    steady   every replica is healthy and says `monitor_replicas 3`; the targets each replica checks are
             disjoint and together are the config's; PostgreSQL holds results for every target and an open
             incident for every target that is down; Prometheus scrapes all three; Alertmanager holds those
             incidents, each sent by the replica that checks its target. Saves the incidents.
    takeover (the replica --kill was killed at --killed-at and is still down) the others see one live member
             fewer, their shares are disjoint and cover the config, every target of the killed one's share is
             checked by them within the lease plus two intervals of the kill (the longest gap is printed), and
             each down target keeps its one open incident.
    after    (a replica was killed and started again, or PostgreSQL restarted) every replica is healthy, the
             shares are still disjoint, covering and the same, every target is checked again, every saved
             incident is still there, unchanged, and each down target still has the same open incident.
             Other incidents may come and go (latency drift on a loaded machine): they are not counted.

Standard library only: it runs on the host's python3. PostgreSQL is read through `--psql`, a command (e.g.
`docker exec <container> psql ...`) that is given the SQL as its last argument.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).parent))

from dashboard import api, instant  # noqa: E402
from deploy_probe import wait  # noqa: E402

# The CI config's targets are one flow mapping a line, `- {name: up-01, url: ...}`: no YAML parser on the
# host's python3. tests/test_deploy.py checks that this reads the names monitor's config loader reads.
TARGET_LINE = re.compile(r"^\s*- \{name: ([\w.-]+), url: (\S+)\}\s*$", re.MULTILINE)
CHECKS = re.compile(r'^monitor_checks_total\{[^}]*target="([^"]+)"[^}]*\} ', re.MULTILINE)
REPLICAS = re.compile(r'^monitor_replicas\{replica="(\d+)"\} ([\d.]+)$', re.MULTILINE)
MEMBERS = re.compile(r"^monitor_members ([\d.]+)$", re.MULTILINE)
SECONDS = {"lease": re.compile(r"^lease: (\d+)s$", re.MULTILINE), "interval": re.compile(r"^  interval: (\d+)s$", re.MULTILINE)}


def config_targets(path: Path) -> dict[str, str]:
    """Name -> URL of every target in the CI config."""
    return dict(TARGET_LINE.findall(path.read_text()))


def settings(path: Path) -> tuple[float, float]:
    """The CI config's lease and its targets' interval (``defaults``), in seconds."""
    text = path.read_text()
    found = {name: pattern.search(text) for name, pattern in SECONDS.items()}
    if not all(found.values()):
        raise SystemExit(f"{path} has no `lease: Ns` and `  interval: Ns` lines")
    return float(found["lease"].group(1)), float(found["interval"].group(1))  # type: ignore[union-attr]


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return answer.read().decode()


def healthy(url: str) -> bool:
    try:
        return json.loads(get(f"{url}/healthz"))["status"] == "ok"
    except urllib.error.HTTPError:  # 503 while no cycle has completed
        return False


def shares(replicas: list[str]) -> list[set[str]]:
    """The targets each replica has counted checks of, read from its own /metrics."""
    return [set(CHECKS.findall(get(f"{url}/metrics?name[]=monitor_checks_total"))) for url in replicas]


def split_up(replicas: list[str], names: set[str], *, settling: bool = False) -> list[set[str]] | None:
    """Each replica's share once the shares cover the config; exits at once if two replicas share a target,
    unless ``settling``: around a hand-over of leases a target may be checked by two for about an interval."""
    found = shares(replicas)
    for i, share in enumerate(found):
        for j, other in enumerate(found[i + 1 :], i + 1):
            if share & other and settling:
                return None
            if share & other:
                raise SystemExit(f"replicas {i} and {j} both check {sorted(share & other)}")
    unknown = set().union(*found) - names
    if unknown:
        raise SystemExit(f"checks of targets not in the config: {sorted(unknown)}")
    return found if set().union(*found) == names and all(found) else None


def says_replicas(url: str, index: int, count: int) -> bool:
    return REPLICAS.findall(get(f"{url}/metrics?name[]=monitor_replicas")) == [(str(index), f"{count}.0")]


def sql(psql: list[str], query: str) -> list[list[str]]:
    out = subprocess.run([*psql, query], capture_output=True, text=True, check=True, timeout=60).stdout
    return [line.split("|") for line in out.splitlines() if line]


def incidents(psql: list[str]) -> dict[str, list[str]]:
    """id -> [target, pattern, opened_at, status] of every incident row."""
    rows = sql(psql, "SELECT id, target, pattern, opened_at, status FROM incidents ORDER BY id")
    return {row[0]: row[1:] for row in rows}


def incident_alerts(alertmanager: str, owner: dict[str, str]) -> set[str]:
    """The targets of the MonitorIncident alerts Alertmanager holds; exits at once if one came from a replica
    (its ``instance``) other than the one that checks its target."""
    alerts = [a["labels"] for a in api(alertmanager, "/api/v2/alerts") if a["labels"].get("alertname") == "MonitorIncident"]
    strays = [(a["target"], a.get("instance")) for a in alerts if a.get("instance") != owner[a["target"]]]
    if strays:
        raise SystemExit(f"incidents sent by a replica that does not check their target: {strays}")
    return {a["target"] for a in alerts}


def open_ids(rows: dict[str, list[str]], targets: set[str]) -> dict[str, str]:
    """target -> id of its open incident, for those of ``targets`` that have one."""
    return {row[0]: id_ for id_, row in rows.items() if row[3] == "open" and row[0] in targets}


def incidents_once_open(psql: list[str], down: set[str]) -> dict[str, list[str]] | None:
    """Every incident row, once each target in ``down`` has an open incident."""
    rows = incidents(psql)
    return rows if open_ids(rows, down).keys() == down else None


def steady(args: argparse.Namespace, targets: dict[str, str], psql: list[str], deadline: float) -> None:
    names, replicas = set(targets), args.replica
    down = {name for name in names if name.startswith("down-")}
    for i, url in enumerate(replicas):
        wait(f"replica {i} answers /healthz with ok", lambda url=url: healthy(url), deadline)
        wait(
            f'replica {i} says monitor_replicas{{replica="{i}"}} {len(replicas)}',
            lambda url=url, i=i: says_replicas(url, i, len(replicas)),
            deadline,
        )
    found = wait(
        f"the replicas' monitor_checks_total targets are disjoint and cover the {len(names)} targets",
        lambda: split_up(replicas, names),
        deadline,
    )
    print(f"  shares: {', '.join(str(len(share)) for share in found)}", flush=True)
    wait(
        f"PostgreSQL holds results of all {len(names)} targets",
        lambda: {row[0] for row in sql(psql, "SELECT DISTINCT target FROM results")} == names,
        deadline,
    )
    opened = wait(
        f"PostgreSQL holds an open incident for each of the {len(down)} targets that are down",
        lambda: incidents_once_open(psql, down),
        deadline,
    )
    wait(
        f"Prometheus scrapes all {len(replicas)} replicas",
        lambda: instant(args.prometheus, f'count(up{{job="monitor"}} == 1) == {len(replicas)}'),
        deadline,
    )
    owner = {name: f"monitor-{i}" for i, share in enumerate(found) for name in share}
    wait(
        "Alertmanager holds those incidents, each sent by the replica that checks its target (instance monitor-N)",
        lambda: down <= incident_alerts(args.alertmanager, owner),
        deadline,
    )
    killed = found[args.kill]
    if not killed & down:
        raise SystemExit(f"replica {args.kill}, the one to kill, checks none of the targets that are down")
    Path(args.save).write_text(json.dumps({"incidents": opened, "share": sorted(killed), "down": sorted(down)}))
    print(
        f"  saved {len(opened)} incidents; replica {args.kill} checks {len(killed)} targets, {len(killed & down)} of them down", flush=True
    )


def members(url: str) -> float:
    found = MEMBERS.findall(get(f"{url}/metrics?name[]=monitor_members"))
    return float(found[0]) if found else 0.0


def first_checks(psql: list[str], names: list[str], since: float) -> dict[str, float]:
    """Each of ``names``: when it was first checked after ``since`` (by the database's rows)."""
    listed = ", ".join(f"'{name}'" for name in names)
    rows = sql(psql, f"SELECT target, min(checked_at) FROM results WHERE checked_at > {since} AND target IN ({listed}) GROUP BY target")
    return {row[0]: float(row[1]) for row in rows}


def takeover(args: argparse.Namespace, targets: dict[str, str], psql: list[str], deadline: float) -> None:
    names, saved = set(targets), json.loads(Path(args.save).read_text())
    share, lease, interval = saved["share"], *settings(args.config)
    live = [url for i, url in enumerate(args.replica) if i != args.kill]
    for url in live:
        wait(f"{url} sees {len(live)} live members", lambda url=url: members(url) == len(live), deadline)

    def all_taken() -> dict[str, float] | None:
        got = first_checks(psql, share, args.killed_at)
        return got if got.keys() == set(share) else None

    taken = wait(f"replica {args.kill}'s {len(share)} targets are checked by the others", all_taken, deadline)
    longest = max(taken.values()) - args.killed_at
    print(
        f"  take-over: every target of replica {args.kill} checked again {longest:.1f} s after the kill at the "
        f"latest (bound: lease {lease:g} s + 2 intervals of {interval:g} s)",
        flush=True,
    )
    if longest > lease + 2 * interval:
        raise SystemExit(f"replica {args.kill}'s share went unchecked for {longest:.1f} s: {taken}")
    wait("the live replicas' shares are disjoint and cover the config", lambda: split_up(live, names, settling=True), deadline)
    down = set(saved["down"])
    before, now = open_ids(saved["incidents"], down), open_ids(incidents(psql), down)
    if now != before:
        raise SystemExit(f"the down targets' open incidents were {before} before the take-over, now {now}")
    print(f"  ok: each of the {len(down)} down targets kept its one open incident", flush=True)


def after(args: argparse.Namespace, targets: dict[str, str], psql: list[str], deadline: float) -> None:
    names, replicas = set(targets), args.replica
    saved = json.loads(Path(args.save).read_text())
    share = saved["share"]
    for i, url in enumerate(replicas):
        wait(f"replica {i} answers /healthz with ok", lambda url=url: healthy(url), deadline)
    found = wait("the shares are disjoint again and cover the config", lambda: split_up(replicas, names, settling=True), deadline)
    if sorted(found[args.kill]) != share:
        raise SystemExit(f"replica {args.kill} checks {sorted(found[args.kill])} after {args.event}, not {share}")
    since = wait("PostgreSQL answers", lambda: float(sql(psql, "SELECT extract(epoch FROM now())")[0][0]), deadline)
    wait(
        f"all {len(names)} targets are checked again, replica {args.kill}'s {len(share)} among them",
        lambda: int(sql(psql, f"SELECT count(DISTINCT target) FROM results WHERE checked_at > {since}")[0][0]) == len(names),
        deadline,
    )
    now = incidents(psql)
    lost = {id_: row for id_, row in saved["incidents"].items() if now.get(id_, [None])[:3] != row[:3]}
    if lost:
        raise SystemExit(f"incidents lost or changed across {args.event}: {lost} (now: {now})")
    down = set(saved["down"])
    before, after_ = open_ids(saved["incidents"], down), open_ids(now, down)
    if after_ != before:  # a target still down keeps its incident: none closed, none opened twice
        raise SystemExit(f"the down targets' open incidents were {before} before {args.event}, now {after_}")
    print(
        f"  ok: all {len(saved['incidents'])} incidents from before {args.event} are there, unchanged, and each "
        f"down target has the same open one ({len(now)} rows now)",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=["steady", "takeover", "after"])
    parser.add_argument("--replica", action="append", required=True, help="a replica's base URL, in index order")
    parser.add_argument("--prometheus", required=True)
    parser.add_argument("--alertmanager", required=True)
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--psql", required=True, help="a command line that runs the SQL given after it")
    parser.add_argument("--kill", type=int, required=True, help="the replica that is killed between the phases")
    parser.add_argument("--save", required=True, help="where steady leaves the incidents for after")
    parser.add_argument("--event", default="the restart", help="what happened before after, for its messages")
    parser.add_argument("--deadline", type=float, default=120)
    parser.add_argument("--killed-at", type=float, default=0.0, help="takeover: when the replica was killed (Unix time)")
    args = parser.parse_args()
    targets = config_targets(args.config)
    if not targets:
        raise SystemExit(f"no targets read from {args.config}")
    phase = {"steady": steady, "takeover": takeover, "after": after}[args.phase]
    phase(args, targets, shlex.split(args.psql), time.monotonic() + args.deadline)


if __name__ == "__main__":
    main()
