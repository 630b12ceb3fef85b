"""The fake Anthropic server's simulated prompt caching (reads, writes, lookback, minimum size, TTLs) and the
Sonnet 4.5 cost helper."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_cache import SONNET_4_5, cost
from fakes.anthropic_server import FakeAnthropicServer, usage_of
from fakes.cost_session import GrowingSession, request_costs, summary
from fakes.http_client import ANTHROPIC_HEADERS, post

SYSTEM_TEXT = "s" * 8000  # 2,000 tokens at chars/4


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(clock: Clock) -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer(clock=clock).start()  # the real minimum: 1,024 tokens
    try:
        yield fake
    finally:
        fake.stop()


def mark(part: dict[str, Any], ttl: str | None = None) -> dict[str, Any]:
    control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return {**part, "cache_control": control}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def conversation(turns: int, marked_last: bool = True) -> list[dict[str, Any]]:
    """Alternating user/assistant messages of 400 chars (100 tokens) each, the last user part marked."""
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": [text(f"{i:03d}" + "m" * 397)]} for i in range(turns)
    ]
    if marked_last:
        messages[-1]["content"][0] = mark(messages[-1]["content"][0])
    return messages


def usage(server: FakeAnthropicServer, system: list[dict[str, Any]], messages: list[dict[str, Any]],
          budget: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 3000, "system": system, "messages": messages}
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    response = post(server.base_url + "/v1/messages", body, ANTHROPIC_HEADERS)
    assert response.status == 200, response.text
    return dict(usage_of(server.records[-1]))


def prompt_total(u: dict[str, Any]) -> int:
    return int(u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"])


def test_first_request_writes_the_marked_prefix_and_the_second_reads_it(server: FakeAnthropicServer) -> None:
    system = [mark(text(SYSTEM_TEXT))]
    messages = [{"role": "user", "content": "q" * 400}]
    first = usage(server, system, messages)
    assert (first["cache_creation_input_tokens"], first["cache_read_input_tokens"], first["input_tokens"]) == (
        2000,
        0,
        100,
    )
    second = usage(server, system, messages)
    assert (second["cache_creation_input_tokens"], second["cache_read_input_tokens"], second["input_tokens"]) == (
        0,
        2000,
        100,
    )


def test_input_tokens_exclude_cache_reads_and_writes(server: FakeAnthropicServer) -> None:
    system = [mark(text(SYSTEM_TEXT))]
    for _ in range(2):
        u = usage(server, system, conversation(5))
        assert prompt_total(u) == server.records[-1].prompt_tokens == 2500


def test_a_changed_prefix_misses_the_cache(server: FakeAnthropicServer) -> None:
    usage(server, [mark(text(SYSTEM_TEXT))], conversation(1))
    changed = usage(server, [mark(text("x" + SYSTEM_TEXT[1:]))], conversation(1))
    assert changed["cache_read_input_tokens"] == 0 and changed["cache_creation_input_tokens"] == 2100


def test_a_changed_thinking_budget_reads_only_the_system_prompt(server: FakeAnthropicServer) -> None:
    system = [mark(text(SYSTEM_TEXT))]
    usage(server, system, conversation(30), budget=2048)
    same = usage(server, system, conversation(30), budget=2048)
    changed = usage(server, system, conversation(30), budget=1536)
    assert same["cache_read_input_tokens"] == 5000  # the system prompt and the 30 messages
    assert (changed["cache_read_input_tokens"], changed["cache_creation_input_tokens"]) == (2000, 3000)


def test_a_moving_breakpoint_reads_the_previous_one_within_20_blocks(server: FakeAnthropicServer) -> None:
    system = [mark(text(SYSTEM_TEXT))]
    usage(server, system, conversation(5))  # writes system (2,000) and system + 5 messages (2,500)
    grown = usage(server, system, conversation(7))
    assert grown["cache_read_input_tokens"] == 2500 and grown["cache_creation_input_tokens"] == 200
    assert grown["input_tokens"] == 0


def test_lookback_stops_after_20_blocks(server: FakeAnthropicServer) -> None:
    system = [mark(text(SYSTEM_TEXT))]
    usage(server, system, conversation(5))
    far = usage(server, system, conversation(27))  # the old breakpoint is 22 blocks back
    assert far["cache_read_input_tokens"] == 2000  # only the system prompt's own breakpoint hits
    assert far["cache_creation_input_tokens"] == 2700


def test_a_prefix_below_1024_tokens_is_not_cached(server: FakeAnthropicServer) -> None:
    system = [mark(text("s" * 4000))]  # 1,000 tokens
    for _ in range(2):
        u = usage(server, system, [{"role": "user", "content": "hi"}])
        assert u["cache_creation_input_tokens"] == 0 and u["cache_read_input_tokens"] == 0


def test_entries_expire_five_minutes_after_their_last_use(server: FakeAnthropicServer, clock: Clock) -> None:
    system = [mark(text(SYSTEM_TEXT))]
    messages = [{"role": "user", "content": "hi"}]
    usage(server, system, messages)
    clock.now += 299
    assert usage(server, system, messages)["cache_read_input_tokens"] == 2000  # a read refreshes the entry
    clock.now += 299
    assert usage(server, system, messages)["cache_read_input_tokens"] == 2000
    clock.now += 301
    assert usage(server, system, messages)["cache_creation_input_tokens"] == 2000


def test_one_hour_ttl_is_reported_apart_and_lives_an_hour(server: FakeAnthropicServer, clock: Clock) -> None:
    system = [mark(text(SYSTEM_TEXT), ttl="1h")]
    first = usage(server, system, conversation(1))
    assert first["cache_creation"] == {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 2000}
    clock.now += 3000
    assert usage(server, system, conversation(1))["cache_read_input_tokens"] >= 2000


def test_cost_uses_sonnet_4_5_prices() -> None:
    assert SONNET_4_5.input == 3.0 and SONNET_4_5.output == 15.0
    uncached = {"input_tokens": 150_000, "output_tokens": 500}
    assert cost(uncached) == pytest.approx(0.45 + 0.0075)
    warm = {
        "input_tokens": 10,
        "cache_read_input_tokens": 148_000,
        "cache_creation_input_tokens": 2_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1_500, "ephemeral_1h_input_tokens": 500},
        "output_tokens": 500,
    }
    expected = (10 * 3 + 148_000 * 0.3 + 1_500 * 3.75 + 500 * 6 + 500 * 15) / 1_000_000
    assert cost(warm) == pytest.approx(expected)


def test_creation_without_a_ttl_split_is_priced_as_five_minutes() -> None:
    assert cost({"cache_creation_input_tokens": 1_000_000}) == pytest.approx(3.75)


def test_growing_session_reads_the_next_file_until_the_target(server: FakeAnthropicServer, tmp_path: Path) -> None:
    session = GrowingSession(tmp_path, target_tokens=12_000, file_tokens=5000)
    assert len((tmp_path / "part_000.txt").read_text()) // 4 == pytest.approx(5000, rel=0.02)
    server.route = session.route
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for number in range(3):
        body = {"model": "claude-sonnet-4-5", "max_tokens": 1000, "messages": messages}
        content = post(server.base_url + "/v1/messages", body, ANTHROPIC_HEADERS).json()["content"]
        if content[-1]["type"] == "text":
            break
        assert content[-1]["input"] == {"path": f"part_{number:03d}.txt"}
        result = (tmp_path / content[-1]["input"]["path"]).read_text()
        use_id = content[-1]["id"]
        tool_result = {"type": "tool_result", "tool_use_id": use_id, "content": result}
        messages += [{"role": "assistant", "content": content}, {"role": "user", "content": [tool_result]}]
    assert number == 2 and content == [{"type": "text", "text": "Read 2 files."}]
    costs = request_costs(server.records)
    assert [c.prompt_tokens // 1000 for c in costs] == [0, 5, 10]
    assert summary(costs, fill_from=5000)["fill_requests"] == 2
