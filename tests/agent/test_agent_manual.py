"""Manual compaction (``/compact [instructions]``) through the real pipeline, and cancelling it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from agent_harness import (
    SUMMARY,
    UNDER_THRESHOLD,
    Harness,
    assert_compactions_paired,
    make_harness,
    outside_summary,
    padded,
    summary_in,
    summary_reply,
)
from scripted_server import Reply, ScriptedServer

from pi_compact.agent.events import CompactionEnd, event_to_json
from pi_compact.cancel import CancelToken
from pi_compact.compaction.kept import without_blocks
from pi_compact.compaction.kept.blocks import block_lines

FOCUS = "keep every decision about the database schema"



def _history(h: Harness) -> None:
    h.server.enqueue(*(Reply(text=padded(f"ANSWER-{i}"), prompt_tokens=UNDER_THRESHOLD) for i in range(3)))
    for i in range(3):
        h.session.prompt(padded(f"QUESTION-{i}"))


def test_manual_compaction_sends_the_instructions_to_the_summarizer(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    _history(h)
    scripted_server.enqueue(summary_reply())
    result = h.session.compact(FOCUS)
    # The model's summary, then the user's typed messages word for word, newest first (issue 41): here the
    # newest only, as the block may take at most a third of the ~400 tokens the compaction replaces.
    assert result is not None and without_blocks(result.summary) == SUMMARY
    assert block_lines(result.summary, "user-messages") == [f'"{padded("QUESTION-1")}"']
    summarizer = h.summarizer_requests()
    assert len(summarizer) == 1
    assert summarizer[0]["messages"][1]["content"][0]["text"].endswith(f"\n\nAdditional focus: {FOCUS}")
    assert [(s.reason, e.result is not None, e.will_retry) for s, e in assert_compactions_paired(h.events)] == [
        ("manual", True, False)
    ]


def test_manual_compaction_rebuilds_the_context_at_once(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    _history(h)
    scripted_server.enqueue(summary_reply(), Reply(text="NEXT-ANSWER"))
    h.session.compact(FOCUS)
    assert h.session.messages[0]["role"] == "compactionSummary"
    h.session.prompt("NEXT-QUESTION")
    request = h.agent_requests()[-1]
    assert summary_in(request)
    # The summarized question is no message any more (the summary quotes it in <user-messages>, issue 41);
    # the kept one is there.
    assert padded("QUESTION-0") not in outside_summary(request) and padded("QUESTION-2") in outside_summary(request)


def test_cancelling_manual_compaction_leaves_the_file_byte_identical(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    _history(h)
    before = h.path.read_bytes()
    scripted_server.enqueue(summary_reply(delay_s=10))
    token = CancelToken()
    timer = threading.Timer(0.3, token.cancel)
    timer.start()
    started = time.monotonic()
    result = h.session.compact(FOCUS, cancel=token)
    elapsed = time.monotonic() - started
    timer.join()
    assert result is None
    assert elapsed < 3  # the 10 s summarizer call was abandoned promptly
    assert h.path.read_bytes() == before
    pairs = assert_compactions_paired(h.events)
    assert len(pairs) == 1
    end = pairs[0][1]
    assert (end.reason, end.result, end.aborted, end.will_retry) == ("manual", None, True, False)
    assert len(h.summarizer_requests()) == 1  # the cancelled call was not retried or replaced by a fallback


def test_cancelled_compaction_keeps_the_live_context(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    _history(h)
    messages = list(h.session.messages)
    scripted_server.enqueue(summary_reply(delay_s=10))
    token = CancelToken()
    threading.Timer(0.3, token.cancel).start()
    h.session.compact(FOCUS, cancel=token)
    assert h.session.messages == messages


def test_manual_compaction_of_an_empty_session_reports_nothing_to_compact(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    assert h.session.compact() is None
    ends = [e for e in h.events if isinstance(e, CompactionEnd)]
    assert [(e.reason, e.result, e.aborted, e.error_message) for e in ends] == [
        ("manual", None, False, "Nothing to compact (no messages yet).")
    ]
    assert scripted_server.requests == []
    assert_compactions_paired(h.events)


def test_nothing_to_compact_is_a_typed_field_of_the_end_event_and_not_in_pis_json(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    h.session.compact()
    end = h.of_type("compaction_end")[0]
    assert end.skipped == "no_messages"
    assert event_to_json(end) == {"type": "compaction_end", "reason": "manual", "result": None, "aborted": False,
                                  "willRetry": False, "errorMessage": "Nothing to compact (no messages yet)."}
