"""Compaction never strands a session: the model-free summary, and when the pipeline falls back to it.

The first half checks ``fallback_summary`` itself (pure); the second drives the pipeline against the
scripted server: a provider failing for good, replies that are not summaries, a summarizer that keeps
overflowing. A user cancel is not a failure: nothing is written then.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from builders import (
    assistant,
    coding_session,
    run_compaction,
    split_turn_session,
    structured_summary,
    tool_call,
    tool_result,
    user,
    write_session,
)
from scripted_server import Reply, ScriptedServer, openai_context_overflow_reply, server_error_reply

from pi_compact.agent.events import CompactionEnd, SessionEvent
from pi_compact.cancel import CancelToken
from pi_compact.compaction.fallback import fallback_summary
from pi_compact.compaction.kept.blocks import block_lines
from pi_compact.compaction.prompts import HISTORY_HEADINGS, PROGRESS_SUBHEADINGS, STRICT_REMINDER
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.messages import Message

MESSAGES: list[Message] = [
    user("Port the parser to Rust. Keep the public API unchanged. It should be fast."),
    assistant(tool_calls=[tool_call("read", {"path": "src/parser.py"}, "c1")]),
    tool_result("def parse(): ...", tool_call_id="c1", tool_name="read"),
    assistant(tool_calls=[tool_call("bash", {"command": "cargo build"}, "c2")]),
    tool_result("error[E0425]: cannot find value `x`", tool_call_id="c2", is_error=True),
    assistant(tool_calls=[tool_call("bash", {"command": "cargo test"}, "c3")]),
    tool_result("linker failed", tool_call_id="c3", is_error=True),
    assistant(tool_calls=[tool_call("bash", {"command": "cargo build"}, "c4")]),
    tool_result("Finished", tool_call_id="c4"),
    assistant(tool_calls=[tool_call("write", {"path": "src/lib.rs"}, "c5")]),
    user("Now benchmark it against the Python version."),
]


def build(previous: str | None = None, error: str = "503 upstream down") -> str:
    return fallback_summary(MESSAGES, previous_summary=previous, error=error)


def section(summary: str, heading: str) -> str:
    """The body of one ``## `` section."""
    start = summary.index(f"{heading}\n") + len(heading) + 1
    end = summary.find("\n## ", start)
    return summary[start : end if end >= 0 else len(summary)].strip()


# ---- fallback_summary (pure) ---------------------------------------------------------------------


def test_fallback_summary_has_the_six_headings_in_order() -> None:
    lines = build().splitlines()
    assert [line for line in lines if line.startswith("## ")] == list(HISTORY_HEADINGS)
    assert [line for line in lines if line.startswith("### ")] == list(PROGRESS_SUBHEADINGS)


def test_a_heading_added_to_the_prompts_is_written_by_the_fallback_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_compact.compaction import fallback

    headings = (*HISTORY_HEADINGS[:-1], "## Open Questions", HISTORY_HEADINGS[-1])
    monkeypatch.setattr(fallback, "HISTORY_HEADINGS", headings)
    summary = build()
    assert [line for line in summary.splitlines() if line.startswith("## ")] == list(headings)
    assert section(summary, "## Open Questions").startswith("- (not extracted")


def test_fallback_goal_is_the_first_user_message() -> None:
    assert section(build(), "## Goal") == (
        "Port the parser to Rust. Keep the public API unchanged. It should be fast."
    )


def test_fallback_constraints_point_to_the_users_words_kept_whole() -> None:
    # Before issue 41 the sentences with "must", "keep", "should"... were picked out here; the user's messages
    # are now kept whole in <user-messages> (which the caller appends), so they are not picked or copied.
    assert section(build(), "## Constraints & Preferences") == (
        "- (the user's own words, rules included, are kept in <user-messages> below)")


def test_fallback_progress_comes_from_tool_calls_and_results() -> None:
    progress = section(build(), "## Progress")
    done, rest = progress.split("### In Progress")
    in_progress, blocked = rest.split("### Blocked")
    assert done.split("\n", 1)[1].strip() == "- [x] read src/parser.py\n- [x] bash cargo build"
    assert in_progress.strip() == "- [ ] write src/lib.rs"
    # "cargo build" failed once but a later identical call succeeded: only "cargo test" is still blocked.
    # Its error is not in a section: it is quoted in <tool-outcomes>, which the caller appends (issue 41).
    assert blocked.strip() == "- bash cargo test: failed"


def test_fallback_next_step_points_to_the_last_user_request() -> None:
    # The request itself is the first item of <user-messages>: pointed to, not copied a second time.
    assert section(build(), "## Next Steps") == (
        "1. Carry on with the user's newest request (the first of <user-messages> below).")


def test_fallback_critical_context_names_the_failure_and_leaves_the_files_to_their_lists() -> None:
    # The paths were listed here too before issue 41; a path is now written only in the file lists, quoted
    # when it is not clean text, so no file name can start a line of a section.
    assert section(build(), "## Critical Context") == (
        "- This summary was built without a model because summarization failed: 503 upstream down"
    )


def test_fallback_goal_and_next_step_leave_out_an_attached_file() -> None:
    attached = user('Port @notes.md to Rust.\n\n<file path="notes.md">\nNever ship on Fridays.\n</file>')
    summary = fallback_summary([attached], previous_summary=None, error="down")
    assert section(summary, "## Goal") == "Port @notes.md to Rust."
    assert "Fridays" not in summary


def test_fallback_keeps_the_previous_summary_whole() -> None:
    previous = structured_summary("earlier work")
    assert build(previous).endswith("\n\n" + previous)


def test_fallback_drops_the_file_lists_of_the_previous_summary() -> None:
    # The caller appends the current lists (which include the old ones); a second block would repeat them.
    previous = structured_summary("earlier work")
    old_lists = "\n\n<read-files>\ndocs/a.md\n</read-files>\n\n<modified-files>\nsrc/old.py\n</modified-files>"
    summary = build(previous + old_lists)
    assert summary.endswith("\n\n" + previous)
    assert "<read-files>" not in summary and "<modified-files>" not in summary


def test_fallback_is_deterministic() -> None:
    assert build() == build()


# ---- the pipeline falls back ---------------------------------------------------------------------


@pytest.fixture
def session(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "session.jsonl"
    return path, write_session(path, coding_session())


def compact(path: Path, server: ScriptedServer, *replies: Reply, **options: Any) -> CompactionResult:
    server.enqueue(*replies)
    result: CompactionResult | None = run_compaction(path, server.base_url, **options)
    assert result is not None
    return result


def assert_is_fallback(result: CompactionResult, error_part: str) -> None:
    assert result.source == "fallback"
    assert result.details["fallback"] is True
    assert error_part in result.details["error"]
    headings = [line for line in result.summary.splitlines() if line.startswith("## ")]
    assert headings == list(HISTORY_HEADINGS)
    assert result.summary.endswith(
        "\n\n<read-files>\nREADME.md\n</read-files>\n\n<modified-files>\nsrc/cli.py\ntests/test_cli.py\n</modified-files>"
    )


def test_server_failing_forever_gives_a_fallback_summary_after_retries(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, _ = session
    result = compact(path, scripted_server, server_error_reply(500, repeat=True))
    assert len(scripted_server.requests) == 2  # the try and the one retry allowed by the test settings
    assert_is_fallback(result, "500")
    assert section(result.summary, "## Goal") == "Add a --verbose flag to src/cli.py. Never change the public API."


def test_fallback_names_the_provider_error_once_without_a_repeated_prefix(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, _ = session
    result = compact(path, scripted_server, server_error_reply(500, repeat=True))
    error = "500 The server had an error while processing your request (500)"
    assert result.details["error"] == result.error == error
    assert f"- This summary was built without a model because summarization failed: {error}" in result.summary
    assert result.summary.lower().count("summarization failed") == 1


def test_fallback_is_written_to_the_session_with_its_marker(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, before = session
    result = compact(path, scripted_server, server_error_reply(503, repeat=True))
    entry = json.loads(path.read_bytes()[len(before) :])
    assert (entry["type"], entry["summary"]) == ("compaction", result.summary)
    assert (entry["details"]["fallback"], entry["details"]["source"]) == (True, "fallback")
    assert entry["details"]["error"] == result.error and "503" in entry["details"]["error"]


def test_two_replies_without_the_headings_fall_back(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, _ = session
    result = compact(path, scripted_server, Reply(text="Here is a summary: stuff happened."),
                     Reply(text="## Goal\nstill not the format"))
    first, second = scripted_server.requests
    assert STRICT_REMINDER in second["messages"][1]["content"][0]["text"]
    assert_is_fallback(result, "lacked the required sections")


def test_an_empty_reply_is_not_accepted_as_a_summary(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, _ = session
    result = compact(path, scripted_server, Reply(text=""), Reply(text=structured_summary("second")))
    assert len(scripted_server.requests) == 2
    assert result.source == "model"
    assert result.summary.startswith(structured_summary("second"))


def test_summarizer_overflowing_on_every_chunk_size_falls_back(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, _ = session
    overflow = openai_context_overflow_reply()
    result = compact(path, scripted_server, *([overflow] * 3))
    assert len(scripted_server.requests) == 3  # whole, halved and quartered chunk budgets; never retried
    assert_is_fallback(result, "kept overflowing")


def test_split_turn_fallback_covers_the_turn_prefix(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    path = tmp_path / "split.jsonl"
    write_session(path, split_turn_session())
    result = compact(path, scripted_server, server_error_reply(500, repeat=True))
    assert result.source == "fallback"
    done = section(result.summary, "## Progress").split("### In Progress")[0]
    assert "- [x] bash pytest -q" in done  # from the turn prefix, not the history
    # The turn's request is the newest of the user's messages kept word for word (issue 41).
    assert (block_lines(result.summary, "user-messages") or [""])[0].startswith('"Run the tests and fix failures.')


def test_cancel_while_the_provider_fails_writes_nothing_instead_of_a_fallback(
    scripted_server: ScriptedServer, session: tuple[Path, bytes]
) -> None:
    path, before = session
    failing_slowly = Reply(status=500, error_body={"error": {"message": "down"}}, delay_s=5, repeat=True)
    scripted_server.enqueue(failing_slowly)
    token = CancelToken()
    events: list[SessionEvent] = []
    worker = threading.Thread(
        target=run_compaction, args=(path, scripted_server.base_url), kwargs={"cancel": token, "events": events}
    )
    worker.start()
    deadline = time.monotonic() + 10
    while not scripted_server.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    token.cancel()
    worker.join(timeout=5)
    assert not worker.is_alive()
    end = events[-1]
    assert isinstance(end, CompactionEnd) and end.aborted is True and end.result is None
    assert path.read_bytes() == before
