"""``--thinking medium`` on Claude Sonnet 4.5 against the fake Anthropic server, through the CLI's wiring and
litellm's real HTTP path (issue 21): a tool loop completes with pi's 8,192-token budget and the interleaved
thinking beta on every request and each signed thinking block sent back unaltered (the server refuses the
request otherwise); a failed tool call's result goes back with ``is_error: true``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import text_reply, tool_reply

from pi_compact.cli.wiring import run_print_mode
from pi_compact.options import AppOptions
from pi_compact.settings import RetrySettings, Settings

CALLS = 4


@pytest.fixture(autouse=True)
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.delenv("PI_CACHE_RETENTION", raising=False)


def test_thinking_medium_completes_a_signed_tool_loop(tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    for index in range(CALLS):
        (cwd / f"part_{index}.txt").write_text(f"part {index}\n", encoding="utf-8")
    session = tmp_path / "thinking.jsonl"
    options = AppOptions(cwd=cwd, prompt="Read the parts.", model="anthropic/claude-sonnet-4-5", api_key="test",
                         session=session, thinking="medium")
    with FakeAnthropicServer().start() as server:
        options = AppOptions(**{**vars(options), "api_base": server.base_url})
        server.enqueue(*(tool_reply("read", {"path": f"part_{i}.txt"}, thinking=f"Read part {i} next.")
                         for i in range(CALLS)), text_reply("All parts read."))
        code = run_print_mode(options, Settings(retry=RetrySettings(enabled=False)))
        records = server.records
    assert code == 0
    assert [record.error for record in records] == [None] * (CALLS + 1)
    assert all(record.body["thinking"]["budget_tokens"] == 8192 for record in records)
    assert all(record.headers.get("anthropic-beta") == "interleaved-thinking-2025-05-14" for record in records)
    # Each request after the first starts the previous assistant turns with their signed thinking.
    last = records[-1].body["messages"]
    sent_back = [message["content"][0] for message in last if message["role"] == "assistant"]
    assert [block["type"] for block in sent_back] == ["thinking"] * CALLS
    assert all(block.get("signature") for block in sent_back)
    entries = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
    assert [e["thinkingLevel"] for e in entries if e.get("type") == "thinking_level_change"] == ["medium"]


def test_a_failed_tool_call_reaches_claude_marked_as_an_error(tmp_path: Path) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "there.txt").write_text("here\n", encoding="utf-8")
    options = AppOptions(cwd=cwd, prompt="Read two files.", model="anthropic/claude-sonnet-4-5", api_key="test",
                         session=tmp_path / "errors.jsonl", thinking="low")
    with FakeAnthropicServer().start() as server:
        options = AppOptions(**{**vars(options), "api_base": server.base_url})
        server.enqueue(tool_reply("read", {"path": "missing.txt"}, thinking="Try the first."),
                       tool_reply("read", {"path": "there.txt"}, thinking="Then the second."), text_reply("Done."))
        code = run_print_mode(options, Settings(retry=RetrySettings(enabled=False)))
        records = server.records
    assert code == 0 and [record.error for record in records] == [None] * 3
    results = [part for message in records[-1].body["messages"] for part in message["content"]
               if part["type"] == "tool_result"]  # fmt: skip
    assert [result.get("is_error") for result in results] == [True, None]  # the missing file, then the read
    assert "here" in str(results[1]["content"])
