"""What a target answered never drives the operator's terminal: `monitor replay --detailed`, `incidents show`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from monitor.cli.main import main
from monitor.cli.report import printable
from monitor.core.runs import NewStep
from monitor.store import Store
from monitor.store.writes import IncidentWrites

TITLE = "\x1b]0;owned\x07"  # OSC 0: the window title
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: a clipboard write
LINK = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"  # OSC 8: a hyperlink
OTHERS = "\x1bP1$qm\x1b\\ \x9b31m \x1b[2J \x07 \x08"  # DCS, a C1 CSI, a clear screen, a bell, a backspace
HOSTILE = TITLE + CLIPBOARD + LINK + OTHERS


def seeded(tmp_path: Path) -> str:
    db = str(tmp_path / "m.db")
    store = Store(db)
    incident = IncidentWrites(store).open_incident("api", "consecutive", f"3 consecutive failures of api {HOSTILE}")
    run = store.runs.start_run(f"Investigate api {HOSTILE}", target="api", incident_id=incident, model="builtin")
    store.runs.add_step(
        run,
        NewStep(
            1,
            "action",
            model_output=HOSTILE,
            error=HOSTILE,
            tool_calls=json.dumps([{"name": "check_target", "arguments": {"name": HOSTILE}}]),
            observations=f"api: CRITICAL status=500 {HOSTILE}",
        ),
    )
    store.runs.finish_run(run, "success", f"api is down {HOSTILE}")
    store.close()
    return db


def escapes_in(output: str) -> list[str]:
    """Escape sequences other than the SGR colours click itself writes (ESC [ digits ; m)."""
    import re

    stripped = re.sub(r"\x1b\[[0-9;]*m", "", output)
    return [c for c in stripped if (ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0]


def test_replay_detailed_shows_a_targets_escapes_as_text_on_a_terminal(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    out = CliRunner().invoke(main, ["replay", "--detailed", "--db", db], color=True).output
    assert escapes_in(out) == []
    assert "\\x1b]0;owned\\x07" in out and "\\x1b]52;c;" in out  # shown, so the operator sees what was tried


def test_incident_show_shows_escapes_as_text(tmp_path: Path) -> None:
    db = seeded(tmp_path)
    out = CliRunner().invoke(main, ["incidents", "show", "1", "--db", db], color=True).output
    assert escapes_in(out) == [] and "\\x1b]8;;http://evil.example/" in out


def test_printable_keeps_text_and_layout() -> None:
    assert printable("déjà vu\n\tok — 証明書") == "déjà vu\n\tok — 証明書"
    assert printable("a\x1bb\x9bc\rd") == "a\\x1bb\\x9bc\\rd"
