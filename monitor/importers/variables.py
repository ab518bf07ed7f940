"""What a source means by ``${...}``, written so this config means the same (issue 42).

This config reads ``${VAR}`` from the daemon's environment when it loads (:mod:`monitor.config.substitution`), and
``$${`` is a literal ``${``. The tools imported from differ:

- Uptime Kuma and blackbox_exporter (and Prometheus' scrape configs) substitute nothing: a ``${...}`` in a monitor's
  URL, header or body is text, sent as written. :func:`keep_literal` writes every ``${`` of the converted config
  as ``$${``, so that no value of this daemon's environment (its web token, a cloud key) is sent in its place, and
  says where.
- Gatus expands ``$VAR`` and ``${VAR}`` from its environment before it parses its file (``$$`` is a literal
  ``$``). :func:`from_environment` writes each as ``${VAR}``, so this daemon reads it from its own environment as
  Gatus did, and :func:`note_environment` names every variable read and where.
"""

from __future__ import annotations

import re
from typing import Any

from monitor.importers.report import Import

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")  # Gatus' ${VAR} and ${VAR:-default}, as written here


def keep_literal(imported: Import, tool: str) -> None:
    """Every ``${`` in ``imported``'s config written ``$${`` (``tool`` substitutes nothing), and a note of where."""
    places: list[str] = []
    imported.config = _escaped(imported.config, "", places)
    if places:
        imported.note(
            f"{tool} does not substitute ${{...}}: it is text there, so it is written $${{...}} and sent as written, "
            f"never read from this daemon's environment: {', '.join(places)}"
        )


def _escaped(node: Any, where: str, places: list[str]) -> Any:
    if isinstance(node, str):
        if "${" in node:
            places.append(where or "(top)")
            return node.replace("${", "$${")
        return node
    if isinstance(node, dict):
        return {key: _escaped(value, _inside(where, node, key), places) for key, value in node.items()}
    if isinstance(node, list):
        return [_escaped(item, _item(where, item, index), places) for index, item in enumerate(node)]
    return node


def _inside(where: str, node: dict[Any, Any], key: Any) -> str:
    return f"{where}.{key}" if where else str(key)


def _item(where: str, item: Any, index: int) -> str:
    named = f" ({item['name']})" if isinstance(item, dict) and isinstance(item.get("name"), str) else ""
    return f"{where}[{index}]{named}"


def from_environment(document: Any, where: str = "") -> tuple[Any, dict[str, list[str]]]:
    """``document`` (a parsed Gatus file) with each string's ``$VAR`` and ``${VAR}`` written ``${VAR}``, ``$$``
    written as the literal ``$`` it is, and every other ``${`` as ``$${``; and where each variable is read."""
    read: dict[str, list[str]] = {}
    return _converted(document, where, read), read


def _converted(node: Any, where: str, read: dict[str, list[str]]) -> Any:
    if isinstance(node, str):
        return _gatus(node, where, read) if "$" in node else node
    if isinstance(node, dict):
        return {key: _converted(value, _inside(where, node, key), read) for key, value in node.items()}
    if isinstance(node, list):
        return [_converted(item, _item(where, item, index), read) for index, item in enumerate(node)]
    return node


def _gatus(text: str, where: str, read: dict[str, list[str]]) -> str:
    """One string as Gatus expands it (Go's os.ExpandEnv after ``$$``), in this config's syntax."""
    out, literal, i = [], [], 0
    while i < len(text):
        variable, end = _variable_at(text, i)
        if variable is None:
            step = 2 if text.startswith("$$", i) else 1
            literal.append(text[i])
            i += step
            continue
        if literal and literal[-1] == "$":
            literal.pop()  # a literal $ just before ${VAR} cannot be written here (it would read $${VAR}): dropped
            read.setdefault("$", []).append(where)
        out += ["".join(literal).replace("${", "$${"), variable]
        literal, i = [], end
        name = _NAME.match(variable, 2)
        read.setdefault(name.group() if name else variable, []).append(where)
    out.append("".join(literal).replace("${", "$${"))
    return "".join(out)


def _variable_at(text: str, i: int) -> tuple[str | None, int]:
    """The variable Gatus reads at ``i`` (``${VAR}``, ``${VAR:-x}``, ``$VAR``), as this config writes it, and
    where it ends; None where ``i`` starts none."""
    if not text.startswith("$", i) or text.startswith("$$", i):
        return None, i
    braced = _BRACED.match(text, i)
    if braced is not None:
        return braced.group(), braced.end()
    bare = _NAME.match(text, i + 1)
    if bare is not None:
        return f"${{{bare.group()}}}", bare.end()
    return None, i


def note_environment(imported: Import, read: dict[str, list[str]]) -> None:
    """Say which variables the converted config reads from the environment, and where."""
    dropped = read.pop("$", [])
    if read:
        named = "; ".join(f"{name} ({', '.join(places)})" for name, places in sorted(read.items()))
        imported.note(
            "Gatus reads $VAR and ${VAR} from its environment: this config reads them from this daemon's when it "
            f"loads (unset is an error here, where Gatus read an empty value): {named}"
        )
    if dropped:
        imported.note(f"a literal $ just before a variable cannot be written here and was left out: {', '.join(dropped)}")
