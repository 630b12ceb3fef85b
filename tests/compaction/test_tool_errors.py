"""Exact errors of failed tool calls put back into a summary that left them out (``compaction.tool_errors``)."""

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

from pi_compact.compaction.tool_errors import add_missing_errors, error_excerpt, tool_errors

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


def test_output_that_names_no_error_gives_nothing() -> None:
    assert error_excerpt("Command exited with code 1") is None
    assert error_excerpt("=== RUN TestA\n--- PASS: TestA (0.01s)\nok  pkg 0.2s") is None


def test_only_failed_results_count_and_the_newest_three_distinct_are_kept() -> None:
    messages = [
        tool_result("ValueError: passing output mentions an error", tool_name="bash"),  # not a failure
        *(tool_result(f"TypeError: case {n}", tool_name="bash", is_error=True) for n in range(5)),
        tool_result("TypeError: case 3", tool_name="bash", is_error=True),  # the same error again: once, newest
    ]
    assert tool_errors(messages) == [("bash", "TypeError: case 2"), ("bash", "TypeError: case 4"),
                                     ("bash", "TypeError: case 3")]


def test_an_error_the_summary_quotes_is_not_added_again() -> None:
    quoted = "## Critical Context\n- `KeyError: 'shard_weight'`\n"
    summary = structured_summary("fix").replace("## Critical Context\n", quoted)
    assert add_missing_errors(summary, [("bash", "KeyError: 'shard_weight'")]) == (summary, [])


def test_a_missing_error_goes_under_critical_context_word_for_word() -> None:
    summary = structured_summary("fix")
    added, errors = add_missing_errors(summary, [("bash", GO_ERROR)])
    assert errors == [GO_ERROR]
    assert added.endswith(f"## Critical Context\n- Error from bash: {GO_ERROR}")


def test_a_compaction_adds_the_error_its_summary_left_out_and_records_it(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    write_session(path, chain(
        user("Make the shard map faster."),
        assistant(tool_calls=[tool_call("bash", {"command": "go test ./..."}, "call-1")]),
        tool_result(GO_PANIC, tool_call_id="call-1", tool_name="bash", is_error=True),
        assistant("Fixed the nil map. " + sized(600)),
        user("Good. " + sized(300)),
        assistant("Done. " + sized(300)),
    ))
    entry, model = compact_in_process(path, tmp_path, structured_summary("shard map"))
    assert f"- Error from bash: {GO_ERROR}" in str(entry["summary"])
    assert {"action": "errorsAdded", "errors": [GO_ERROR]} in entry["details"]["qualityGate"]
    assert len(model.history) == 1  # no model request for it


# ---- issue 35.5b: a failed edit and a missing module reach the summary as failed ---------------------------

EDIT_MISSING = "oldText not found in app.py; read the file and copy the text exactly."
PI_EDIT_MISSING = ("Could not find the exact text in src/app.py. The old text must match exactly including all "
                   "whitespace and newlines.")
NO_PYTEST = "/usr/bin/python: No module named pytest\n\n[Exit code: 1]"


def test_a_failed_edit_gives_its_own_message_as_the_error() -> None:
    messages = [tool_result(EDIT_MISSING, tool_name="edit", is_error=True),
                tool_result(PI_EDIT_MISSING + "\nMore detail.", tool_name="edit", is_error=True)]
    assert tool_errors(messages) == [("edit", EDIT_MISSING), ("edit", PI_EDIT_MISSING)]


def test_a_failed_command_without_an_error_line_still_gives_nothing() -> None:
    assert tool_errors([tool_result("make: done\n\n[Exit code: 2]", tool_name="bash", is_error=True)]) == []


def test_a_missing_python_module_is_an_error_line_in_both_spellings() -> None:
    assert error_excerpt(NO_PYTEST) == "/usr/bin/python: No module named pytest"
    traceback = ("Traceback (most recent call last):\n  File \"t.py\", line 1\n"
                 "ModuleNotFoundError: No module named 'pytest'")
    assert error_excerpt(traceback) == "ModuleNotFoundError: No module named 'pytest'"


def test_a_failed_edit_is_added_as_not_applied() -> None:
    found = [("edit", EDIT_MISSING), ("bash", "x: No module named pytest")]
    added, errors = add_missing_errors(structured_summary("fix"), found)
    assert errors == [EDIT_MISSING, "x: No module named pytest"]
    assert added.endswith(f"## Critical Context\n- Error from edit (failed, not applied): {EDIT_MISSING}\n"
                          "- Error from bash: x: No module named pytest")


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
    summary = str(entry["summary"])
    assert f"- Error from edit (failed, not applied): {EDIT_MISSING}" in summary
    assert "- Error from bash: /usr/bin/python: No module named pytest" in summary


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
    assert f"- Error from edit (failed, not applied): {EDIT_MISSING}" in str(entry["summary"])


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
