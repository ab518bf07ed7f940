"""Loading a large fleet: targets from target files (JSON, YAML) beside the same targets written inline.

    python bench/target_files.py [--targets 50000] [--files 10]

Writes ``--targets`` http targets as one JSON target file, then as ``--files`` YAML target files (one
flow mapping a line, as a generator writes them), and loads each config with ``monitor.config.load``:
wall time and the process's CPU time (on a shared machine, wall time also measures the neighbours).
The baseline is the same targets inline in monitor.yaml: refused past the config file's bounds (the
refusal is printed), so it is also timed at the largest fleet a config file holds.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from monitor import config  # noqa: E402
from monitor.config import ConfigError  # noqa: E402


def targets(count: int) -> list[dict[str, str]]:
    return [{"name": f"web-{i}", "url": f"http://10.{i >> 16}.{i >> 8 & 255}.{i & 255}:8080/health"} for i in range(count)]


def yaml_lines(fleet: list[dict[str, str]]) -> str:
    return "".join(f"- {{name: {t['name']}, url: '{t['url']}'}}\n" for t in fleet)


def timed(load: Callable[[], config.Config]) -> str:
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        loaded = load()
    except ConfigError as exc:
        return f"refused: {str(exc).splitlines()[0][:220]}"
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return f"{len(loaded.targets):>6,} targets  {wall:6.2f} s wall  {cpu:6.2f} s CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=50_000)
    parser.add_argument("--files", type=int, default=10)
    args = parser.parse_args()
    fleet = targets(args.targets)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "json").mkdir()
        (root / "json" / "fleet.json").write_text(json.dumps(fleet, indent=1))
        (root / "json.yaml").write_text("target_files: [json/*.json]\n")
        (root / "yaml").mkdir()
        size = -(-len(fleet) // args.files)
        for part in range(args.files):
            (root / "yaml" / f"part{part:03}.yaml").write_text(yaml_lines(fleet[part * size : (part + 1) * size]))
        (root / "yaml.yaml").write_text("target_files: [yaml/*.yaml]\n")
        (root / "inline.yaml").write_text("targets:\n" + yaml_lines(fleet))
        fits = 15_000  # about the most under the config file's 1 MiB (and 100,000 nodes, 5 a target)
        (root / "fits.yaml").write_text("targets:\n" + yaml_lines(fleet[:fits]))
        print(f"{args.targets:,} targets")
        print(f"  target files, 1 JSON file:       {timed(lambda: config.load(root / 'json.yaml'))}")
        print(f"  target files, {args.files} YAML files:     {timed(lambda: config.load(root / 'yaml.yaml'))}")
        print(f"  inline (baseline):               {timed(lambda: config.load(root / 'inline.yaml'))}")
        print(f"  inline, the first {fits:,}:       {timed(lambda: config.load(root / 'fits.yaml'))}")


if __name__ == "__main__":
    main()
