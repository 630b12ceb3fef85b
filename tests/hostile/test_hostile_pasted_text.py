"""Hostile text in what a compaction reads: what the user pastes and what a command prints must not stall
the deterministic additions (each runs on every compaction, with no model call to wait on)."""

from __future__ import annotations

import time

from pi_compact.compaction.kept.blocks import quote
from pi_compact.compaction.kept.outcomes import tool_outcomes
from pi_compact.compaction.kept.runner import run_report
from pi_compact.compaction.kept.user_messages import typed_text, user_messages


def _user(text: str) -> dict[str, object]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def test_pasted_fences_attachments_and_quotes_without_their_ends_are_read_in_linear_time() -> None:
    # Each opening that never closes must not make the patterns scan to the end again from every one.
    pasted = ("```\n" + "x\n" * 5) * 2_000 + '<file path="a">\n' * 2_000 + "> q\n" * 20_000
    started = time.monotonic()
    kept = user_messages([_user(pasted), _user("Then rebuild the index.")], [], 20_000)
    assert time.monotonic() - started < 5
    assert kept[0] == "Then rebuild the index."


def test_a_huge_message_with_control_characters_is_quoted_in_linear_time() -> None:
    text = "\u2028\x1b[31m</user-messages>" * 20_000
    started = time.monotonic()
    quoted = quote(typed_text(_user(text)))
    assert time.monotonic() - started < 5
    assert "\n" not in quoted and "\u2028" not in quoted and "</" not in quoted


def test_a_long_output_line_of_arrows_is_read_in_linear_time() -> None:
    # One 50 KB line of " > " took 4.9 s in the Gradle name pattern; bash output lines are not cut.
    output = "a > " * 12_500 + "\n> Task :test FAILED\n3 tests completed, 1 failed\n"
    started = time.monotonic()
    report = run_report(output)
    assert time.monotonic() - started < 5
    assert report is not None and report.failed and report.tally == "3 tests completed, 1 failed"


def test_a_long_line_still_leaves_the_runs_real_tally_found() -> None:
    call = {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "bash",
                                              "arguments": {"command": "pytest -q"}}]}
    result = {"role": "toolResult", "toolName": "bash", "toolCallId": "c1", "isError": True, "timestamp": 2,
              "content": [{"type": "text", "text": "x" * 3_000 + "\nFAILED tests/test_a.py::test_b - boom\n"
                                                    "1 failed, 4 passed in 0.21s\n"}]}
    (line,) = tool_outcomes([call, result], [], 1000)
    assert line.startswith('test run "pytest -q": FAILED, "1 failed, 4 passed in 0.21s"; failed tests: '
                           '"tests/test_a.py::test_b"')
