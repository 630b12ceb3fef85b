"""Summarization through the real litellm HTTP path: what the scripted server receives, and what comes back.

Each test writes a session file, runs the one compaction pipeline (``Compactor``) in-process with a
``LiteLLMModel`` pointed at the scripted server, and asserts on the recorded request bodies and on the
result. Sessions come from ``builders``: with ``keepRecentTokens`` 400, ``coding_session`` summarizes
entries 0-9 and keeps [user, assistant]; ``split_turn_session`` also sends a turn-prefix request.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from builders import (
    Entry,
    assistant,
    chain,
    coding_session,
    compaction,
    compaction_settings,
    request_text,
    run_compaction,
    sized,
    split_turn_session,
    structured_summary,
    tool_call,
    tool_result,
    usage,
    user,
    write_session,
)
from scripted_server import Reply, ScriptedServer, server_error_reply

from pi_compact.agent.events import CompactionEnd, CompactionStart, SessionEvent
from pi_compact.cancel import CancelToken
from pi_compact.compaction.kept import without_blocks
from pi_compact.compaction.plan import CompactionPlan, prepare_compaction
from pi_compact.compaction.prompts import (
    INITIAL_PROMPT,
    SPLIT_TURN_SEPARATOR,
    STRICT_REMINDER,
    SYSTEM_PROMPT,
    TURN_PREFIX_PROMPT,
    UPDATE_PROMPT,
)
from pi_compact.compaction.serialize import FILE_READ_MAX_CHARS, serialize_message
from pi_compact.compaction.summarize import CompactionResult
from pi_compact.compaction.tokens import estimate_text_tokens
from pi_compact.messages import convert_to_llm
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings

SUMMARY = structured_summary("alpha")


# ---- helpers -------------------------------------------------------------------------------------


def run(path: Path, server: ScriptedServer, **options: Any) -> CompactionResult | None:
    result: CompactionResult | None = run_compaction(path, server.base_url, **options)
    return result


def plan_of(path: Path, settings: Settings | None = None) -> CompactionPlan:
    store = SessionStore.open(path, str(path.parent), 0)
    plan = prepare_compaction(store.branch(), (settings or compaction_settings()).compaction)
    assert plan is not None
    return plan


def system_text(request: Mapping[str, Any]) -> str:
    return request_text(request, "system")


def user_text(request: Mapping[str, Any]) -> str:
    return request_text(request, "user")


def between(text: str, opening: str, closing: str) -> str:
    start = text.index(opening) + len(opening)
    return text[start : text.index(closing, start)]


def conversation_of(request: Mapping[str, Any]) -> str:
    return between(user_text(request), "<conversation>\n", "\n</conversation>")


def is_prefix_request(request: Mapping[str, Any]) -> bool:
    return TURN_PREFIX_PROMPT in user_text(request)


def serialized(messages: Sequence[Mapping[str, Any]]) -> str:
    """The messages as the summarizer gets them (file reads cut shorter than in pi's text)."""
    return "\n\n".join(part for m in convert_to_llm(messages) for part in serialize_message(m, FILE_READ_MAX_CHARS))


def estimated_request_tokens(request: Mapping[str, Any]) -> int:
    """Our ``auto`` estimate of everything a request spends: its texts plus the output it asks for."""
    texts = estimate_text_tokens(system_text(request)) + estimate_text_tokens(user_text(request))
    return texts + int(request["max_tokens"])


@pytest.fixture
def session_path(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    write_session(path, coding_session())
    return path


@pytest.fixture
def split_path(tmp_path: Path) -> Path:
    path = tmp_path / "split.jsonl"
    write_session(path, split_turn_session())
    return path


# ---- what a history request carries --------------------------------------------------------------


def test_summary_request_uses_the_summarizer_system_prompt(
    scripted_server: ScriptedServer, session_path: Path
) -> None:
    scripted_server.enqueue(Reply(text=SUMMARY))
    run(session_path, scripted_server)
    assert len(scripted_server.requests) == 1
    assert system_text(scripted_server.requests[0]) == SYSTEM_PROMPT


def test_conversation_tags_hold_exactly_the_serialized_history(
    scripted_server: ScriptedServer, session_path: Path
) -> None:
    expected = serialized(plan_of(session_path).messages_to_summarize)
    scripted_server.enqueue(Reply(text=SUMMARY))
    run(session_path, scripted_server)
    sent = conversation_of(scripted_server.requests[0])
    assert sent == expected
    assert sent.startswith("[User]: Add a --verbose flag to src/cli.py.")
    assert sent.endswith("[Assistant]: The test is written.")


def test_summary_request_cuts_file_reads_to_200_chars_and_other_tool_results_to_2000(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "reads.jsonl"
    write_session(path, chain(
        user("Fix the flaky test."),
        assistant(tool_calls=[tool_call("read", {"path": "src/app.py"}, "call-r")]),
        tool_result("f" * 1800, tool_call_id="call-r", tool_name="read"),
        assistant(tool_calls=[tool_call("bash", {"command": "pytest"}, "call-b")]),
        tool_result("b" * 1800, tool_call_id="call-b", tool_name="bash"),
        user(sized(3000, "z")),
        assistant("Noted."),
        user("Now finish it. " + sized(300)),
        assistant("Done. " + sized(150), usage=usage(30000, 100)),
    ))
    scripted_server.enqueue(Reply(text=SUMMARY))
    run(path, scripted_server)
    sent = conversation_of(scripted_server.requests[0])
    assert "[Tool result]: " + "f" * 200 + "\n\n[... 1600 more characters truncated]" in sent
    assert "[Tool result]: " + "b" * 1800 + "\n\n" in sent


def test_first_compaction_uses_initial_prompt_without_previous_summary(
    scripted_server: ScriptedServer, session_path: Path
) -> None:
    scripted_server.enqueue(Reply(text=SUMMARY))
    run(session_path, scripted_server)
    text = user_text(scripted_server.requests[0])
    assert text.endswith(INITIAL_PROMPT)
    assert "<previous-summary>" not in text


def test_second_compaction_asks_about_the_new_messages_alone_and_merges_the_previous_summary(
    scripted_server: ScriptedServer, session_path: Path
) -> None:
    """Beyond pi (issue 41): pi sends the previous summary with its update prompt; the new messages are asked
    about on their own here, as a first summary, and code merges the two section by section."""
    scripted_server.enqueue(Reply(text=SUMMARY), Reply(text=structured_summary("beta")))
    first = run(session_path, scripted_server)
    assert first is not None
    store = SessionStore.open(session_path, str(session_path.parent), 0)  # the conversation goes on
    store.append_message(user("Also update the changelog. " + sized(600)), 1)
    store.append_message(assistant("Changelog updated. " + sized(200), usage=usage(6000, 100)), 2)
    second = run(session_path, scripted_server)
    assert second is not None
    text = user_text(scripted_server.requests[1])
    assert "<previous-summary>" not in text and "Ship the feature alpha" not in text and text.endswith(INITIAL_PROMPT)
    assert "Ship the feature alpha" in second.summary and "Ship the feature beta" in second.summary
    # Our blocks come once, after the merged prose (issue 41).
    assert second.summary.count("<user-messages>") == 1


def test_instructions_are_sent_as_additional_focus(scripted_server: ScriptedServer, session_path: Path) -> None:
    scripted_server.enqueue(Reply(text=SUMMARY))
    run(session_path, scripted_server, instructions="the database migration")
    assert user_text(scripted_server.requests[0]).endswith("\n\nAdditional focus: the database migration")


def test_history_request_asks_for_80_percent_of_reserve(
    scripted_server: ScriptedServer, session_path: Path
) -> None:
    scripted_server.enqueue(Reply(text=SUMMARY))
    # (A reserve under the gain's cap: this small history may not be summarized in more than 512 tokens.)
    run(session_path, scripted_server, settings=compaction_settings(reserve=601))
    assert scripted_server.requests[0]["max_tokens"] == math.floor(0.8 * 601) == 480


def test_history_max_tokens_is_capped_by_model_max_output(
    scripted_server: ScriptedServer, session_path: Path
) -> None:
    scripted_server.enqueue(Reply(text=SUMMARY))
    run(session_path, scripted_server, settings=compaction_settings(reserve=1000), max_output=300)
    assert scripted_server.requests[0]["max_tokens"] == 300


# ---- split turns ---------------------------------------------------------------------------------


def test_split_turn_sends_one_history_and_one_prefix_request(
    scripted_server: ScriptedServer, split_path: Path
) -> None:
    plan = plan_of(split_path)
    scripted_server.enqueue(Reply(text=SUMMARY, repeat=True))
    run(split_path, scripted_server)
    requests = scripted_server.requests
    assert sorted(is_prefix_request(r) for r in requests) == [False, True]
    prefix = next(r for r in requests if is_prefix_request(r))
    history = next(r for r in requests if not is_prefix_request(r))
    assert conversation_of(prefix) == serialized(plan.turn_prefix_messages)
    assert conversation_of(history) == serialized(plan.messages_to_summarize)
    assert system_text(prefix) == SYSTEM_PROMPT


def test_turn_prefix_request_asks_for_half_of_reserve(scripted_server: ScriptedServer, split_path: Path) -> None:
    scripted_server.enqueue(Reply(text=SUMMARY, repeat=True))
    run(split_path, scripted_server, settings=compaction_settings(reserve=601))
    by_kind = {is_prefix_request(r): r["max_tokens"] for r in scripted_server.requests}
    assert by_kind == {True: math.floor(0.5 * 601), False: math.floor(0.8 * 601)}


def test_split_turn_max_tokens_are_both_capped_by_model_max_output(
    scripted_server: ScriptedServer, split_path: Path
) -> None:
    scripted_server.enqueue(Reply(text=SUMMARY, repeat=True))
    run(split_path, scripted_server, settings=compaction_settings(reserve=1000), max_output=450)
    by_kind = {is_prefix_request(r): r["max_tokens"] for r in scripted_server.requests}
    assert by_kind == {True: 450, False: 450}


def test_split_turn_requests_are_in_flight_together(scripted_server: ScriptedServer, split_path: Path) -> None:
    delay = 2.0
    scripted_server.enqueue(Reply(text=SUMMARY, delay_s=delay, repeat=True))
    outcome: list[CompactionResult | None] = []
    worker = threading.Thread(target=lambda: outcome.append(run(split_path, scripted_server)))
    worker.start()
    first_seen = _wait_for(lambda: len(scripted_server.requests) >= 1, timeout=10)
    second_seen = _wait_for(lambda: len(scripted_server.requests) >= 2, timeout=10)
    worker.join(timeout=10)
    # Run one after the other, the second request could only arrive after the first reply (>= delay).
    assert second_seen - first_seen < delay * 0.75
    assert outcome and outcome[0] is not None and outcome[0].source == "model"


def test_split_turn_summary_is_history_then_separator_then_prefix(
    scripted_server: ScriptedServer, split_path: Path
) -> None:
    scripted_server.enqueue(Reply(text=SUMMARY, repeat=True))
    result = run(split_path, scripted_server)
    assert result is not None
    assert result.summary.startswith(SUMMARY + SPLIT_TURN_SEPARATOR + SUMMARY + "\n\n<user-messages>")


def test_instructions_reach_both_split_turn_requests(scripted_server: ScriptedServer, split_path: Path) -> None:
    scripted_server.enqueue(Reply(text=SUMMARY, repeat=True))
    run(split_path, scripted_server, instructions="focus on the parser")
    assert len(scripted_server.requests) == 2
    for request in scripted_server.requests:
        assert user_text(request).endswith("\n\nAdditional focus: focus on the parser"), is_prefix_request(request)


def test_instructions_reach_the_prefix_request_when_the_whole_history_is_one_split_turn(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "one-turn.jsonl"
    write_session(path, chain(*split_turn_session()[10:]))
    plan = plan_of(path)
    assert (plan.is_split_turn, plan.messages_to_summarize, plan.previous_summary) == (True, (), None)
    prefix_summary = "## Original Request\nx\n\n## Early Progress\n- y\n\n## Context for Suffix\n- z"
    scripted_server.enqueue(Reply(text=prefix_summary))
    result = run(path, scripted_server, instructions="focus on the parser")
    assert result is not None and result.source == "model"
    [request] = scripted_server.requests
    assert is_prefix_request(request)
    assert user_text(request).endswith(TURN_PREFIX_PROMPT + "\n\nAdditional focus: focus on the parser")


def test_split_turn_at_previous_kept_boundary_keeps_previous_summary(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    # [u1, a1, u2, a2, C1(keep u2), u3, a3]: the new cut lands on a2, so the turn u2.. is split right at
    # the previous kept boundary: nothing new to summarize as history, u2 is the turn prefix.
    previous = structured_summary("previous")
    path = tmp_path / "s.jsonl"
    write_session(path, chain(
        user("first question"),
        assistant("first answer"),
        user(sized(100)),  # a turn prefix big enough that its summary is smaller (no inflation)
        assistant(sized(400)),
        compaction(previous, "test-id-2", 4000),
        user(sized(300)),
        assistant(sized(300), usage=usage(4000, 1000)),
    ))
    plan = plan_of(path, compaction_settings(keep=900))
    assert (plan.is_split_turn, plan.messages_to_summarize, plan.turn_prefix_entry_ids) == (True, (), ("test-id-2",))
    prefix_summary = "## Original Request\nx\n\n## Early Progress\n- y\n\n## Context for Suffix\n- z"
    scripted_server.enqueue(Reply(text=prefix_summary))
    result = run(path, scripted_server, settings=compaction_settings(keep=900))
    assert result is not None
    assert len(scripted_server.requests) == 1 and is_prefix_request(scripted_server.requests[0])
    assert result.summary.startswith(previous + SPLIT_TURN_SEPARATOR + "## Original Request")
    assert "No prior history." not in result.summary


def test_split_turn_keeping_previous_summary_has_one_file_list_block(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    # The previous summary already ends in its file lists; keeping it verbatim and appending the new
    # lists gave two <read-files> blocks. The new lists include the old ones (seeded from details).
    previous = structured_summary("previous")
    old_lists = "\n\n<read-files>\ndocs/a.md\n</read-files>\n\n<modified-files>\nsrc/old.py\n</modified-files>"
    path = tmp_path / "s.jsonl"
    write_session(path, chain(
        user("first question"),
        assistant("first answer"),
        user(sized(100)),  # a turn prefix big enough that its summary is smaller (no inflation)
        assistant(sized(400)),
        compaction(previous + old_lists, "test-id-2", 4000,
                   details={"readFiles": ["docs/a.md"], "modifiedFiles": ["src/old.py"]}),
        user(sized(300)),
        assistant(sized(300), usage=usage(4000, 1000)),
    ))
    prefix_summary = "## Original Request\nx\n\n## Early Progress\n- y\n\n## Context for Suffix\n- z"
    scripted_server.enqueue(Reply(text=prefix_summary))
    result = run(path, scripted_server, settings=compaction_settings(keep=900))
    assert result is not None
    assert without_blocks(result.summary) == previous + SPLIT_TURN_SEPARATOR + prefix_summary
    assert result.summary.endswith(old_lists) and result.summary.count("<read-files>") == 1


# ---- the fit guarantee ---------------------------------------------------------------------------

FIT_WINDOW = 8000
FIT_RESERVE = 1000
HUGE_USER_TOKENS = 10000  # bigger than the whole window on its own
CJK_TEXT = "日志记录显示数据库连接超时。" * 220  # ~3000 tokens by the CJK-aware estimate, ~770 by chars/4


def _oversized_session() -> list[Entry]:
    """A session whose history is about three times the summarizer's 8000-token window."""
    items: list[Mapping[str, Any]] = [
        user("Migrate the logging backend."),
        assistant(sized(2500, "a")),
        user(sized(HUGE_USER_TOKENS, "h")),
        assistant("Read it."),
        user("Here is the production log:\n" + CJK_TEXT),
        assistant(sized(1500, "b")),
    ]
    for index in range(10):
        call_id = f"call-{index}"
        items.append(assistant(tool_calls=[tool_call("bash", {"command": f"cat build{index}.log"}, call_id)]))
        items.append(tool_result(sized(2000, "r"), tool_call_id=call_id, tool_name="bash"))
    items += [
        user(sized(3000, "z")),
        assistant("Noted."),
        user("Now finish the migration. " + sized(300)),
        assistant("Done. " + sized(150), usage=usage(30000, 100)),
    ]
    return chain(*items)


@pytest.fixture
def oversized(scripted_server: ScriptedServer, tmp_path: Path) -> tuple[str, CompactionResult]:
    """Compacts the oversized session; gives its serialized history and the result."""
    path = tmp_path / "big.jsonl"
    write_session(path, _oversized_session())
    history = serialized(plan_of(path).messages_to_summarize)
    assert estimate_text_tokens(history) > 3 * FIT_WINDOW  # the premise of the tests below
    scripted_server.enqueue(*(Reply(text=structured_summary(f"chunk-{k}")) for k in range(30)))
    result = run(path, scripted_server, settings=compaction_settings(reserve=FIT_RESERVE), window=FIT_WINDOW)
    assert result is not None
    return history, result


def test_history_three_times_the_window_compacts_with_every_request_inside_the_window(
    scripted_server: ScriptedServer, oversized: tuple[str, CompactionResult]
) -> None:
    _, result = oversized
    assert result.source == "model"
    sizes = [estimated_request_tokens(r) for r in scripted_server.requests]
    assert len(sizes) >= 3
    assert max(sizes) <= FIT_WINDOW, sizes


def test_oversized_history_is_chunked_and_each_summary_feeds_the_next_chunk(
    scripted_server: ScriptedServer, oversized: tuple[str, CompactionResult]
) -> None:
    _, result = oversized
    requests = scripted_server.requests
    assert len(requests) > 1
    assert "<previous-summary>" not in user_text(requests[0])
    for k in range(1, len(requests)):
        text = user_text(requests[k])
        assert between(text, "<previous-summary>\n", "\n</previous-summary>") == structured_summary(f"chunk-{k - 1}")
        assert text.endswith(UPDATE_PROMPT)
    assert result.summary.startswith(structured_summary(f"chunk-{len(requests) - 1}"))


def test_oversized_history_chunks_together_cover_the_history_once(
    scripted_server: ScriptedServer, oversized: tuple[str, CompactionResult]
) -> None:
    history, _ = oversized
    chunks = [conversation_of(r) for r in scripted_server.requests]
    # Chunks end at block boundaries (dropping that "\n\n") or inside an oversized block (dropping nothing).
    assert "".join(chunks).replace("\n\n", "") == history.replace("\n\n", "")
    assert any(CJK_TEXT[:50] in chunk for chunk in chunks)


def test_oversized_emoji_message_is_split_between_characters(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    # 30001 emoji are 60002 UTF-16 units: splitting by JavaScript units could halve a surrogate pair,
    # and a lone surrogate cannot be encoded into the request at all.
    path = tmp_path / "emoji.jsonl"
    write_session(path, chain(
        user("start"), assistant("ok"), user("🙂" * 30001), assistant("ok"),
        user("Now go. " + sized(300)), assistant("Done " + sized(150), usage=usage(30000, 100)),
    ))
    history = serialized(plan_of(path).messages_to_summarize)
    scripted_server.enqueue(Reply(text=SUMMARY, repeat=True))
    result = run(path, scripted_server, settings=compaction_settings(reserve=FIT_RESERVE), window=FIT_WINDOW)
    assert result is not None and result.source == "model", result and result.error
    chunks = [conversation_of(r) for r in scripted_server.requests]
    assert len(chunks) > 1
    assert "".join(chunks).replace("\n\n", "") == history.replace("\n\n", "")
    assert max(estimated_request_tokens(r) for r in scripted_server.requests) <= FIT_WINDOW


def test_oversized_turn_prefix_is_cut_to_its_start_and_end_to_fit_the_window(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "long-turn.jsonl"
    write_session(path, chain(
        *coding_session()[:10],
        user("Run the tests and fix failures."),  # test-id-10: the split turn starts here
        assistant("Plan: " + sized(12000, "p") + " END-OF-PLAN"),  # alone larger than the window
        assistant("Fixed. " + sized(450), usage=usage(20000, 100)),  # test-id-12: the cut
    ))
    assert plan_of(path).turn_prefix_entry_ids == ("test-id-10", "test-id-11")
    scripted_server.enqueue(Reply(text=SUMMARY, repeat=True))
    result = run(path, scripted_server, settings=compaction_settings(reserve=FIT_RESERVE), window=FIT_WINDOW)
    assert result is not None and result.source == "model"
    (prefix,) = [r for r in scripted_server.requests if is_prefix_request(r)]
    sent = conversation_of(prefix)
    assert sent.startswith("[User]: Run the tests and fix failures.\n\n[Assistant]: Plan: ppp")
    assert "\n\n[... middle of the turn omitted to fit ...]\n\n" in sent
    assert sent.endswith("ppp END-OF-PLAN")
    assert max(estimated_request_tokens(r) for r in scripted_server.requests) <= FIT_WINDOW


# ---- validation of the model's summary -----------------------------------------------------------


def test_reply_without_headings_is_asked_again_with_the_strict_reminder(
    scripted_server: ScriptedServer, session_path: Path
) -> None:
    scripted_server.enqueue(Reply(text="Sure! The user wanted a flag."), Reply(text=SUMMARY))
    run(session_path, scripted_server)
    first, second = scripted_server.requests
    assert STRICT_REMINDER not in user_text(first)
    assert user_text(second) == user_text(first) + "\n\n" + STRICT_REMINDER


def test_valid_reply_to_the_strict_reminder_becomes_the_summary(
    scripted_server: ScriptedServer, session_path: Path
) -> None:
    scripted_server.enqueue(Reply(text="## Goal\nonly one heading"), Reply(text=SUMMARY))
    result = run(session_path, scripted_server)
    assert result is not None
    assert result.source == "model"
    assert "fallback" not in result.details
    assert result.summary.startswith(SUMMARY + "\n\n<user-messages>")


# ---- cancel and events ---------------------------------------------------------------------------


def test_cancel_mid_summary_returns_promptly_and_leaves_file_identical(
    scripted_server: ScriptedServer, session_path: Path
) -> None:
    before = session_path.read_bytes()
    scripted_server.enqueue(Reply(text=SUMMARY, delay_s=5))
    token = CancelToken()
    events: list[SessionEvent] = []
    outcome: list[CompactionResult | None] = []
    worker = threading.Thread(
        target=lambda: outcome.append(run(session_path, scripted_server, cancel=token, events=events))
    )
    worker.start()
    _wait_for(lambda: len(scripted_server.requests) == 1, timeout=10)
    time.sleep(0.3)
    cancelled_at = time.monotonic()
    token.cancel()
    worker.join(timeout=5)
    assert time.monotonic() - cancelled_at < 2
    assert outcome == [None]
    ends = [e for e in events if isinstance(e, CompactionEnd)]
    assert len(ends) == 1 and ends[0].aborted is True and ends[0].result is None
    assert session_path.read_bytes() == before


def _cancelled() -> CancelToken:
    token = CancelToken()
    token.cancel()
    return token


@pytest.mark.parametrize(
    ("name", "entries", "reply", "cancel"),
    [
        ("summarized", coding_session(), Reply(text=SUMMARY), None),
        ("nothing to compact", coding_session()[:2], Reply(text=SUMMARY), None),
        ("fallback", coding_session(), server_error_reply(500, repeat=True), None),
        ("cancelled", coding_session(), Reply(text=SUMMARY), "cancel"),
    ],
)
def test_every_compaction_start_has_exactly_one_end(
    scripted_server: ScriptedServer, tmp_path: Path, name: str, entries: list[Entry], reply: Reply,
    cancel: str | None,
) -> None:
    path = tmp_path / "s.jsonl"
    write_session(path, entries)
    scripted_server.enqueue(reply)
    events: list[SessionEvent] = []
    run(path, scripted_server, events=events, cancel=_cancelled() if cancel else None)
    kinds = [type(e).__name__ for e in events if isinstance(e, (CompactionStart, CompactionEnd))]
    assert kinds == ["CompactionStart", "CompactionEnd"], name


def test_end_event_result_carries_pi_fields(scripted_server: ScriptedServer, session_path: Path) -> None:
    scripted_server.enqueue(Reply(text=SUMMARY))
    events: list[SessionEvent] = []
    result = run(session_path, scripted_server, events=events)
    assert result is not None
    end = events[-1]
    assert isinstance(end, CompactionEnd) and end.result is not None
    assert set(end.result) == {"summary", "firstKeptEntryId", "tokensBefore", "estimatedTokensAfter", "details"}
    assert end.result["summary"] == result.summary
    assert end.result["firstKeptEntryId"] == "test-id-10"
    assert end.result["tokensBefore"] == 5100
    assert 0 < end.result["estimatedTokensAfter"] < 5100
    details = end.result["details"]
    assert (details["readFiles"], details["modifiedFiles"]) == (["README.md"], ["src/cli.py", "tests/test_cli.py"])
    assert (details["source"], details["summarizedEntries"], details["keptMessages"]) == ("model", 10, 2)


# ---- small local helpers -------------------------------------------------------------------------


def _wait_for(condition: Callable[[], bool], timeout: float) -> float:
    """Poll until ``condition`` holds; returns the monotonic time it was first seen true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return time.monotonic()
        time.sleep(0.01)
    raise AssertionError("condition not reached in time")
