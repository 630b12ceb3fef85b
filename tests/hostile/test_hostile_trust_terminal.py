"""In a real terminal (tmux): the trust question shows a long ``apiBase`` whole, and a change past where
the old question cut it (117 characters) is asked about again at the next start (issue 30, finding 1);
an ``AGENTS.md`` linked to the terminal or a named pipe neither stalls start-up nor is read (finding 4)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from scripted_server import Reply, ScriptedServer
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


@pytest.mark.parametrize("target", ["/dev/stdin", "fifo"])
def test_an_agents_md_linked_to_the_terminal_or_a_pipe_does_not_stall_start_up(
    tmp_path: Path, scripted_server: ScriptedServer, target: str
) -> None:
    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    project = tmp_path / "project"
    project.mkdir()
    if target == "fifo":
        os.mkfifo(project / "AGENTS.md")
    else:
        (project / "AGENTS.md").symlink_to(target)  # the terminal itself: reading it would eat the user's keys
    term = Terminal(tmp_path, scripted_server)
    try:
        term.wait_for("pi>", timeout=LONG)
        scripted_server.enqueue(Reply(text="the reply"))
        since = term.mark()
        term.type("hello")
        screen = term.wait_for("the reply", timeout=LONG, since=since)
        everything = term.screen() + (tmp_path / "stderr").read_text()
        assert everything.count(f"Not reading {project / 'AGENTS.md'}") == 1, screen
        system = [m for m in scripted_server.requests[-1]["messages"] if m["role"] in ("system", "developer")]
        assert "Project instructions" not in json.dumps(system)
    finally:
        term.close()
