"""An 80-column terminal: a long tool-output line wraps under its margin, the status line stays one line."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from scripted_server import Reply, ScriptedServer, ToolCallReply
from terminal_harness import CLI, LONG, Terminal

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


@pytest.fixture()
def narrow(tmp_path: Path) -> Iterator[tuple[Terminal, list[str]]]:
    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    server = ScriptedServer().start()
    term = Terminal(tmp_path, server, width=80)
    try:
        (term.project / "long.txt").write_text("x" * 30 + " " + "word " * 40 + "\n")
        term.wait_for("pi>", timeout=LONG)
        server.enqueue(Reply(tool_calls=(ToolCallReply("bash", {"command": "cat long.txt"}),)), Reply(text="Done."))
        term.type("show it")
        term.wait_for(lambda screen: "Done." in screen and "left before auto-compaction" in screen, timeout=LONG)
        time.sleep(0.5)
        # Without -J: the rows as the terminal shows them, wrapped lines apart.
        rows = term.tmux("capture-pane", "-p", "-S", "-200", "-t", "pi").stdout.splitlines()
        yield term, rows
    finally:
        term.close()
        server.stop()


def test_a_long_tool_output_line_wraps_under_its_margin(narrow: tuple[Terminal, list[str]]) -> None:
    _, rows = narrow
    first = next(i for i, row in enumerate(rows) if row.startswith("  ⎿ xxxxxxxxxx"))
    continued = rows[first + 1 : first + 3]
    assert all(row.startswith("    word") for row in continued), rows[first : first + 4]


def test_the_status_line_is_one_row_at_80_columns(narrow: tuple[Terminal, list[str]]) -> None:
    _, rows = narrow
    status = next(i for i, row in enumerate(rows) if row.startswith("openai/scripted · "))
    assert rows[status + 1].startswith("pi>"), rows[status : status + 2]


def test_a_long_session_path_is_never_broken_by_a_newline(tmp_path: Path) -> None:
    from builders import assistant, chain, user, write_session

    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    folder = tmp_path / "sessions-of-a-project-with-a-rather-long-name"
    folder.mkdir()
    path = folder / "2026-12-01T16-48-58-106Z_01a23282-6cfa-79c9-8bf5-83ea45b10c1d.jsonl"
    write_session(path, chain(user("hello there"), assistant("Hi, what shall we do?")))
    server = ScriptedServer().start()
    term = Terminal(tmp_path, server, session_file=path, width=80)
    try:
        # The captured screen joins the rows the terminal wrapped; a newline rich put into the path would stay.
        screen = term.wait_for("messages in context.", timeout=LONG)
        assert f"Resumed {path}: 2 messages in context." in screen
    finally:
        term.close()
        server.stop()
