"""pi 0.73.1 itself against the fake servers: its requests must pass their validation (or the validation is
wrong), and what it sends is the reference for issue 21. Skipped when pi is not installed in the checkout
(``npm install --no-save @mariozechner/pi-coding-agent@0.73.1``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.anthropic_checks import count_cache_breakpoints
from fakes.anthropic_server import FakeAnthropicServer, usage_of
from fakes.anthropic_stream import text_reply, tool_reply
from fakes.cost_session import GrowingSession, request_costs
from fakes.gemini_reply import call_reply
from fakes.gemini_reply import text_reply as gemini_text
from fakes.gemini_server import FakeGeminiServer, signatures_in
from fakes.pi_probe import pi_installed, run_pi

pytestmark = pytest.mark.skipif(not pi_installed(), reason="pi is not installed (node_modules)")


def workdir(tmp_path: Path) -> Path:
    (tmp_path / "hello.txt").write_text("hello world\n", encoding="utf-8")
    return tmp_path


def test_pi_thinking_tool_loop_passes_the_anthropic_validation(tmp_path: Path) -> None:
    with FakeAnthropicServer().start() as server:
        server.enqueue(
            tool_reply("read", {"path": "hello.txt"}, thinking="Read it first.", text="Reading."),
            text_reply("It says hello."),
        )
        run = run_pi("anthropic", server.base_url, "read hello.txt", workdir(tmp_path), thinking="medium")
        records = server.records
    assert run.returncode == 0 and run.stdout.strip() == "It says hello.", run.stderr
    assert [record.error for record in records] == [None, None]
    first, second = (record.body for record in records)
    assert records[0].headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 8192, "display": "summarized"}
    assert first["max_tokens"] == 32000 + 8192
    # Breakpoints: the system prompt, the last tool, the last block of the last user message.
    assert "cache_control" in first["system"][-1] and "cache_control" in first["tools"][-1]
    assert [("cache_control" in tool) for tool in first["tools"][:-1]] == [False] * (len(first["tools"]) - 1)
    assert "cache_control" in second["messages"][-1]["content"][-1]
    assert "cache_control" not in second["messages"][0]["content"][-1]  # the old breakpoint moved on
    assert count_cache_breakpoints(second) == 3
    # The signed thinking goes back byte for byte, first in the assistant turn; failures are flagged.
    thinking, *_ = second["messages"][1]["content"]
    assert thinking["type"] == "thinking" and server.signer.verify_thinking(thinking["thinking"], thinking["signature"])
    assert second["messages"][2]["content"][0]["is_error"] is False
    assert usage_of(records[1])["cache_read_input_tokens"] > 1024


def test_pi_gemini_tool_loop_sends_each_request_once(tmp_path: Path) -> None:
    with FakeGeminiServer().start() as server:
        server.enqueue(
            call_reply("read", {"path": "hello.txt"}, thought="Read it first.", text="Reading."),
            gemini_text("It says hello."),
        )
        run = run_pi("gemini", server.base_url, "read hello.txt", workdir(tmp_path), thinking="medium")
        records = server.records
    assert run.returncode == 0 and run.stdout.strip() == "It says hello.", run.stderr
    assert [record.error for record in records] == [None, None] and server.max_sends == 1
    first, second = (record.body for record in records)
    assert first["generationConfig"] == {
        "maxOutputTokens": 32000,
        "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 8192},
    }
    assert signatures_in(second) == list(server.issued_signatures.values())
    assert second["contents"][1]["parts"][0] == {"text": "Read it first.", "thought": True}  # pi sends thoughts back


def run_growing_session(tmp_path: Path, target: int) -> FakeAnthropicServer:
    server = FakeAnthropicServer().start()
    server.route = GrowingSession(tmp_path, target).route
    prompt = "Read part_000.txt, then each next part file, one at a time, until told to stop."
    run_pi("anthropic", server.base_url, prompt, tmp_path, settings={"compaction": {"enabled": False}})
    server.stop()
    return server


def test_pi_growing_session_reads_everything_but_the_newest_part_from_cache(tmp_path: Path) -> None:
    server = run_growing_session(tmp_path, 40_000)
    costs = request_costs(server.records)
    assert server.rejections == [] and len(costs) == 8
    for before, now in zip(costs, costs[1:], strict=False):
        assert now.cache_read == before.prompt_tokens and now.input_tokens == 0  # the whole last prompt is read
        assert now.cache_write == now.prompt_tokens - before.prompt_tokens


def test_pi_does_not_lower_max_tokens_near_the_window(tmp_path: Path) -> None:
    server = run_growing_session(tmp_path, 180_000)
    [rejection] = server.rejections
    assert rejection.message.startswith("input length and `max_tokens` exceed context limit: ")
    assert "+ 40192 > 200000" in rejection.message  # 32,000 + the medium budget, whatever the prompt
