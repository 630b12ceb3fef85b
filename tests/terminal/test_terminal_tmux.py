"""The real CLI in a real terminal: ``pi-compact`` runs in tmux against the scripted server.

One terminal session is shared by the tests of this module, which run in file order as one
conversation: a streamed answer, ``/compact`` with instructions (the server delays the summary so
the spinner can be seen), an automatic compaction, Esc cancelling a turn, Ctrl-C cancelling a
compaction, ``/context``, ``/settings``, a multi-line paste and Ctrl-D; then the session is reopened.
Each step polls ``capture-pane`` with a deadline instead of sleeping. Skipped when tmux is missing
(``.ci/run`` installs it).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from builders import structured_summary
from scripted_server import Reply, ScriptedServer
from terminal_harness import CLI, LONG, SETTINGS, WINDOW, Terminal, user_texts  # noqa: F401

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]







def test_a_message_gets_a_streamed_markdown_answer(terminal: Terminal, server: ScriptedServer) -> None:
    server.enqueue(Reply(text="Alpha **bold** part, [bold]kept[/bold]. Bravo part here. Charlie part ends.",
                         prompt_tokens=500, chunk_delay_s=1.0))
    start = terminal.mark()
    terminal.type("hello, explain the lexer")
    partial = terminal.wait_for(lambda s: "Alpha bold part" in s, timeout=LONG, since=start)
    assert "Charlie part ends" not in partial  # it streams: the first piece shows before the last arrives
    screen = terminal.wait_for("Charlie part ends.", since=start)
    assert "Alpha bold part, [bold]kept[/bold]." in screen  # markdown rendered, brackets untouched
    status = terminal.wait_prompt(since=start)
    assert "openai/scripted · 505/4,000 tokens (13%) · 2,495 left before auto-compaction · session.jsonl" in status


def test_manual_compact_shows_the_spinner_then_the_result_block(terminal: Terminal, server: ScriptedServer) -> None:
    # A turn worth summarizing first: a compaction that would not shrink the context writes nothing.
    server.enqueue(Reply(text="The lexer reads characters into tokens. " * 40, prompt_tokens=900))
    start = terminal.mark()
    terminal.type("and how does the lexer handle errors " * 20)
    terminal.wait_prompt(since=start)
    server.enqueue(Reply(text="The parser is recursive descent.", prompt_tokens=1200))
    start = terminal.mark()
    terminal.type("now tell me about the parser " * 30)
    terminal.wait_for("recursive descent.", timeout=LONG, since=start)
    terminal.wait_prompt(since=start)
    server.enqueue(Reply(text=structured_summary("parser"), delay_s=2.0))
    start = terminal.mark()
    terminal.type("/compact focus on the parser")
    spinner = terminal.wait_for("Compacting context…", since=start)
    assert "(Esc or Ctrl-C to cancel)" in spinner
    block = terminal.wait_prompt(since=start)
    assert "[compaction]" in block
    assert "Summary by the model" in block
    assert "focus on the parser" in json.dumps(server.requests[-1]["messages"])


def test_auto_compaction_shows_its_spinner_with_how_full_the_context_was(
    terminal: Terminal, server: ScriptedServer
) -> None:
    server.enqueue(Reply(text="Tests look fine.", prompt_tokens=3500),
                   Reply(text=structured_summary("auto"), delay_s=2.0))
    start = terminal.mark()
    terminal.type("and what about the tests " * 30)
    spinner = terminal.wait_for("Auto-compacting (context", timeout=LONG, since=start)
    assert "Auto-compacting (context 88% full)…" in spinner
    screen = terminal.wait_prompt(since=start)
    assert screen.count("[compaction]") == 1


def test_escape_cancels_a_running_turn(terminal: Terminal, server: ScriptedServer) -> None:
    server.enqueue(Reply(text="too late", delay_s=20))
    start = terminal.mark()
    terminal.type("a slow question " * 40)  # long enough to be the next cut point (see the next test)
    terminal.wait_for("Working…", since=start)
    began = time.monotonic()
    terminal.key("Escape")
    terminal.wait_for("Cancelled.", since=start)
    assert time.monotonic() - began < 5
    assert "too late" not in terminal.wait_prompt(since=start)


def test_ctrl_c_cancels_a_compaction_and_leaves_the_file_unchanged(
    terminal: Terminal, server: ScriptedServer
) -> None:
    server.enqueue(Reply(text=structured_summary("never"), delay_s=20))
    before = terminal.session_file.read_bytes()
    start = terminal.mark()
    terminal.type("/compact")
    terminal.wait_for("Compacting context…", since=start)
    terminal.key("C-c")
    terminal.wait_for("Compaction cancelled, nothing changed.", since=start)
    terminal.wait_prompt(since=start)
    assert terminal.session_file.read_bytes() == before


def test_context_shows_the_window_threshold_and_compactions(terminal: Terminal) -> None:
    start = terminal.mark()
    terminal.type("/context")
    screen = terminal.wait_prompt(since=start)
    assert "/ 4,000 window" in screen
    assert "Threshold    3,000 tokens (window − reserveTokens 1,000)" in screen
    assert "Keep recent  100 tokens (keepRecentTokens)" in screen
    assert "Compactions  2 in this session" in screen


def test_settings_show_values_with_their_source_files(terminal: Terminal) -> None:
    start = terminal.mark()
    terminal.type("/settings")
    screen = terminal.wait_prompt(since=start)
    # A source path longer than its column wraps onto the next line, whole: join such lines back first.
    lines = [line for line in screen.splitlines() if line.strip()]
    joined: list[str] = []
    for line in lines:
        if joined and line.startswith(" " * 20):
            joined[-1] = joined[-1].rstrip() + line.strip()
        else:
            joined.append(line)
    rows = {line.split()[0]: line.split()[1:] for line in joined}
    project_file = str(terminal.project / ".pi" / "settings.json")
    assert rows["compaction.keepRecentTokens"] == ["100", project_file]
    assert rows["compaction.reserveTokens"] == ["1000", project_file]
    assert "…" not in "".join(joined[:40])  # no value or path is cut
    assert rows["retry.maxRetries"] == ["3", "default"]
    assert "4,000              CLI flag --context-window" in screen


def test_a_pasted_multi_line_message_is_sent_as_one_prompt(terminal: Terminal, server: ScriptedServer) -> None:
    server.enqueue(Reply(text="Got both lines."))
    terminal.tmux("set-buffer", "-b", "paste", "first pasted line\nsecond pasted line")
    start = terminal.mark()
    terminal.tmux("paste-buffer", "-p", "-b", "paste", "-t", "pi")  # -p: bracketed, as a terminal pastes
    terminal.wait_for("second pasted line", since=start)
    terminal.key("Enter")
    terminal.wait_for("Got both lines.", since=start)
    terminal.wait_prompt(since=start)
    assert user_texts(server)[-1] == "first pasted line\nsecond pasted line"


def test_a_line_typed_during_a_turn_is_sent_after_it(terminal: Terminal, server: ScriptedServer) -> None:
    server.enqueue(Reply(text="Answer one.", delay_s=1.5), Reply(text="Answer two."))
    start = terminal.mark()
    terminal.type("first question")
    terminal.wait_for("Working…", since=start)
    terminal.type("second question")  # typed ahead, as in a shell: it runs when the first turn is done
    screen = terminal.wait_for("Answer two.", since=start)
    terminal.wait_prompt(since=start)
    assert screen.index("Answer one.") < screen.index("pi> second question") < screen.index("Answer two.")
    assert user_texts(server)[-2:] == ["first question", "second question"]


def test_ctrl_d_exits_cleanly(terminal: Terminal) -> None:
    terminal.key("C-d")
    assert terminal.wait_exit() == 0
    assert terminal.stderr_file.read_text() == ""


def test_reopening_the_session_says_how_often_it_was_compacted(
    terminal: Terminal, server: ScriptedServer, tmp_path: Path
) -> None:
    again = Terminal(tmp_path, server, session_file=terminal.session_file)
    try:
        screen = again.wait_for("Session compacted 2 times", timeout=LONG)
        assert f"Resumed {terminal.session_file}" in screen
        again.wait_prompt(since=0)
        again.key("C-d")  # litellm is most likely still importing in the background: exiting must stay clean
        assert again.wait_exit() == 0
        assert again.stderr_file.read_text() == ""
    finally:
        again.close()


def test_a_file_that_is_not_a_session_ends_with_one_error_line(server: ScriptedServer, tmp_path: Path) -> None:
    not_a_session = tmp_path / "notes.jsonl"
    not_a_session.write_text('{"hello": "world"}\n')
    bad = Terminal(tmp_path, server, session_file=not_a_session)
    try:
        assert bad.wait_exit(timeout=LONG) == 2
        assert bad.stderr_file.read_text() == (
            f"pi-compact: {not_a_session} does not start with a pi session header, so it is not a session file; "
            "pass another file or move it away.\n"
        )
        assert not_a_session.read_text() == '{"hello": "world"}\n'
    finally:
        bad.close()


NOT_SENT = "Nothing was sent: the model cannot be used (see above); pick another with /model NAME."


def test_no_model_configured_is_said_once_and_a_prompt_gets_a_short_reply(
    server: ScriptedServer, tmp_path: Path
) -> None:
    # A provider key in the environment: without one the embedded local model would be chosen.
    term = Terminal(tmp_path, server, model_args="", env={"OPENAI_API_KEY": "sk-test"})
    try:
        term.wait_for("pi>", timeout=LONG)
        term.type("hello")
        term.wait_for(NOT_SENT, timeout=LONG)
        screen = term.wait_prompt(since=0)
        assert screen.count("No model configured") == 1
    finally:
        term.close()


def test_an_unknown_context_window_is_said_once(server: ScriptedServer, tmp_path: Path) -> None:
    term = Terminal(tmp_path, server, model_args="--model openai/no-such-model --api-key x")
    try:
        term.wait_for("The context window of model openai/no-such-model is unknown", timeout=LONG)
        term.type("hello")
        term.wait_for("Nothing was sent: no context window is known for this model", timeout=LONG)
        screen = term.wait_prompt(since=0)
        assert screen.count("is unknown") == 1
    finally:
        term.close()


def test_a_reserve_not_below_the_window_is_fitted_with_one_warning_naming_the_file(
    server: ScriptedServer, tmp_path: Path
) -> None:
    term = Terminal(tmp_path, server, settings={"compaction": {"reserveTokens": 5000, "keepRecentTokens": 100}})
    try:
        settings_file = term.project / ".pi" / "settings.json"
        term.wait_for("using 1000 instead.", timeout=LONG)
        start = term.mark()
        term.type("/context")
        screen = term.wait_prompt(since=start)
        assert "Threshold    3,000 tokens (window − reserveTokens 1,000)" in screen
        words = " ".join(term.screen().split())  # rich wraps long lines at spaces
        assert words.count(
            f"warning: compaction.reserveTokens (5000) in {settings_file} is not smaller than the 4000-token context "
            "window of openai/scripted, so auto-compaction would run before every turn; using 1000 instead."
        ) == 1
    finally:
        term.close()
