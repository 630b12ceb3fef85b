"""The choice between asking a summary on the chat prefix and serialized, by expected dollars (issue 34
item 1): what the provider holds (this run's marks, or the recorded replies after a resume), how old it
is against the cache's lifetime, and how much of the history the serialized way cuts (file reads)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from builders import TIMESTAMP_MS, assistant, chain, sized, tool_call, tool_result, usage, user

from pi_compact.agent.compaction.prefix_cost import Choice, Sent, choose, held_prefixes, planned_cut, send_first
from pi_compact.agent.tools.recall import with_recall_hint
from pi_compact.compaction.plan import prepare_compaction
from pi_compact.compaction.reuse import reusable_prefix
from pi_compact.llm.params import CachePrices, cache_prices
from pi_compact.llm.protocol import ChatRequest, ModelInfo
from pi_compact.messages import Message
from pi_compact.session.context import project_path
from pi_compact.settings import CompactionSettings

SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)
SETTINGS = CompactionSettings(keep_recent_tokens=3_000)
NOW = TIMESTAMP_MS + 3_600_000
MINUTE = 60_000


def to_llm(messages: Sequence[Message]) -> list[Message]:
    return with_recall_hint(messages, False)


def _reply(text: str = "", **fields: Any) -> dict[str, Any]:
    return assistant(text, usage=usage(input=100, cache_read=5_000), **fields)


def text_heavy(at_ms: int) -> list[dict[str, Any]]:
    """Ten prompts, each answered with 2,000 tokens of prose (replies stamped ``at_ms``)."""
    turns = [[user(f"Write part {i}.", timestamp=at_ms), _reply(sized(2_000, "p"), timestamp=at_ms)] for i in range(10)]
    return chain(*(message for turn in turns for message in turn))


def read_heavy(at_ms: int) -> list[dict[str, Any]]:
    """One prompt, then twelve reads of 2,000-token files, then an answer."""
    items: list[dict[str, Any]] = [user("Read every file.", timestamp=at_ms)]
    for i in range(12):
        items += [_reply(tool_calls=[tool_call("read", {"path": f"f{i}.py"}, f"c{i}")], stop_reason="toolUse",
                         timestamp=at_ms),
                  tool_result(sized(2_000, "r"), tool_call_id=f"c{i}", tool_name="read", timestamp=at_ms)]
    return chain(*items, _reply("Read them all.", timestamp=at_ms))


def priced(branch: list[dict[str, Any]], sent_at: int | None) -> Choice:
    """The choice for compacting ``branch`` now; ``sent_at``: when this run's chat request (marking the
    planned cut) went out, None: no request in this run (a resume)."""
    plan = prepare_compaction(branch, SETTINGS)
    assert plan is not None
    context = project_path(branch).messages
    cut = planned_cut(branch, context, SETTINGS, to_llm)
    request = ChatRequest("You are the agent.", to_llm(context), cache_cut=cut)
    shape = reusable_prefix(request, context, plan, to_llm)
    assert shape is not None
    sent = [Sent(request, sent_at)] if sent_at is not None else []
    prices = cache_prices(SONNET, request)
    return choose(shape, plan, None, held_prefixes(shape, context, sent, SONNET, prices.marked, to_llm), prices, NOW)


def test_a_warm_text_heavy_history_is_asked_on_the_prefix_marking_the_planned_cut() -> None:
    branch = text_heavy(NOW - MINUTE)
    choice = priced(branch, NOW - MINUTE)
    assert choice.cheaper is not None
    assert choice.shape.held_in(choice.shape.history) == len(choice.shape.history)  # the cut the chat request marked
    assert choice.prefix < 0.3 * choice.serialized


def test_a_read_heavy_loop_is_asked_serialized_even_with_a_warm_cache() -> None:
    choice = priced(read_heavy(NOW - MINUTE), NOW - MINUTE)
    assert choice.cheaper is None and choice.held_tokens > 0
    assert choice.serialized < choice.prefix


def test_a_prefix_older_than_the_cache_lifetime_is_priced_as_written_again() -> None:
    choice = priced(text_heavy(NOW - 6 * MINUTE), NOW - 6 * MINUTE)  # five minutes: Anthropic's default
    assert choice.cheaper is None and choice.held_tokens == 0
    assert choice.prefix > choice.serialized  # the write premium on the whole prefix


def test_after_a_resume_the_recorded_replies_say_what_is_still_cached() -> None:
    warm = priced(text_heavy(NOW - MINUTE), None)
    cold = priced(text_heavy(NOW - 2 * 60 * MINUTE), None)
    assert warm.cheaper is not None and warm.shape.held and warm.held_tokens > 0
    assert cold.cheaper is None and cold.held_tokens == 0


# A prompt that took the context past the threshold (issue 43): compacted first, or sent first and compacted after.
ANTHROPIC = CachePrices(0.1, 1.25, True, 300_000)


def test_a_prompt_is_compacted_before_it_is_sent_when_that_costs_less() -> None:
    # Warm: the turn would read 107k and write the 11k prompt, then a summary read it all again; the summary now
    # reads 91k and writes 5k (in input tokens: ~15.9k against ~25.5k).
    assert not send_first(15_900, 118_000, 107_000, ANTHROPIC)
    # Cold: the turn would write all of it; a serialized summary of the history costs less.
    assert not send_first(105_600, 128_000, 0, ANTHROPIC)


def test_a_prompt_goes_out_first_when_nothing_would_be_summarized_or_the_summary_costs_more() -> None:
    assert send_first(None, 118_000, 107_000, ANTHROPIC)
    assert send_first(60_000, 118_000, 107_000, ANTHROPIC)  # a summary dearer than the turn and its compaction
