"""The trust question in a real terminal (tmux) shows a long ``apiBase`` whole, and a change past where
the old question cut it (117 characters) is asked about again at the next start (issue 30, finding 1)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scripted_server import ScriptedServer
from terminal_harness import CLI, LONG, Terminal

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

MODEL = "openai/scripted"
FIRST = "http://localhost:11434/" + "a" * 110 + "/v1/ok"
CHANGED = FIRST[:-6] + "@evil.invalid/v1"  # the same first 130 characters
KEY = f'models["{MODEL}"].apiBase: '


def _start(root: Path, server: ScriptedServer, api_base: str) -> Terminal:
    for leftover in ("project", "home"):
        shutil.rmtree(root / leftover, ignore_errors=True)
    for leftover in ("tmux.sock", "exit-code", "stderr"):
        (root / leftover).unlink(missing_ok=True)
    args = f"--model {MODEL} --api-key sk-users-own --context-window 4000"
    return Terminal(root, server, model_args=args, settings={"models": {MODEL: {"apiBase": api_base}}},
                    with_session_flag=False, width=80)


def _shown_value(screen: str) -> tuple[str, int]:
    """The claim as the question drew it (its first line and the indented lines that continue it, joined),
    and the longest of those lines."""
    lines = screen.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("  " + KEY))
    parts = [lines[start][2:]]
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        parts.append(line[4:])
    return "".join(parts).rstrip(), max(len(line) for line in lines[start:start + len(parts)])


def test_a_long_api_base_is_shown_whole_and_a_change_past_the_old_cut_is_asked_again(
    tmp_path: Path, scripted_server: ScriptedServer
) -> None:
    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "settings.json").write_text(json.dumps({"retry": {"maxRetries": 0}}))
    term = _start(tmp_path, scripted_server, FIRST)
    try:
        screen = term.wait_for("Trust this directory?", timeout=LONG)
        assert _shown_value(screen) == (KEY + json.dumps(FIRST), 79)  # wrapped by the question, not the terminal
        term.type("t")
        term.wait_for("pi>", timeout=LONG)
    finally:
        term.close()
    term = _start(tmp_path, scripted_server, CHANGED)
    try:
        screen = term.wait_for(lambda s: "Trust this directory?" in s or "pi>" in s, timeout=LONG)
        assert "Trust this directory?" in screen, "a change past character 117 was trusted unasked"
        assert _shown_value(screen)[0] == KEY + json.dumps(CHANGED)
        term.type("i")
        term.wait_for("pi>", timeout=LONG)
    finally:
        term.close()
