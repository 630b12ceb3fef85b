"""``!cmd`` / ``!!cmd`` at the prompt: parsing, what is shown, what is recorded and what the model sees."""

from __future__ import annotations

import json
from pathlib import Path

from ui_harness import FakeModel, make_state

from pi_compact.messages import text_of
from pi_compact.ui.shell_escape import output_of, run_shell, shell_command


def test_bang_lines_parse_into_command_and_context_choice() -> None:
    assert shell_command("!ls -la") == ("ls -la", False)
    assert shell_command("!! git status ") == ("git status", True)
    assert shell_command("!") is None and shell_command("!!") is None
    assert shell_command("why!") is None


def test_the_bash_notes_are_cut_from_the_recorded_output() -> None:
    assert output_of("a\nb\n\n[Exit code: 0]") == "a\nb"
    assert output_of("(no output)\n\n[Exit code: 0]") == ""


def test_bang_runs_the_command_and_the_model_sees_it_next_turn(project: Path) -> None:
    (project / "hello.txt").write_text("hi\n")
    model = FakeModel("ok")
    state, buffer = make_state(project, model)
    message = run_shell(state, "cat hello.txt; exit 3", exclude=False)
    assert (message["output"], message["exitCode"], message["cancelled"]) == ("hi", 3, False)
    screen = buffer.getvalue()
    assert "$ cat hello.txt; exit 3" in screen and "  ⎿ hi" in screen and "[Exit code: 3]" in screen
    state.session.prompt("what did that print?")
    sent = [text_of(m["content"]) for m in model.requests[0].messages if m["role"] == "user"]
    assert sent[0] == (
        "The user ran the shell command `cat hello.txt; exit 3`.\nOutput:\n```\nhi\n```\nIt exited with code 3."
    )
    entries = [json.loads(line) for line in (project / "s.jsonl").read_text().splitlines()]
    assert [e["message"]["role"] for e in entries if e["type"] == "message"][0] == "bashExecution"


def test_double_bang_is_recorded_but_kept_from_the_model(project: Path) -> None:
    model = FakeModel("ok")
    state, buffer = make_state(project, model)
    message = run_shell(state, "echo secret", exclude=True)
    assert message["excludeFromContext"] is True
    assert "Not added to the conversation (!!)." in buffer.getvalue()
    state.session.prompt("hello")
    assert all("secret" not in text_of(m["content"]) for m in model.requests[0].messages)


def test_bang_output_is_followed_by_the_status_line_with_its_tokens(project: Path) -> None:
    # Issue 35.9: `!cat` of a big file added ~5k tokens and no status line said so.
    (project / "notes.md").write_text("a line of the project notes ........\n" * 400)
    state, buffer = make_state(project, FakeModel("ok"))
    run_shell(state, "cat notes.md", exclude=False)
    status = buffer.getvalue().rstrip().splitlines()[-1]
    assert status.startswith("fake/model · ~") and "left before auto-compaction" in status
    tokens = int(status.split(" · ~", 1)[1].split("/", 1)[0].replace(",", ""))
    assert tokens > 3_000  # the output is in the context and counted
