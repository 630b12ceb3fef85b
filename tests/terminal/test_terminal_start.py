"""Start-up and issue-13 terminal behaviour in a real terminal (tmux), against the scripted server.

Uses the ``Terminal`` driver of test_terminal_tmux.py; each test has its own terminal.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from scripted_server import Reply, ScriptedServer, ToolCallReply
from terminal_harness import CLI, LONG, WINDOW, Terminal, user_texts

from pi_compact.ui.approval_prompt import QUIET_S

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(not CLI.exists(), reason=f"{CLI} is not installed (pip install -e .)"),
]


@pytest.fixture
def server(scripted_server: ScriptedServer) -> ScriptedServer:
    """A fresh server for each test here (not the module's)."""
    return scripted_server


def model_args(server: ScriptedServer, *extra: str) -> str:
    return " ".join([f"--model openai/scripted --api-base {server.base_url} --api-key x --context-window {WINDOW}",
                     *extra])


def test_a_positional_prompt_opens_the_terminal_with_that_message_sent(server: ScriptedServer, tmp_path: Path) -> None:
    server.enqueue(Reply(text="Looking at the failing test now."))
    term = Terminal(tmp_path, server, model_args=model_args(server, "'fix the failing test'"))
    try:
        screen = term.wait_for("Looking at the failing test now.", timeout=LONG)
        assert "pi> fix the failing test" in screen
        term.wait_prompt(since=0, timeout=LONG)
        assert user_texts(server) == ["fix the failing test"]
        assert term.alive()  # still the interactive terminal, waiting for the next message
    finally:
        term.close()


def test_a_positional_prompt_comes_after_the_session_line_not_between_question_and_answer(
    server: ScriptedServer, tmp_path: Path
) -> None:
    # Issue 35.9: the "Session …" line was printed after "pi> question", before the answer.
    server.enqueue(Reply(text="THE-ANSWER"))
    term = Terminal(tmp_path, server, model_args=model_args(server, "'what is wrong'"))
    try:
        screen = term.wait_for("THE-ANSWER", timeout=LONG)
        session_line = screen.index("Session session.jsonl")
        question = screen.index("pi> what is wrong")
        assert session_line < question < screen.index("THE-ANSWER")
    finally:
        term.close()


def test_p_with_a_file_on_stdin_answers_about_it_and_exits(server: ScriptedServer, tmp_path: Path) -> None:
    """``pi-compact -p "why does this fail" < build.log`` typed in a real terminal: stdout is the terminal,
    stdin the file, which reaches the model as context after the question."""
    (tmp_path / "build.log").write_text("E   ModuleNotFoundError: No module named 'lexer'\n")
    server.enqueue(Reply(text="The lexer module is missing from the path."))
    question = f"-p 'why does this fail' < {tmp_path / 'build.log'}"
    term = Terminal(tmp_path, server, model_args=model_args(server, question), with_session_flag=False)
    # Keep the pane after the CLI ends so its output can be read (set long before Python has even started).
    term.tmux("set-option", "-t", "pi", "remain-on-exit", "on")
    try:
        screen = term.wait_for("The lexer module is missing from the path.", timeout=LONG)
        term.wait_for(lambda _: term.exit_file.exists(), timeout=LONG)
        assert term.exit_file.read_text().strip() == "0"
        assert "pi>" not in screen  # print mode: one answer, no interactive prompt
        assert user_texts(server) == [
            "why does this fail\n\n<stdin>\nE   ModuleNotFoundError: No module named 'lexer'\n</stdin>"]
    finally:
        term.close()


def test_an_edit_shows_a_diff_and_ctrl_o_expands_a_collapsed_bash_output(
    server: ScriptedServer, tmp_path: Path
) -> None:
    term = Terminal(tmp_path, server, model_args=model_args(server))
    try:
        (term.project / "app.py").write_text("def main():\n    return 1\n")
        term.wait_for("pi>", timeout=LONG)
        server.enqueue(Reply(tool_calls=(ToolCallReply("edit", {
            "path": "app.py", "oldText": "    return 1", "newText": "    return 2"}),)))
        server.enqueue(Reply(tool_calls=(ToolCallReply("bash", {"command": "seq 1 30"}),)))
        server.enqueue(Reply(text="Changed and checked."))
        start = term.mark()
        term.type("change the return value")
        screen = term.wait_for("Changed and checked.", timeout=LONG, since=start)
        assert "▸ edit app.py" in screen
        assert "-    return 1" in screen and "+    return 2" in screen
        assert "… 27 earlier lines (Ctrl-O to expand)\n    28\n    29\n    30\n    [Exit code: 0]" in screen
        term.wait_prompt(since=start)
        assert "\n    7\n" not in term.screen()[start:]
        mark = term.mark()
        term.key("C-o")
        expanded = term.wait_for(lambda s: "\n    7\n" in s and "\n    29\n" in s, since=mark)
        assert "seq 1 30\n  ⎿ 1\n    2\n" in expanded  # the call line, then the output in full
        assert (term.project / "app.py").read_text() == "def main():\n    return 2\n"
    finally:
        term.close()


def test_bang_ls_shows_the_listing_and_the_model_gets_it(server: ScriptedServer, tmp_path: Path) -> None:
    term = Terminal(tmp_path, server, model_args=model_args(server))
    try:
        (term.project / "README.txt").write_text("hi\n")
        term.wait_for("pi>", timeout=LONG)
        start = term.mark()
        term.type("!ls")
        screen = term.wait_for("README.txt", timeout=LONG, since=start)
        assert "$ ls" in screen
        screen = term.wait_prompt(since=start, timeout=LONG)
        assert "left before auto-compaction" in screen.split("README.txt", 1)[1]  # the status line follows
        server.enqueue(Reply(text="I see the readme."))
        term.type("what is here?")
        term.wait_for("I see the readme.", timeout=LONG, since=start)
        users = [m for m in server.requests[-1]["messages"] if m["role"] == "user"]
        assert "The user ran the shell command `ls`." in str(users[0]["content"])
        assert "README.txt" in str(users[0]["content"])
    finally:
        term.close()


def test_copy_puts_the_last_answer_on_the_clipboard_through_osc_52(server: ScriptedServer, tmp_path: Path) -> None:
    term = Terminal(tmp_path, server, model_args=model_args(server))
    try:
        term.tmux("set-option", "-s", "set-clipboard", "on")  # let tmux take OSC 52 into its paste buffer
        term.wait_for("pi>", timeout=LONG)
        server.enqueue(Reply(text="Copy me, please."))
        start = term.mark()
        term.type("say something")
        term.wait_for("Copy me, please.", timeout=LONG, since=start)
        term.wait_prompt(since=start, timeout=LONG)
        term.type("/copy")
        term.wait_for("Copied the last answer", since=start)
        assert term.tmux("show-buffer").stdout == "Copy me, please."
    finally:
        term.close()


def test_approval_edits_asks_and_no_leaves_the_file_while_yes_changes_it(
    server: ScriptedServer, tmp_path: Path
) -> None:
    term = Terminal(tmp_path, server, model_args=model_args(server, "--approve edits"))
    target = term.project / "app.py"
    target.write_text("x = 1\n")
    try:
        term.wait_for("pi>", timeout=LONG)
        edit = {"path": "app.py", "oldText": "x = 1", "newText": "x = 2"}
        server.enqueue(Reply(tool_calls=(ToolCallReply("edit", edit),)))
        server.enqueue(Reply(text="Left it alone."))
        start = term.mark()
        term.type("change x")
        screen = term.wait_for("Allow this edit?", timeout=LONG, since=start)
        assert "-x = 1" in screen and "+x = 2" in screen
        time.sleep(QUIET_S + 0.3)  # a key pressed at once after the question appears is typing, not an answer
        term.type("n", enter=False)
        term.wait_for("Left it alone.", timeout=LONG, since=start)
        assert target.read_text() == "x = 1\n"
        assert "Not run: the user declined this call." in json.dumps(server.requests[-1]["messages"])
        term.wait_prompt(since=start, timeout=LONG)
        server.enqueue(Reply(tool_calls=(ToolCallReply("edit", edit),)))
        server.enqueue(Reply(text="Changed it."))
        start = term.mark()
        term.type("now do change it")
        term.wait_for("Allow this edit?", timeout=LONG, since=start)
        time.sleep(QUIET_S + 0.3)
        term.type("y", enter=False)
        term.wait_for("Changed it.", timeout=LONG, since=start)
        assert target.read_text() == "x = 2\n"
        screen = term.wait_prompt(since=start, timeout=LONG)
        assert "pi> y" not in screen  # the answer key was not kept as type-ahead
    finally:
        term.close()


def test_reopening_a_session_prints_the_recent_conversation(server: ScriptedServer, tmp_path: Path) -> None:
    session_file = tmp_path / "old.jsonl"
    first = Terminal(tmp_path / "a", server, session_file=session_file, model_args=model_args(server))
    try:
        first.wait_for("pi>", timeout=LONG)
        for n in (1, 2, 3, 4):
            server.enqueue(Reply(text=f"Answer number {n}."))
            start = first.mark()
            first.type(f"question number {n}")
            first.wait_for(f"Answer number {n}.", timeout=LONG, since=start)
            first.wait_prompt(since=start, timeout=LONG)
        first.key("C-d")
        assert first.wait_exit() == 0
    finally:
        first.close()
    again = Terminal(tmp_path / "b", server, session_file=session_file, model_args=model_args(server))
    try:
        screen = again.wait_for("Answer number 4.", timeout=LONG)
        assert f"Resumed {session_file}: 8 messages in context." in screen
        assert "… 2 earlier messages not shown" in screen
        assert "question number 1" not in screen
        assert screen.index("pi> question number 2") < screen.index("Answer number 2.") < \
            screen.index("pi> question number 4")
    finally:
        again.close()


def _old_sessions(directory: Path) -> None:
    from builders import assistant, chain, header, user, write_session

    directory.mkdir(parents=True)
    for name, first, mtime in (("a.jsonl", "oldest work", 1000), ("b.jsonl", "newest work", 3000),
                               ("c.jsonl", "middle work", 2000)):
        write_session(directory / name, chain(user(first), assistant(f"reply to {first}")), header())
        os.utime(directory / name, (mtime, mtime))


def test_resume_picker_opens_the_second_newest_session(server: ScriptedServer, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    _old_sessions(sessions)
    term = Terminal(tmp_path / "t", server, model_args=model_args(server, f"--session-dir {sessions}"))
    try:
        term.wait_for("pi>", timeout=LONG)
        start = term.mark()
        term.type("/resume")
        screen = term.wait_for("Open which session?", timeout=LONG, since=start)
        assert screen.index("1.") < screen.index("newest work") < screen.index("2.") < screen.index("middle work")
        term.type("2")
        screen = term.wait_for("reply to middle work", timeout=LONG, since=start)
        assert f"Resumed {sessions / 'c.jsonl'}: 2 messages in context." in screen
        assert "pi> middle work" in screen
    finally:
        term.close()


def test_dash_r_picks_a_session_before_the_terminal_starts(server: ScriptedServer, tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    _old_sessions(sessions)
    root = tmp_path / "t"
    flags = model_args(server, f"--session-dir {sessions} -r")
    term = Terminal(root, server, with_session_flag=False, model_args=flags)
    try:
        term.wait_for("Open which session?", timeout=LONG)
        term.type("oldest")  # the list is filtered as it is typed; Enter opens its first row
        screen = term.wait_for("reply to oldest work", timeout=LONG)
        assert "pi> oldest work" in screen
    finally:
        term.close()


def test_escape_in_the_dash_r_picker_exits_instead_of_opening_a_new_session(
    server: ScriptedServer, tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions"
    _old_sessions(sessions)
    root = tmp_path / "t"
    flags = model_args(server, f"--session-dir {sessions} -r")
    term = Terminal(root, server, with_session_flag=False, model_args=flags)
    try:
        term.wait_for("Open which session?", timeout=LONG)
        term.key("Escape")
        assert term.wait_exit(timeout=LONG) == 130  # the terminal never started
        assert (root / "stderr").read_text() == "pi-compact: No session chosen; nothing was opened.\n"
    finally:
        term.close()


def test_resume_picker_filters_while_typing_and_arrows_choose_the_second_newest(
    server: ScriptedServer, tmp_path: Path
) -> None:
    sessions = tmp_path / "sessions"
    _old_sessions(sessions)
    (sessions / "d.jsonl").write_bytes((sessions / "a.jsonl").read_bytes().replace(b"oldest work", b"other task"))
    term = Terminal(tmp_path / "t", server, model_args=model_args(server, f"--session-dir {sessions}"))
    try:
        term.wait_for("pi>", timeout=LONG)
        start = term.mark()
        term.type("/resume")
        term.wait_for("other task", timeout=LONG, since=start)
        term.type("work", enter=False)  # no Enter: the list narrows at once
        screen = term.wait_for(lambda s: "other task" not in s, since=start)
        assert screen.index("newest work") < screen.index("middle work") < screen.index("oldest work")
        term.key("Down")
        term.key("Enter")
        screen = term.wait_for("reply to middle work", timeout=LONG, since=start)
        assert f"Resumed {sessions / 'c.jsonl'}: 2 messages in context." in screen
    finally:
        term.close()
