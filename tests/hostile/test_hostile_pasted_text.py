"""Hostile text in what a compaction reads: what the user pastes and what a command prints must not stall
the deterministic additions (each runs on every compaction, with no model call to wait on)."""

from __future__ import annotations

import time

from pi_compact.compaction.runs import newest_failed_run, run_report
from pi_compact.compaction.stated import stated_settings


def _user(text: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def test_a_pasted_dotted_run_is_read_in_linear_time() -> None:
    # 100 KB of "a." took 72 s: the dotted-name pattern restarted after every dot and ran to the end.
    messages = [_user("a." * 50_000), _user("Set the retry.budget to 40 for the ingest job.")]
    started = time.monotonic()
    found = stated_settings(messages)
    assert time.monotonic() - started < 5
    assert found == ["retry.budget = 40"]


def test_a_long_output_line_of_arrows_is_read_in_linear_time() -> None:
    # One 50 KB line of " > " took 4.9 s in the Gradle name pattern; bash output lines are not cut.
    output = "a > " * 12_500 + "\n> Task :test FAILED\n3 tests completed, 1 failed\n"
    started = time.monotonic()
    report = run_report(output)
    assert time.monotonic() - started < 5
    assert report is not None and report.failed and report.tally == "3 tests completed, 1 failed"


def test_a_long_line_still_leaves_the_runs_real_tally_found() -> None:
    result = {"role": "toolResult", "toolName": "bash", "toolCallId": "c1", "isError": True, "timestamp": 2,
              "content": [{"type": "text", "text": "x" * 3_000 + "\nFAILED tests/test_a.py::test_b - boom\n"
                                                    "1 failed, 4 passed in 0.21s\n"}]}
    failed, passed_after = newest_failed_run([result])
    assert failed is not None and failed.names == ("tests/test_a.py::test_b",) and not passed_after
