"""The newest test run's failures are kept by name and tally (runs.py)."""

from __future__ import annotations

import json

import pytest
from builders import assistant, structured_summary, tool_result, user
from fixtures_path import FIXTURES, needs_fixtures, parity_sessions

from pi_compact.compaction.runs import TEST_RUN_PREFIX, RunReport, add_failed_run, newest_failed_run, run_report
from pi_compact.messages import text_of

CARGO = """running 3 tests
test parser::tests::a ... ok
test parser::tests::split_tenant ... FAILED

failures:
    parser::tests::split_tenant

test result: FAILED. 2 passed; 1 failed; 0 ignored; finished in 2.29s
"""


@pytest.mark.parametrize(("output", "tally", "names"), [
    (CARGO, "test result: FAILED. 2 passed; 1 failed; 0 ignored; finished in 2.29s", ("parser::tests::split_tenant",)),
    ("FAILED tests/test_config.py::test_resolve - E   ValueError: x\n1 failed, 14 passed in 6.37s",
     "1 failed, 14 passed in 6.37s", ("tests/test_config.py::test_resolve",)),
    ("--- FAIL: TestPrune (0.00s)\nFAIL\nDONE 14 tests, 1 failure in 0.253s",
     "DONE 14 tests, 1 failure in 0.253s", ("TestPrune",)),
    ("   × splits quotas in order\n      Tests  1 failed | 15 passed (16)",
     "Tests 1 failed | 15 passed (16)", ("splits quotas in order",)),
    ("Tests:       1 failed, 15 passed, 16 total", "Tests: 1 failed, 15 passed, 16 total", ()),
    ("16 examples, 1 failure\n\nrspec ./spec/journal_spec.rb:93 # Ledger::Journal schedules tokens",
     "16 examples, 1 failure", ("Ledger::Journal schedules tokens",)),
    ("  Failed Gateway.Tests.HeadersTests.ValidatesTokens [20 ms]\n"
     "Failed!  - Failed:     1, Passed:    15, Skipped:     0, Total:    16, Duration: 160 ms",
     "Failed! - Failed: 1, Passed: 15, Skipped: 0, Total: 16, Duration: 160 ms",
     ("Gateway.Tests.HeadersTests.ValidatesTokens",)),
    ("ShippingServiceTest > renders events in order() FAILED\n\n15 tests completed, 1 failed",
     "15 tests completed, 1 failed", ("ShippingServiceTest > renders events in order()",)),
    ("not ok 16 - ledger: check chunks\n# Looks like you failed 1 test of 16.",
     "# Looks like you failed 1 test of 16.", ("ledger: check chunks",)),
])
def test_each_runners_tally_and_failed_names_are_read(output: str, tally: str, names: tuple[str, ...]) -> None:
    assert run_report(output) == RunReport(tally, True, names)


@pytest.mark.parametrize("output", [
    "test result: ok. 12 passed; 0 failed; 0 ignored", "14 passed in 0.51s", "16 examples, 0 failures",
    "Passed!  - Failed:     0, Passed:    16, Skipped:     0, Total:    16", "Tests:       16 passed, 16 total",
])
def test_a_run_with_no_failures_passed(output: str) -> None:
    run = run_report(output)
    assert run is not None and not run.failed


def test_output_with_no_runners_tally_is_no_test_run() -> None:
    assert run_report("FAILED to connect\ntest this ... FAILED? no\n2 passed the check") is None


def test_the_newest_failed_run_is_kept_and_a_later_pass_is_said() -> None:
    older = tool_result(CARGO.replace("split_tenant", "older_one"), is_error=True)
    failing = tool_result(CARGO, is_error=True)
    passing = tool_result("test result: ok. 3 passed; 0 failed; 0 ignored")
    run, passed_after = newest_failed_run([older, failing, assistant("fixed"), passing])
    assert run is not None and run.names == ("parser::tests::split_tenant",) and passed_after
    summary, added = add_failed_run(structured_summary("x"), run, passed_after)
    assert added[-1] == "(test result: FAILED. 2 passed; 1 failed; 0 ignored; finished in 2.29s; a later run passed)"


def test_no_failed_run_adds_nothing() -> None:
    passing = tool_result("test result: ok. 3 passed; 0 failed; 0 ignored")
    assert newest_failed_run([passing]) == (None, False)
    assert add_failed_run(structured_summary("x"), None) == (structured_summary("x"), [])


def test_a_runs_tally_in_a_users_message_is_not_a_test_run() -> None:
    assert newest_failed_run([user(CARGO)]) == (None, False)


def test_a_failed_run_the_summary_lacks_goes_on_one_line_under_critical_context() -> None:
    summary, added = add_failed_run(structured_summary("x"), *newest_failed_run([tool_result(CARGO, is_error=True)]))
    line = f"{TEST_RUN_PREFIX}parser::tests::split_tenant, (test result: FAILED. 2 passed; 1 failed; 0 ignored; " \
           "finished in 2.29s)"
    assert summary.endswith("## Critical Context\n" + line)
    assert added == ["parser::tests::split_tenant", "(test result: FAILED. 2 passed; 1 failed; 0 ignored; "
                                                    "finished in 2.29s)"]


def test_a_failed_run_the_summary_quotes_is_not_added() -> None:
    summary = structured_summary("x") + "\n- parser::tests::split_tenant failed: test result: FAILED. 2 passed; " \
                                        "1 failed; 0 ignored; finished in 2.29s"
    assert add_failed_run(summary, *newest_failed_run([tool_result(CARGO, is_error=True)])) == (summary, [])


@needs_fixtures
def test_fixture_no_command_output_in_pis_sessions_reads_as_a_test_run() -> None:
    # pi's own sessions run git, grep, builds and scripts, but no test runner: nothing may read as one.
    outputs = [text_of(m.get("content")) for session in [*parity_sessions(), *sorted(FIXTURES.glob("*.v3.jsonl"))]
               for m in (json.loads(line).get("message") for line in session.read_text(encoding="utf-8").splitlines())
               if isinstance(m, dict) and m.get("role") == "toolResult"]
    assert len(outputs) > 1000
    assert [o[:80] for o in outputs if run_report(o)] == []
