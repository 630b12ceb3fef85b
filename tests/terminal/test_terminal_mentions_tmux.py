"""``@path`` in a real terminal: Tab completes the file name, sending attaches the file's text."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scripted_server import Reply, ScriptedServer
from terminal_harness import CLI, LONG, Terminal, user_texts

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


@pytest.fixture
def server(scripted_server: ScriptedServer) -> ScriptedServer:
    """A fresh server for each test here (not the module's)."""
    return scripted_server


def test_tab_completes_an_at_path_and_sending_attaches_the_file(server: ScriptedServer, tmp_path: Path) -> None:
    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    term = Terminal(tmp_path, server)
    try:
        (term.project / "notes-for-model.txt").write_text("SECRET-CONTENT-42\n")
        term.wait_for("pi>", timeout=LONG)
        server.enqueue(Reply(text="Read it."))
        term.type("explain @notes-for", enter=False)
        term.wait_for(" notes-for-model.txt")  # the menu offers it while typing; Tab takes it
        term.key("Tab")
        term.wait_for("explain @notes-for-model.txt")
        term.key("Enter")
        try:
            term.wait_for("Read it.", timeout=5)
        except AssertionError:  # the completion menu was still open: that Enter only closed it
            term.key("Enter")
            term.wait_for("Read it.", timeout=LONG)
        assert user_texts(server) == [
            'explain @notes-for-model.txt\n\n<file path="notes-for-model.txt">\nSECRET-CONTENT-42\n</file>'
        ]
    finally:
        term.close()


def test_sending_says_what_was_attached_and_warns_about_a_missing_file(server: ScriptedServer, tmp_path: Path) -> None:
    if not CLI.exists():
        pytest.skip(f"{CLI} is not installed (pip install -e .)")
    term = Terminal(tmp_path, server)
    try:
        (term.project / "app.py").write_text("print('hi')\nprint('there')\n")
        term.wait_for("pi>", timeout=LONG)
        server.enqueue(Reply(text="Looked."))
        term.type("compare @app.py with @gone.py")
        term.wait_for("Looked.", timeout=LONG)
        screen = term.wait_for("Attached app.py: 27 bytes, 2 lines.")
        assert "@gone.py does not exist: sent as plain text, nothing attached." in " ".join(screen.split())
    finally:
        term.close()
