"""Issue 34 item 1 on the fake Anthropic server: near the threshold the chat requests mark the planned
compaction cut for the prompt cache (a fourth breakpoint, never a fifth), so the summary request asked on
that prefix reads what the chat request wrote, also right after a resume, when nothing else is cached."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_harness import Harness, make_harness
from cache_harness import SETTINGS_40K as SETTINGS
from cache_harness import SONNET_40K, asks_summary, talk
from fakes.anthropic_checks import count_cache_breakpoints
from fakes.anthropic_server import FakeAnthropicServer, RecordedRequest

from pi_compact.compaction.plan import prepare_compaction
from pi_compact.session.store import SessionStore


def _fill_below_the_threshold(server: FakeAnthropicServer, tmp_path: Path) -> Harness:
    """Prompts until one more answer would take the context past the threshold (no compaction yet)."""
    server.route = talk
    harness = make_harness(server, tmp_path, settings=SETTINGS, info=SONNET_40K)
    for part in range(40):
        usage = harness.session.context_usage()
        if usage.tokens + 2_200 > usage.threshold:
            break
        harness.session.prompt(f"Write part {part} of the essay.")
    assert not [e for e in harness.events if getattr(e, "type", "") == "compaction_start"]
    return harness


def _text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def _interior_marks(record: RecordedRequest) -> list[int]:
    """Indexes of the messages, before the last one, that carry a breakpoint."""
    return [i for i, message in enumerate(record.body["messages"][:-1]) if isinstance(message["content"], list)
            and any("cache_control" in part for part in message["content"])]


def test_near_the_threshold_a_fourth_breakpoint_and_never_a_fifth(tmp_path: Path) -> None:
    with FakeAnthropicServer().start() as server:
        harness = _fill_below_the_threshold(server, tmp_path)
        harness.session.prompt("Write the last part.")  # past the threshold: compacts after it
        records = list(server.records)
    assert [r.error for r in records] == [None] * len(records)
    counts = [count_cache_breakpoints(r.body) for r in records]
    assert max(counts) == 4 and counts[0] == 3  # far from the threshold: pi's three
    assert any(asks_summary(r.body) for r in records)


def test_the_fourth_breakpoint_sits_at_the_planned_cut(tmp_path: Path) -> None:
    with FakeAnthropicServer().start() as server:
        harness = _fill_below_the_threshold(server, tmp_path)
        last = server.records[-1]
        settings = harness.session.plan.settings.compaction
    # The plan the request was built with: the branch before its reply.
    branch = SessionStore.open(harness.path, str(harness.cwd), 1_700_000_000_000).branch()[:-1]
    plan = prepare_compaction(branch, settings)
    assert plan is not None and plan.messages_to_summarize
    first_not_summarized = (plan.turn_prefix_messages or plan.kept_messages)[0]
    [mark] = _interior_marks(last)
    assert _text(last.body["messages"][mark + 1]) == _text(dict(first_not_summarized))
    assert mark + 1 < len(last.body["messages"]) - 1  # the cut, not the end


def test_after_a_resume_the_summary_request_reads_what_the_resumed_turn_wrote(tmp_path: Path) -> None:
    with FakeAnthropicServer().start() as server:
        first = _fill_below_the_threshold(server, tmp_path)
        first.session.close()
    with FakeAnthropicServer().start() as server:  # a cold cache: what the last run wrote has expired
        server.route = talk
        resumed = make_harness(server, tmp_path, settings=SETTINGS, info=SONNET_40K,
                               store=SessionStore.open(first.path, str(first.cwd), 1_700_000_000_000))
        resumed.session.prompt("Write the last part.")
        records = list(server.records)
    [entry] = [e for e in resumed.entries() if e["type"] == "compaction"]
    assert entry["details"]["summaryRequest"]["shape"] == "prefix"
    summary = next(r for r in records if asks_summary(r.body))
    assert records[0].usage["cache_read_input_tokens"] == 0  # the resumed turn found nothing cached
    assert summary.usage["cache_read_input_tokens"] >= 0.9 * summary.prompt_tokens


def test_compact_right_after_a_resume_reads_what_the_last_run_left_in_the_cache(tmp_path: Path) -> None:
    with FakeAnthropicServer().start() as server:
        first = _fill_below_the_threshold(server, tmp_path)
        first.session.close()
        sent = len(server.records)
        resumed = make_harness(server, tmp_path, settings=SETTINGS, info=SONNET_40K,  # the cache is still warm
                               store=SessionStore.open(first.path, str(first.cwd), 1_700_000_000_000))
        assert resumed.session.compact() is not None  # ``/compact`` before any prompt
        asked = server.records[sent:]
    [entry] = [e for e in resumed.entries() if e["type"] == "compaction"]
    assert entry["details"]["summaryRequest"]["shape"] == "prefix"
    assert asked[0].usage["cache_read_input_tokens"] >= 0.8 * asked[0].prompt_tokens
