"""A summary on a context with cleared tool results, on the fake Anthropic server (issue 32's review).

The requests carried the cleared results as stubs, so no cached prefix holds the originals a summary must
read: the summary is asked serialized (on the originals), a resumed session or ``compact FILE`` does not
take the next turn's request for one built from the originals, and the chat requests mark no planned cut
(a fourth breakpoint for a prefix no summary can reuse)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from agent_harness import SUMMARY, Harness, make_harness
from cache_harness import SETTINGS_40K, SONNET_40K, asks_summary
from fakes.anthropic_checks import count_cache_breakpoints
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import AnthropicReply, text_reply, tool_reply

from pi_compact.agent.events import CompactionStart, Notice
from pi_compact.cli.choices import CompactOptions
from pi_compact.cli.compact_run import compact_file
from pi_compact.compaction.prompts import SYSTEM_PROMPT as SUMMARIZER_SYSTEM
from pi_compact.session.store import SessionStore

SETTINGS = replace(SETTINGS_40K, compaction=replace(SETTINGS_40K.compaction, clear_tool_results=True))
READS = 8
ESSAY = "lorem ipsum dolor sit amet " * 300  # ~2k tokens
STUB = "Tool result cleared from the context"


def file_text(i: int) -> str:
    return f"FILE-{i}-START\n" + "\n".join(f"line {n} of file {i}: alpha beta gamma delta" for n in range(180))


def _last_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return "".join(p.get("text", "") for p in content if p.get("type") == "text") if isinstance(content, list) \
        else str(content)


def route(body: dict[str, Any]) -> AnthropicReply:
    """A read for "Read fN.txt", a short answer once it is read, ~2k tokens of prose to anything else."""
    if asks_summary(body):
        return text_reply(SUMMARY, output_tokens=600)
    content = body["messages"][-1]["content"]
    if isinstance(content, list) and any(p.get("type") == "tool_result" for p in content):
        return text_reply("Read it.")
    asked = _last_user_text(body)
    if asked.startswith("Read f"):
        return tool_reply("read", {"path": asked.split()[1]}, thinking="The file first.")
    return text_reply(ESSAY, output_tokens=2_000)


def cleared_session(server: FakeAnthropicServer, tmp_path: Path, *, refill: bool) -> Harness:
    """Eight reads of ~2.2k tokens, then essays: the first crossing of the threshold clears the older reads
    (no compaction), and a request carries their stubs; ``refill``: then essays until the context is past
    the soft threshold again, still below the threshold."""
    server.route = route
    h = make_harness(server, tmp_path, settings=SETTINGS, info=SONNET_40K)
    for i in range(READS):
        (h.cwd / f"f{i}.txt").write_text(file_text(i), encoding="utf-8")
        h.session.prompt(f"Read f{i}.txt")
    for part in range(30):
        usage = h.session.context_usage()
        stubs_sent = STUB in json.dumps(server.records[-1].body["messages"])
        if stubs_sent and (not refill or usage.tokens + 2_200 > usage.threshold):
            break
        h.session.prompt(f"Write part {part} of the essay.")
    assert stubs_sent and [e.text[:8] for e in h.events if isinstance(e, Notice)] == ["Cleared "]
    assert not [e for e in h.events if isinstance(e, CompactionStart)]
    return h


def test_chat_requests_mark_no_planned_cut_once_results_before_it_are_cleared(tmp_path: Path) -> None:
    with FakeAnthropicServer().start() as server:
        h = cleared_session(server, tmp_path, refill=True)
        records = [r for r in server.records if not asks_summary(r.body)]
        usage = h.session.context_usage()
    assert usage.tokens > usage.threshold * 70 // 100  # past the soft threshold: a cut would be planned
    after = [r for r in records if STUB in json.dumps(r.body["messages"])]
    assert after and [count_cache_breakpoints(r.body) for r in after] == [3] * len(after)


def assert_asked_serialized_on_the_originals(entries: list[dict[str, Any]], asked: list[Any]) -> None:
    [entry] = [e for e in entries if e["type"] == "compaction"]
    # No prefix to weigh (the requests carried stubs where the summary must read the originals): serialized.
    assert "summaryRequest" not in entry["details"]
    assert SUMMARIZER_SYSTEM[:60] in json.dumps(asked[0].body["system"])
    text = json.dumps(asked[0].body)
    assert "FILE-0-START" in text and STUB not in text


def test_compact_file_after_clearing_asks_serialized_on_the_original_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeAnthropicServer().start() as server:
        h = cleared_session(server, tmp_path, refill=False)
        h.session.close()
        monkeypatch.chdir(h.cwd)
        sent = len(server.records)
        options = CompactOptions(session=h.path, model=SONNET_40K.model, api_base=server.base_url, api_key="k",
                                 context_window=SONNET_40K.context_window)
        assert compact_file(options, SETTINGS) == 0
        asked = [r for r in server.records[sent:] if asks_summary(r.body)]
    assert_asked_serialized_on_the_originals(h.entries(), asked)


def test_a_resumed_compact_after_clearing_asks_serialized_on_the_original_results(tmp_path: Path) -> None:
    with FakeAnthropicServer().start() as server:
        first = cleared_session(server, tmp_path, refill=False)
        first.session.close()
        sent = len(server.records)
        resumed = make_harness(server, tmp_path, settings=SETTINGS, info=SONNET_40K,
                               store=SessionStore.open(first.path, str(first.cwd), 1_700_000_000_000))
        assert resumed.session.compact() is not None
        asked = [r for r in server.records[sent:] if asks_summary(r.body)]
    assert_asked_serialized_on_the_originals(resumed.entries(), asked)
