"""Issue 35 §8 in a real terminal (tmux): a reserve that leaves the threshold under what every request
carries is fitted with a warning at start, ``/settings reload`` repeats it (not "0 warnings"), and
``/settings`` after an edit of the file says to reload (and that the reload would ignore the broken file).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scripted_server import ScriptedServer
from terminal_harness import CLI, LONG, Terminal

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(not CLI.exists(), reason=f"{CLI} is not installed (pip install -e .)"),
]

SETTINGS = {"compaction": {"reserveTokens": 3_900, "keepRecentTokens": 100}}  # a 100-token threshold on 4,000


def _words(term: Terminal) -> str:
    return " ".join(term.screen().split())  # rich wraps long lines at spaces


def test_a_reserve_leaving_no_room_is_fitted_said_again_on_reload_and_an_edit_asks_for_a_reload(
    server: ScriptedServer, tmp_path: Path
) -> None:
    term = Terminal(tmp_path, server, settings=SETTINGS)
    try:
        term.wait_for(lambda screen: "using 1000 instead." in " ".join(screen.split()), timeout=LONG)
        warning = "leaves an auto-compaction threshold of 100 tokens on the 4000-token context window"
        assert _words(term).count(warning) == 1
        start = term.mark()
        term.type("/settings reload")
        term.wait_prompt(since=start)
        assert _words(term).count(warning) == 2
        assert "Settings reloaded (1 warning)." in _words(term)
        (term.project / ".pi" / "settings.json").write_text('{"compaction": {"reserveTokens": 1000,}}')
        start = term.mark()
        term.type("/settings")
        term.wait_prompt(since=start)
        words = _words(term)
        assert "changed since the settings were read" in words and "/settings reload applies the file" in words
        assert "A reload would ignore" in words and "invalid JSON at line 1" in words
    finally:
        term.close()
