"""What tool calls and results look like: diffs for edit/write, the tail of bash, grep/find patterns,
the full text kept for Ctrl-O / ``/expand``, and ``/copy``'s OSC 52 sequence. Rendered by rich into a
buffer with colours on, so the styles are checked as the terminal receives them."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text
from ui_harness import FakeModel, make_state

from pi_compact.agent.events import ToolExecutionEnd, ToolExecutionStart
from pi_compact.agent.tools.base import ToolContext
from pi_compact.agent.tools.edit import EditTool
from pi_compact.ui.commands import dispatch
from pi_compact.ui.commands.output import last_answer, osc52
from pi_compact.ui.renderer import TerminalRenderer
from pi_compact.ui.tool_view import call_line, read_before_write, result_view

GREEN, RED = "\x1b[32m", "\x1b[31m"


def colour(text: Text) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=120, force_terminal=True, color_system="standard", highlight=False).print(text)
    return buffer.getvalue()


def plain(text: Text) -> str:
    return text.plain


def result(text: str, **details: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "toolResult", "content": [{"type": "text", "text": text}]}
    if details:
        message["details"] = details
    return message


def test_an_edit_result_is_a_coloured_unified_diff(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\ny = 2\n")
    args = {"path": "a.py", "oldText": "y = 2", "newText": "y = 3"}
    output = EditTool().run(args, ToolContext(cwd=tmp_path))
    view = result_view("edit", args, result(output.text, **(output.details or {})), False)
    assert plain(view.shown).splitlines() == [
        "  ⎿ Edited a.py: replaced 1 line with 1 line at line 2.", "    @@ -1,2 +1,2 @@", "     x = 1",
        "    -y = 2", "    +y = 3",
    ]
    rendered = colour(view.shown)
    assert f"{RED}-y = 2" in rendered and f"{GREEN}+y = 3" in rendered
    assert view.full is None  # nothing was hidden


def test_a_long_diff_is_collapsed_and_kept_in_full() -> None:
    diff = "--- a/f\n+++ b/f\n@@ -1,0 +1,30 @@\n" + "".join(f"+line {i}\n" for i in range(30))
    view = result_view("edit", {"path": "f"}, result("Edited f.", diff=diff), False)
    shown = plain(view.shown).splitlines()
    assert len(shown) == 13 and shown[-1] == "    … 20 more lines (Ctrl-O to expand)"
    assert view.full is not None and "+line 29" in plain(view.full)


def test_a_write_over_a_file_shows_the_diff_against_its_old_text(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    args = {"path": "notes.txt", "content": "alpha\ngamma\n"}
    before = read_before_write(args, tmp_path)
    view = result_view("write", args, result("Overwrote notes.txt: wrote 12 bytes."), False, before=before)
    assert plain(view.shown).splitlines()[2:] == ["     alpha", "    -beta", "    +gamma"]


def test_a_write_of_a_new_file_shows_every_line_added(tmp_path: Path) -> None:
    args = {"path": "new.txt", "content": "one\ntwo\n"}
    assert read_before_write(args, tmp_path) is None
    view = result_view("write", args, result("Created new.txt: wrote 8 bytes."), False)
    assert plain(view.shown).splitlines()[2:] == ["    +one", "    +two"]


def test_bash_shows_its_last_lines_where_the_verdict_is() -> None:
    output = "\n".join([f"test_{i} PASSED" for i in range(10)] + ["1 failed, 9 passed"])
    view = result_view("bash", {"command": "pytest"}, result(output), False)
    assert plain(view.shown).splitlines() == [
        "  ⎿ … 7 earlier lines (Ctrl-O to expand)", "    test_7 PASSED", "    test_8 PASSED", "    test_9 PASSED",
        "    1 failed, 9 passed",
    ]


def test_other_tools_still_show_their_first_lines() -> None:
    view = result_view("read", {"path": "f"}, result("\n".join(f"l{i}" for i in range(6))), False)
    assert plain(view.shown).splitlines()[:2] == ["  ⎿ l0", "    l1"]


def test_grep_and_find_lines_show_the_pattern_and_where() -> None:
    assert plain(call_line("grep", {"pattern": "def main", "path": "src", "glob": "*.py"})) == \
        "▸ grep def main in src (*.py)"
    assert plain(call_line("find", {"pattern": "*.toml"})) == "▸ find *.toml"
    assert plain(call_line("bash", {"command": "ls -la"})) == "▸ bash ls -la"


def test_the_renderer_expands_the_last_collapsed_output_in_full() -> None:
    buffer = io.StringIO()
    renderer = TerminalRenderer(Console(file=buffer, width=120, color_system=None))
    assert not renderer.expand_last()
    renderer(ToolExecutionStart("c1", "bash", {"command": "make"}))
    renderer(ToolExecutionEnd("c1", "bash", result("\n".join(f"step {i}" for i in range(9)))))
    renderer.close()
    assert "step 0" not in buffer.getvalue()
    assert renderer.expand_last()
    assert "step 0" in buffer.getvalue() and buffer.getvalue().count("step 8") == 2


def test_expand_command_prints_the_full_output(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    assert dispatch(state, "/expand") == "continue"
    assert "No collapsed tool output to expand yet." in buffer.getvalue()


def test_copy_sends_the_last_answer_as_osc_52(project: Path) -> None:
    state, buffer = make_state(project, FakeModel("The answer, with é."))
    state.session.prompt("question")
    dispatch(state, "/copy")
    assert osc52("The answer, with é.") in buffer.getvalue()
    assert "Copied the last answer (1 line, 19 characters)" in buffer.getvalue()
    assert osc52("hi") == "\x1b]52;c;" + base64.b64encode(b"hi").decode() + "\x07"


def test_copy_with_no_answer_says_so(project: Path) -> None:
    state, buffer = make_state(project, FakeModel())
    dispatch(state, "/copy")
    assert "No answer to copy yet." in buffer.getvalue() and "\x1b]52" not in buffer.getvalue()
    assert last_answer([{"role": "assistant", "content": [{"type": "toolCall"}]}]) is None


def test_bash_keeps_its_exit_code_line_among_the_last_lines() -> None:
    output = "\n".join(str(i) for i in range(1, 31)) + "\n\n[Exit code: 1]"
    view = result_view("bash", {"command": "seq 1 30"}, result(output), True)
    assert plain(view.shown).splitlines()[1:] == ["    28", "    29", "    30", "    [Exit code: 1]"]
