"""A test run is a runner's command with a runner's tally, and its outcome is kept by tally and failed names
(``compaction.kept.runner``, ``compaction.kept.outcomes``)."""

from __future__ import annotations

import json

import pytest
from builders import assistant, bash_execution, tool_call, tool_result, user
from fixtures_path import FIXTURES, needs_fixtures, parity_sessions

from pi_compact.compaction.kept.outcomes import tool_outcomes
from pi_compact.compaction.kept.runner import RunReport, is_test_command, run_report
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


@pytest.mark.parametrize("command", [
    "pytest -q", "python -m pytest tests/test_a.py", "uv run pytest", "cd api && cargo test --lib", "go test ./...",
    "npm test", "npm run test:unit", "npx vitest run", "make test", "./run_tests.sh", "timeout 60 pytest -x",
    "CI=1 yarn test", "dotnet test", "./gradlew test", "bundle exec rspec",
])
def test_a_runners_command_is_a_test_command(command: str) -> None:
    assert is_test_command(command)


@pytest.mark.parametrize("command", [
    "cat old-report.txt", "grep FAILED log.txt", "ls tests", "python app.py", "npm install", "make build",
    "git log -1", "cargo build",
])
def test_a_command_that_starts_no_runner_is_no_test_command(command: str) -> None:
    assert not is_test_command(command)


def _run(command: str, output: str, call_id: str, failed: bool) -> list[dict[str, object]]:
    return [assistant(tool_calls=[tool_call("bash", {"command": command}, call_id)]),
            tool_result(output, tool_call_id=call_id, is_error=failed)]


def test_each_run_is_kept_newest_first_with_its_tally_and_failed_names() -> None:
    messages = [*_run("cargo test", CARGO, "c1", True), assistant("fixed"),
                *_run("cargo test", "test result: ok. 3 passed; 0 failed; 0 ignored", "c2", False)]
    assert tool_outcomes(messages, [], 1000) == [
        'test run "cargo test": passed, "test result: ok. 3 passed; 0 failed; 0 ignored"',
        'test run "cargo test": FAILED, "test result: FAILED. 2 passed; 1 failed; 0 ignored; finished in 2.29s"; '
        'failed tests: "parser::tests::split_tenant"',
    ]


def test_a_failed_pytest_run_gives_its_exit_status_tally_names_and_error_line() -> None:
    output = ("E   KeyError: 'shard_weight'\nFAILED tests/test_shard.py::test_load - KeyError\n"
              "1 failed, 3 passed in 0.20s\n\n[Exit code: 1]")
    assert tool_outcomes(_run("python -m pytest -q", output, "c1", True), [], 1000) == [
        'test run "python -m pytest -q": FAILED (exit 1), "1 failed, 3 passed in 0.20s"; failed tests: '
        '"tests/test_shard.py::test_load"; error: "KeyError: \'shard_weight\'"']


def test_the_users_own_test_run_is_kept_too() -> None:
    assert tool_outcomes([bash_execution("pytest -q", "2 passed in 0.01s", exit_code=0)], [], 1000) == [
        'test run "pytest -q": passed, "2 passed in 0.01s"']


def test_a_runs_tally_in_a_users_message_or_printed_by_cat_is_not_a_test_run() -> None:
    messages = [user(CARGO), *_run("cat report.txt", CARGO, "c1", False)]
    assert tool_outcomes(messages, [], 1000) == []


@needs_fixtures
def test_fixture_no_command_output_in_pis_sessions_reads_as_a_test_run() -> None:
    # pi's own sessions run git, grep, builds and scripts, but no test runner: nothing may read as one.
    outputs = [text_of(m.get("content")) for session in [*parity_sessions(), *sorted(FIXTURES.glob("*.v3.jsonl"))]
               for m in (json.loads(line).get("message") for line in session.read_text(encoding="utf-8").splitlines())
               if isinstance(m, dict) and m.get("role") == "toolResult"]
    assert len(outputs) > 1000
    assert [o[:80] for o in outputs if run_report(o)] == []
