"""While the agent works, in a real terminal (tmux): the toolbar, type-ahead kept, a cancel while the model
loads, and start-up warnings about the settings said once however many turns follow.

Uses the ``Terminal`` driver of test_terminal_tmux.py; each test has its own terminal.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from scripted_server import Reply, ScriptedServer
from terminal_harness import CLI, LONG, Terminal, user_texts

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(not CLI.exists(), reason=f"{CLI} is not installed (pip install -e .)"),
]

# Loaded by the CLI's Python through PYTHONPATH: running the gated module (the model's first import in the
# background loader) waits until the gate file exists, so the test decides when loading ends. It waits in
# exec_module, under that module's own lock: find_spec runs under the global import lock, which would
# stop every thread's imports.
GATE = """
import importlib.machinery, os, sys, time

class _Waiting:
    def __init__(self, inner):
        self.inner = inner

    def create_module(self, spec):
        return self.inner.create_module(spec)

    def exec_module(self, module):
        while not os.path.exists(os.environ["GATE_FILE"]):
            time.sleep(0.05)
        self.inner.exec_module(module)

class _Gate:
    def find_spec(self, name, path=None, target=None):
        if name != os.environ.get("GATED_MODULE"):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is not None:
            spec.loader = _Waiting(spec.loader)
        return spec

sys.meta_path.insert(0, _Gate())
"""


@pytest.fixture
def server(scripted_server: ScriptedServer) -> ScriptedServer:
    """A fresh server for each test here (not the module's)."""
    return scripted_server


def last_line(screen: str) -> str:
    return screen.rstrip().splitlines()[-1].strip() if screen.strip() else ""


def test_type_ahead_kept(server: ScriptedServer, tmp_path: Path) -> None:
    term = Terminal(tmp_path, server)
    try:
        term.wait_for("pi>", timeout=LONG)
        server.enqueue(Reply(text="Answer one.", delay_s=3, prompt_tokens=1200),
                       Reply(text="Answer two.", delay_s=3, prompt_tokens=1300))
        start = term.mark()
        term.type("first question")
        # The toolbar: context used of the 4,000 window, where compaction starts (3,000), seconds running.
        term.wait_for(lambda s: re.search(r"ctx ~?[\d,]+/4,000 \([\d.]+%\) · compaction at 75% · [1-9]\d* s", s)
                      is not None, timeout=LONG, since=start)
        term.type("second question")
        term.wait_for("queued: second question", since=start)
        term.type("an unfinished thought", enter=False)
        term.wait_for("typing: an unfinished thought▏", since=start)
        # Shown while the queued turn runs: below the first answer. (Not ``since=mark()``: the live toolbar
        # at the bottom may already be drawn, before the mark, when the mark is taken.)
        term.wait_for(lambda s: "Answer one." in s and "typing: an unfinished thought▏" in s[s.index("Answer one."):],
                      timeout=LONG, since=start)
        term.wait_for(lambda s: "Answer two." in s and last_line(s) == "pi> an unfinished thought",
                      timeout=LONG, since=start)
        assert user_texts(server) == ["first question", "second question"]
        server.enqueue(Reply(text="Answer three."))
        term.key("Enter")  # it is in the editor, not just on the screen: Enter sends it
        term.wait_for("Answer three.", timeout=LONG, since=start)
        assert user_texts(server)[-1] == "an unfinished thought"
    finally:
        term.close()


def test_cancel_during_load(server: ScriptedServer, tmp_path: Path) -> None:
    gate_dir, gate = tmp_path / "gate", tmp_path / "gate-open"
    gate_dir.mkdir()
    (gate_dir / "sitecustomize.py").write_text(GATE)
    term = Terminal(tmp_path / "t", server, env={
        "PYTHONPATH": str(gate_dir), "GATE_FILE": str(gate), "GATED_MODULE": "pi_compact.llm.learned"})
    try:
        term.wait_for("Session session.jsonl", timeout=LONG)
        term.type("please fix the bug")
        for key in ("Escape", "C-c"):
            start = term.mark()
            if key == "C-c":
                term.key("Enter")  # the text was put back in the editor: Enter alone sends it again
            term.wait_for("Loading the model library…", since=start)
            term.key(key)
            screen = term.wait_for(lambda s: last_line(s) == "pi> please fix the bug", since=start)
            assert "Not sent; the message is back in the editor." in screen
        assert server.requests == []
        written = term.session_file.read_text() if term.session_file.exists() else ""
        assert "please fix the bug" not in written
        assert not any(json.loads(line).get("type") == "message" for line in written.splitlines())
        gate.touch()
        server.enqueue(Reply(text="Fixed it."))
        start = term.mark()
        term.key("Enter")
        term.wait_for("Fixed it.", timeout=LONG, since=start)
        assert user_texts(server) == ["please fix the bug"]
    finally:
        term.close()


def test_settings_warnings_are_said_once_per_start_not_per_turn(server: ScriptedServer, tmp_path: Path) -> None:
    settings = {"compaction": {"reserveTokens": 5000, "keepRecentTokens": 100, "keepRecentToken": 7}}
    term = Terminal(tmp_path, server, settings=settings)
    try:
        term.wait_for("using 1000 instead.", timeout=LONG)
        for number in range(3):
            server.enqueue(Reply(text=f"Reply {number}.", prompt_tokens=300))
            start = term.mark()
            term.type(f"turn {number}")
            term.wait_for(f"Reply {number}.", timeout=LONG, since=start)
            term.wait_prompt(since=start)
        words = " ".join(term.screen().split())  # rich wraps long lines at spaces
        assert words.count("warning: compaction.reserveTokens (5000)") == 1
        stderr = term.stderr_file.read_text()
        assert stderr.count("keepRecentToken ") == 1 and "did you mean" in stderr  # before the prompt, once
    finally:
        term.close()
