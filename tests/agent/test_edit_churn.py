"""Edit churn stops the tool loop with a question (issue 44, item 5): the embedded model edited
``test_calc.py`` eleven times, one number each time, for 9.6 minutes, and the loop guard (which looks for
identical calls) never fired."""

from __future__ import annotations

import sys
from pathlib import Path

from agent_harness import make_model_harness

from pi_compact.agent.churn import EDIT_RUN_LIMIT, is_test_command, is_test_path
from pi_compact.agent.events import Notice
from pi_compact.llm.scripted import ScriptedCall, ScriptedReply

PASSING_TESTS = f"{sys.executable} -m pytest --version"  # a test command that exits 0


def _edit(path: str, number: int) -> ScriptedReply:
    return ScriptedReply(tool_calls=(ScriptedCall("edit", {"path": path, "oldText": f"{number}",
                                                            "newText": f"{number + 1}"}),))


def _notices(events: list[object]) -> list[str]:
    return [e.text for e in events if isinstance(e, Notice)]


def test_eleven_edits_of_one_file_without_a_passing_test_stop_after_six_with_a_question(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, *(_edit("calc.py", n) for n in range(6, 17)), "Done.")
    (h.cwd / "calc.py").write_text("\n".join(str(n) for n in range(6, 18)) + "\n")
    final = h.session.prompt("Make add() in calc.py return the sum.")
    assert len(h.agent_requests()) == EDIT_RUN_LIMIT + 1  # six edits ran, the seventh was refused
    assert final is not None and final["stopReason"] == "toolUse"
    [notice] = _notices(h.events)
    assert notice.startswith(f"Stopped: the model edited calc.py {EDIT_RUN_LIMIT} times with no passing test run")
    assert notice.endswith('Should it go on? Say "go on", or what to do differently.')
    last = h.entries()[-1]["message"]
    assert last["role"] == "toolResult" and "no successful test run between" in last["content"][0]["text"]


def test_a_passing_test_run_between_edits_starts_the_count_afresh(tmp_path: Path) -> None:
    replies: list[ScriptedReply | str] = []
    for n in range(6, 17):
        replies.append(_edit("calc.py", n))
        if n % 4 == 0:
            replies.append(ScriptedReply(tool_calls=(ScriptedCall("bash", {"command": PASSING_TESTS}),)))
    h = make_model_harness(tmp_path, *replies, "Done.")
    final = h.session.prompt("Make add() in calc.py return the sum.")
    assert final is not None and final["stopReason"] == "stop" and h.session.loop_stop is None


def test_a_failing_test_run_does_not_reset_the_count(tmp_path: Path) -> None:
    replies: list[ScriptedReply | str] = []
    for n in range(6, 17):
        failing = ScriptedCall("bash", {"command": "pytest -x no_such_dir"})
        replies += [_edit("calc.py", n), ScriptedReply(tool_calls=(failing,))]
    h = make_model_harness(tmp_path, *replies, "Done.")
    h.session.prompt("Fix calc.py.")
    assert h.session.loop_stop is not None and "calc.py 6 times" in h.session.loop_stop.text


def test_editing_the_test_when_asked_to_fix_the_code_stops_before_the_edit_and_asks(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, _edit("test_calc.py", 6), "Done.")
    (h.cwd / "test_calc.py").write_text("assert add(2, 4) == 6\n")
    h.session.prompt("The test fails. Fix the bug in calc.py.")
    assert (h.cwd / "test_calc.py").read_text() == "assert add(2, 4) == 6\n"  # not run
    [notice] = _notices(h.events)
    assert notice.startswith("Stopped before the model changed the test test_calc.py: you asked for a fix")
    assert "Is the test wrong?" in notice
    last = h.entries()[-1]["message"]
    assert "the user asked for a fix to the code, not to the test test_calc.py" in last["content"][0]["text"]


def test_a_prompt_that_lets_the_test_change_lets_the_edit_run(tmp_path: Path) -> None:
    for prompt in ("The test is wrong, fix it.", "Fix test_calc.py: 6 should be 7.",
                   "Update the test and fix the bug."):
        root = tmp_path / str(abs(hash(prompt)))
        h = make_model_harness(root, _edit("test_calc.py", 6), "Done.")
        (h.cwd / "test_calc.py").write_text("assert add(2, 4) == 6\n")
        h.session.prompt(prompt)
        assert h.session.loop_stop is None, prompt
        assert (h.cwd / "test_calc.py").read_text() == "assert add(2, 4) == 7\n"


def test_print_mode_does_not_watch_edits_its_turn_cap_bounds_them(tmp_path: Path) -> None:
    h = make_model_harness(tmp_path, *(_edit("calc.py", n) for n in range(6, 17)), "Done.")
    h.session.watch_edits = False  # as PrintMode.run sets it
    final = h.session.prompt("Fix calc.py.")
    assert final is not None and final["stopReason"] == "stop" and h.session.loop_stop is None


def test_what_counts_as_a_test_file_and_a_test_run() -> None:
    assert all(is_test_path(p) for p in ("test_calc.py", "pkg/calc_test.go", "web/app.test.ts", "tests/helpers.py",
                                         "src/__tests__/a.js", "spec/models/user_spec.rb"))
    assert not any(is_test_path(p) for p in ("calc.py", "src/testing_tools.py", "contest.py", "attest/x.py"))
    assert all(is_test_command(c) for c in ("pytest -q", "python -m pytest tests", "npm test", "go test ./...",
                                            "cargo test", "npx vitest run", "make test"))
    assert not any(is_test_command(c) for c in ("ls tests", "cat test_calc.py", "git status"))
