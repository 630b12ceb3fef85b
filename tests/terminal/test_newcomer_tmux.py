"""The smaller points of a newcomer's third hour, in a real terminal (issue 44, item 7): an unknown window
points at ``--context-window``; ``/help`` says what ``/copy`` needs in tmux; the spinner and the toolbar
show one clock; reopening a compacted session shows its last three turns; ``-r`` does not count a
compaction ``/uncompact`` took back."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from scripted_server import Reply, ScriptedServer
from terminal_harness import LONG, Terminal

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]
CHECKOUT = str(Path(__file__).resolve().parents[2])


def _terminal(root: Path, server: ScriptedServer, **options: object) -> Terminal:
    term = Terminal(root, server, width=200, env={"PYTHONPATH": CHECKOUT}, **options)  # type: ignore[arg-type]
    term.wait_for("pi>", timeout=LONG)
    return term


def test_an_unknown_window_points_at_the_context_window_flag_not_at_another_model(
    server: ScriptedServer, tmp_path: Path,
) -> None:
    args = f"--model openai/no-such-model-44 --api-base {server.base_url} --api-key x"
    term = _terminal(tmp_path, server, model_args=args)
    try:
        for _ in range(2):
            start = term.mark()
            term.type("hello")
            term.wait_prompt(since=start, timeout=LONG)
        screen = term.screen()
        assert "Nothing was sent: no context window is known for this model (see above); start again with " \
               "--context-window N" in screen
        assert "pick another with /model NAME" not in screen
        start = term.mark()
        term.type("/context")
        screen = term.wait_for("Context", timeout=LONG, since=start)
        assert "window (unknown: start with --context-window N" in " ".join(screen.split())
        assert "(model loading)" not in screen
    finally:
        term.close()


def test_help_says_copy_needs_set_clipboard_in_tmux(server: ScriptedServer, tmp_path: Path) -> None:
    term = _terminal(tmp_path, server)
    try:
        start = term.mark()
        term.type("/help")
        screen = term.wait_for("/copy", timeout=LONG, since=start)
        assert "tmux needs set-clipboard on" in screen
        assert "works over ssh and in tmux" not in screen
    finally:
        term.close()


def test_the_spinner_shows_no_clock_of_its_own_beside_the_toolbars(server: ScriptedServer, tmp_path: Path) -> None:
    term = _terminal(tmp_path, server)
    try:
        server.enqueue(Reply(text="Slow answer.", delay_s=4, prompt_tokens=500))
        start = term.mark()
        term.type("take your time")
        screen = term.wait_for(lambda s: re.search(r"· [2-9] s\b", s) is not None, timeout=LONG, since=start)
        assert "Working… (Esc" in screen
        assert re.search(r"Working… \d+s", screen) is None
        term.wait_for("Slow answer.", timeout=LONG, since=start)
    finally:
        term.close()


def _four_turns_then_compact(term: Terminal, server: ScriptedServer) -> None:
    for n in (1, 2, 3, 4):
        server.enqueue(Reply(text=f"Answer number {n}.", prompt_tokens=300 + n))
        start = term.mark()
        term.type(f"question number {n} " + "about the parser and its many tests " * 40)
        term.wait_for(f"Answer number {n}.", timeout=LONG, since=start)
        term.wait_prompt(since=start, timeout=LONG)
    summary = "\n".join(f"{h}\n- scripted" for h in ("## Goal", "## Constraints & Preferences", "## Progress",
                                                       "## Key Decisions", "## Next Steps", "## Critical Context"))
    server.enqueue(Reply(text=summary), Reply(text=summary))
    start = term.mark()
    term.type("/compact")
    term.wait_for("[compaction]", timeout=LONG, since=start)
    term.wait_prompt(since=start, timeout=LONG)


def test_reopening_a_compacted_session_shows_its_last_three_turns(server: ScriptedServer, tmp_path: Path) -> None:
    session_file = tmp_path / "old.jsonl"
    first = _terminal(tmp_path / "a", server, session_file=session_file,
                      settings={"compaction": {"reserveTokens": 1000, "keepRecentTokens": 5}})
    try:
        _four_turns_then_compact(first, server)
        first.key("C-d")
        assert first.wait_exit() == 0
    finally:
        first.close()
    again = _terminal(tmp_path / "b", server, session_file=session_file)
    try:
        # The compaction is the branch's last entry: its line comes after the last answer.
        screen = again.wait_for("compacted here", timeout=LONG)
        assert screen.index("Answer number 4.") < screen.index("compacted here")
        assert screen.index("pi> question number 2") < screen.index("pi> question number 3") < \
            screen.index("pi> question number 4")
        assert "pi> question number 1" not in screen
    finally:
        again.close()


def test_the_dash_r_list_does_not_count_a_compaction_uncompact_took_back(
    server: ScriptedServer, tmp_path: Path,
) -> None:
    from builders import assistant, chain, compaction, header, user, write_session

    from pi_compact.session.tree import UNCOMPACT_TYPE

    sessions = tmp_path / "sessions"
    sessions.mkdir()
    entries = chain(user("undone work"), assistant("reply"), user("more"), assistant("reply 2"),
                    compaction("## Goal\n- x", "test-id-2", id="c-1"))
    entries += chain({"type": "custom", "customType": UNCOMPACT_TYPE, "data": {"compactionId": "c-1"},
                      "parentId": "test-id-3", "id": "u-1"})
    write_session(sessions / "a.jsonl", entries, header())
    write_session(sessions / "b.jsonl", chain(user("kept work"), assistant("reply"), user("again"),
                                              assistant("reply 2"), compaction("## Goal\n- y", "test-id-2")),
                  header())
    args = (f"--model openai/scripted --api-base {server.base_url} --api-key x --context-window 4000 "
            f"--session-dir {sessions} -r")
    term = Terminal(tmp_path / "t", server, with_session_flag=False, model_args=args, width=200,
                    env={"PYTHONPATH": CHECKOUT})
    try:
        screen = term.wait_for("Open which session?", timeout=LONG)
        rows = {name: next(row for row in screen.splitlines() if name in row) for name in ("undone work", "kept work")}
        assert "compacted" not in rows["undone work"]
        assert "compacted 1×" in rows["kept work"]
        term.key("Escape")
    finally:
        term.close()
