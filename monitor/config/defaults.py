"""A target's fields on top of the config's ``defaults`` (and its ``detectors`` on top of the config's), on the
data as written: what a config file, a target file and ``monitor check URL`` all do before validating targets."""

from __future__ import annotations

from typing import Any


def with_defaults(defaults: dict[str, Any], targets: list[Any], detectors: dict[str, Any] | None = None) -> list[Any]:
    """Each target as written, on top of ``defaults``; its own ``detectors`` on top of the config's."""
    targets = [_merge(defaults, t) if isinstance(t, dict) else t for t in targets] if defaults else targets
    if detectors:
        targets = [
            {**t, "detectors": _merge(detectors, t["detectors"])} if isinstance(t, dict) and isinstance(t.get("detectors"), dict) else t
            for t in targets
        ]
    return targets


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged
