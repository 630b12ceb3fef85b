"""Why a tool call failed, chosen by what its output is (``compaction.kept.errors``), kept word for word on
the call's line of ``<tool-outcomes>`` whatever the summary says (``compaction.kept``)."""

from __future__ import annotations

from pathlib import Path

from builders import (
    assistant,
    chain,
    compact_in_process,
    sized,
    structured_summary,
    tool_call,
    tool_result,
    user,
    write_session,
)

from pi_compact.compaction.kept.blocks import block_lines
from pi_compact.compaction.kept.errors import error_excerpt, failure_excerpt
from pi_compact.compaction.kept.outcomes import tool_outcomes

PYTEST = (
    "____ test_load_shard ____\n\n    def test_load_shard():\n>       run_case()\n\nE   KeyError: 'shard_weight'\n"
    "==== short test summary info ====\nFAILED tests/test_shard.py::test_load_shard\n\nCommand exited with code 1"
)
GO_PANIC = (
    "=== RUN   TestRenderBucket\npanic: runtime error: invalid memory address or nil pointer dereference\n"
    "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x4f2a1c]\n\tshard_map.go:234\n"
    "--- FAIL: TestRenderBucket (0.00s)\nFAIL\n\nCommand exited with code 1"
)
GO_ERROR = (
    "panic: runtime error: invalid memory address or nil pointer dereference "
    "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x4f2a1c] shard_map.go:234"
)


def test_a_pytest_failure_gives_its_error_line_without_the_marker() -> None:
    assert error_excerpt(PYTEST) == "KeyError: 'shard_weight'"


def test_a_go_panic_keeps_the_lines_that_continue_it_up_to_two() -> None:
    assert error_excerpt(GO_PANIC) == GO_ERROR


def test_compiler_and_system_errors_are_found_with_their_location() -> None:
    tsc = "\n> tsgo --noEmit\n\nsrc/theme.ts(5,15): error TS2305: Module has no exported member 'EditorTheme'.\n"
    assert error_excerpt(tsc) == "src/theme.ts(5,15): error TS2305: Module has no exported member 'EditorTheme'."
    assert error_excerpt("grep: src/wrap.ts: No such file or directory\n\nCommand exited with code 2") == (
        "grep: src/wrap.ts: No such file or directory")


def test_output_that_names_no_error_gives_the_last_line_the_program_printed_never_our_note() -> None:
    assert error_excerpt("Command exited with code 1") is None  # pi's note: nothing the program said
    assert error_excerpt("(no output)\n\n[Exit code: 1]") == "(no output)"
    assert error_excerpt("building...\nmake: giving up\n\n[Exit code: 2]") == "make: giving up"


def test_a_python_traceback_gives_the_exception_it_ends_with() -> None:
    output = ('Traceback (most recent call last):\n  File "app.py", line 9, in <module>\n    load()\n'
              '  File "app.py", line 4, in load\n    raise ValueError("error: not this line")\n'
              "LookupError: shard 'eu-2' has no weight\n\n[Exit code: 1]")
    assert error_excerpt(output) == "LookupError: shard 'eu-2' has no weight"


def test_a_failed_run_without_an_error_line_gives_the_runners_tally() -> None:
    assert error_excerpt("collected 4 items\n....\n=== 4 failed in 0.31s ===\n\n[Exit code: 1]") == (
        "4 failed in 0.31s")


def test_a_token_in_an_error_line_is_hidden() -> None:
    assert error_excerpt("fatal: bad credentials ghp_" + "a" * 36) == "fatal: bad credentials [redacted]"


def test_only_failed_results_count_newest_first_each_once() -> None:
    messages = []
    for n, (text, failed) in enumerate([("ValueError: passing output mentions an error", False),
                                        *((f"TypeError: case {k}", True) for k in range(3)),
                                        ("TypeError: case 1", True)]):
        messages += [assistant(tool_calls=[tool_call("bash", {"command": "./run"}, f"c{n}")]),
                     tool_result(text, tool_call_id=f"c{n}", is_error=failed)]
    assert tool_outcomes(messages, [], 1000) == [
        'command "./run": FAILED: "TypeError: case 1"', 'command "./run": FAILED: "TypeError: case 2"',
        'command "./run": FAILED: "TypeError: case 0"']


def test_the_outcomes_keep_what_fits_their_budget_the_newest_first() -> None:
    messages = []
    for n in range(20):
        messages += [assistant(tool_calls=[tool_call("bash", {"command": f"./step {n}"}, f"c{n}")]),
                     tool_result(f"OSError: step {n} broke", tool_call_id=f"c{n}", is_error=True)]
    kept = tool_outcomes(messages, ['command "./older": FAILED: "x"'], 60)
    assert kept[0] == 'command "./step 19": FAILED: "OSError: step 19 broke"' and 2 <= len(kept) < 20


def test_the_previous_summarys_outcomes_follow_the_new_ones() -> None:
    messages = [assistant(tool_calls=[tool_call("bash", {"command": "./run"}, "c1")]),
                tool_result("OSError: new", tool_call_id="c1", is_error=True)]
    assert tool_outcomes(messages, ['edit "a.py": applied'], 1000) == [
        'command "./run": FAILED: "OSError: new"', 'edit "a.py": applied']


def test_a_compaction_keeps_the_error_in_its_outcomes_not_in_a_section(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    write_session(path, chain(
        user("Make the shard map faster."),
        assistant(tool_calls=[tool_call("bash", {"command": "go run ./cmd/render"}, "call-1")]),
        tool_result(GO_PANIC, tool_call_id="call-1", tool_name="bash", is_error=True),
        assistant("Fixed the nil map. " + sized(600)),
        user("Good. " + sized(300)),
        assistant("Done. " + sized(300)),
    ))
    entry, model = compact_in_process(path, tmp_path, structured_summary("shard map"))
    summary = str(entry["summary"])
    assert block_lines(summary, "tool-outcomes") == [f'command "go run ./cmd/render": FAILED (exit 1): "{GO_ERROR}"']
    assert GO_ERROR not in summary.split("<user-messages>")[0]  # the sections are the model's alone
    assert len(model.history) == 1  # no model request for it


# ---- issue 35.5b: a failed edit and a missing module reach the summary as failed ---------------------------

EDIT_MISSING = "oldText not found in app.py; read the file and copy the text exactly."
PI_EDIT_MISSING = ("Could not find the exact text in src/app.py. The old text must match exactly including all "
                   "whitespace and newlines.")
NO_PYTEST = "/usr/bin/python: No module named pytest\n\n[Exit code: 1]"


def test_a_failed_edit_gives_its_own_message_as_the_error() -> None:
    assert failure_excerpt("edit", EDIT_MISSING) == EDIT_MISSING
    assert failure_excerpt("edit", PI_EDIT_MISSING + "\nMore detail.") == PI_EDIT_MISSING


def test_a_missing_python_module_is_an_error_line_in_both_spellings() -> None:
    assert error_excerpt(NO_PYTEST) == "/usr/bin/python: No module named pytest"
    traceback = ("Traceback (most recent call last):\n  File \"t.py\", line 1\n"
                 "ModuleNotFoundError: No module named 'pytest'")
    assert error_excerpt(traceback) == "ModuleNotFoundError: No module named 'pytest'"


def test_the_summarizer_reads_failed_results_marked_and_pis_serialization_is_unchanged() -> None:
    from pi_compact.compaction.serialize import serialize_message

    failed = tool_result(EDIT_MISSING, tool_name="edit", is_error=True)
    passed = tool_result("Edited app.py.", tool_name="edit")
    assert serialize_message(failed) == [f"[Tool result]: {EDIT_MISSING}"]
    assert serialize_message(failed, for_summarizer=True) == [f"[Tool result (failed)]: {EDIT_MISSING}"]
    assert serialize_message(passed, for_summarizer=True) == ["[Tool result]: Edited app.py."]


def test_a_compaction_carries_the_failed_edit_and_the_missing_pytest_the_summary_left_out(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    write_session(path, chain(
        user("Fix the off-by-one in app.py and run the tests."),
        assistant(tool_calls=[tool_call("edit", {"path": "app.py", "oldText": "i <= n", "newText": "i < n"},
                                        "c1")]),
        tool_result(EDIT_MISSING, tool_call_id="c1", tool_name="edit", is_error=True),
        assistant(tool_calls=[tool_call("bash", {"command": "python -m pytest"}, "c2")]),
        tool_result(NO_PYTEST, tool_call_id="c2", tool_name="bash", is_error=True),
        assistant("The fix is in. " + sized(600)),
        user("Good. " + sized(300)),
        assistant("Done. " + sized(300)),
    ))
    # The summarizer calls the edit done and forgets both errors, as the embedded model did.
    entry, model = compact_in_process(path, tmp_path, structured_summary("edit applied"))
    asked = str(model.history[0].messages)
    assert f"[Tool result (failed)]: {EDIT_MISSING}" in asked
    assert "[Tool result (failed)]: /usr/bin/python: No module named pytest" in asked
    assert block_lines(str(entry["summary"]), "tool-outcomes") == [
        'command "python -m pytest": FAILED (exit 1): "/usr/bin/python: No module named pytest"',
        f'edit "app.py": FAILED, nothing changed: "{EDIT_MISSING}"',
    ]


def test_a_failed_edit_in_the_start_of_a_split_turn_is_carried_too(tmp_path: Path) -> None:
    # The cut inside a tool loop (issue 35.2) puts the loop's first calls in the turn prefix.
    path = tmp_path / "session.jsonl"
    write_session(path, chain(
        user("Old question. " + sized(600)),
        assistant("Old answer. " + sized(600)),
        user("Fix the off-by-one in app.py. " + sized(200)),  # too long to be kept word for word
        assistant(tool_calls=[tool_call("edit", {"path": "app.py", "oldText": "i <= n", "newText": "i < n"},
                                        "c1")]),
        tool_result(EDIT_MISSING, tool_call_id="c1", tool_name="edit", is_error=True),
        assistant(tool_calls=[tool_call("read", {"path": "notes.md"}, "c2")]),
        tool_result(sized(2_000), tool_call_id="c2", tool_name="read"),
    ))
    entry, model = compact_in_process(path, tmp_path, structured_summary("history"),
                                      "## Original Request\n- fix app.py\n\n## Early Progress\n- edited app.py\n\n"
                                      "## Context for Suffix\n- (none)")
    assert entry["details"]["splitTurn"] is True and entry["details"]["keptOverBudget"] is True
    assert len(model.history) == 2  # the history and the start of the turn, each summarized
    assert block_lines(str(entry["summary"]), "tool-outcomes") == [
        f'edit "app.py": FAILED, nothing changed: "{EDIT_MISSING}"']


def test_a_rust_unwrap_panic_printed_under_a_tests_stdout_is_the_error() -> None:
    output = ("---- parser::tests::split stdout ----\n"
              "called `Option::unwrap()` on a `None` value: missing field `source_tag`\n\nfailures:\n")
    assert error_excerpt(output) == "called `Option::unwrap()` on a `None` value: missing field `source_tag`"


def test_a_rust_panic_line_keeps_its_message_from_the_next_line_and_not_the_note() -> None:
    output = ("thread 'main' panicked at src/main.rs:4:5:\n"
              "called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }\n"
              "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n")
    assert error_excerpt(output) == ("thread 'main' panicked at src/main.rs:4:5: called `Result::unwrap()` on an "
                                     "`Err` value: ParseIntError { kind: InvalidDigit }")


def test_an_rspec_failed_expectation_is_the_error_with_what_it_got() -> None:
    output = ("  1) Ledger::Journal schedules tokens in order\n     Failure/Error: expected: 831\n"
              "          got: 924\n\n     (compared using ==)\n")
    assert error_excerpt(output) == "Failure/Error: expected: 831 got: 924"
