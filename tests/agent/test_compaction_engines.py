"""The compaction engines (issue 45) on a real session, through litellm's HTTP path to the validating fake
Anthropic server: which engine ``compaction.engine`` picks, what the provider's engine writes and sends next,
and every way it hands over to ours (each ends in a written compaction, never a lost turn)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from agent_harness import SETTINGS, SUMMARY, Harness, make_harness, padded
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import AnthropicReply, Compaction, text_reply, tool_reply
from fakes.http_fake import Exchange
from fakes.responses_reply import error_reply as responses_error
from fakes.responses_reply import text_reply as responses_text
from fakes.responses_server import FakeResponsesServer

from pi_compact.agent.session import AgentSession
from pi_compact.agent.tools import default_tools, session_tools
from pi_compact.agent.tools.recall import RECALL_HINT
from pi_compact.cancel import CancelToken
from pi_compact.llm.litellm_model import LiteLLMModel
from pi_compact.llm.openai.responses import ResponsesModel
from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.server_compaction import account_of
from pi_compact.providers import ANTHROPIC_COMPACTION, OPENAI_COMPACTION
from pi_compact.session.context import build_session_context
from pi_compact.session.store import SessionStore
from pi_compact.settings import RetrySettings, Settings

SONNET = ModelInfo("anthropic/claude-sonnet-4-6", "anthropic", 200_000, 64_000, reasoning=True,
                   server_compaction=ANTHROPIC_COMPACTION)
PLAIN = replace(SONNET, server_compaction=None)  # the same model, its row without the feature
OTHER = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)
PASTE = "PASTED " + "word " * 60_000  # ~75,000 tokens: over the API's 50,000-token trigger
BLOCK = "The user pasted a long word list (PASTED); the assistant acknowledged it. Nothing else happened."


def settings(engine: str = "auto") -> Settings:
    return replace(SETTINGS, retry=RetrySettings(enabled=False),
                   compaction=replace(SETTINGS.compaction, engine=engine))


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    fake = FakeAnthropicServer(min_cache_tokens=0)
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


def two_turns(server: FakeAnthropicServer, tmp_path: Path, engine: str = "auto", info: ModelInfo = SONNET,
              paste: str = PASTE, **more: Any) -> Harness:
    """A session of a large paste and a short second turn; the paste is what a compaction summarizes."""
    harness = make_harness(server, tmp_path, settings=settings(engine), info=info, **more)  # type: ignore[arg-type]
    server.enqueue(text_reply("Noted."), text_reply("Done."))
    harness.session.prompt(paste)
    harness.session.prompt(padded("SECOND", 300))  # the kept part (over keepRecentTokens)
    return harness


def compact(harness: Harness, *replies: AnthropicReply) -> dict[str, Any]:
    harness.server.enqueue(*replies)  # type: ignore[attr-defined]
    assert harness.session.compact() is not None
    [entry] = [e for e in harness.entries() if e["type"] == "compaction"]
    return entry


def edits(body: dict[str, Any]) -> list[dict[str, Any]]:
    return list((body.get("context_management") or {}).get("edits") or [])


def test_auto_engine_asks_anthropic_to_compact_the_cached_prefix(server: FakeAnthropicServer, tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path)
    entry = compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))
    asked = server.records[-1]
    assert edits(asked.body) == [{"type": "compact_20260112", "trigger": {"type": "input_tokens", "value": 50_000},
                                  "pause_after_compaction": True,
                                  "instructions": edits(asked.body)[0]["instructions"]}]
    assert "## Goal" in edits(asked.body)[0]["instructions"]  # our summary structure, not the API's prompt
    assert "compact-2026-01-12" in asked.headers["anthropic-beta"] and server.rejections == []
    assert asked.usage is not None and asked.usage["cache_read_input_tokens"] > 0.9 * asked.prompt_tokens
    assert entry["details"]["engine"] == ANTHROPIC_COMPACTION and "engineFallbacks" not in entry["details"]


def test_the_provider_engine_writes_a_pi_entry_whose_summary_is_the_block_text(server: FakeAnthropicServer,
                                                                                tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path)
    entry = compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))
    assert entry["summary"].startswith(BLOCK) and '"PASTED' in entry["summary"]  # our kept user message too
    held = entry["details"]["providerCompaction"]
    assert {key: held[key] for key in ("provider", "api", "model", "block")} == {
        "provider": "anthropic", "api": "anthropic-messages", "model": "claude-sonnet-4-6",
        "block": {"type": "compaction", "content": BLOCK}}
    assert entry["summary"] == f"{BLOCK}\n\n{held['after']}"  # the kept blocks, which this model reads after it
    assert entry["details"]["usage"]["output"] > 0 and entry["details"]["summaryModel"] == SONNET.model
    # What pi builds from the file: the readable summary, where the paste was.
    context = build_session_context(harness.entries()[1:])
    assert context.messages[0]["role"] == "compactionSummary" and context.messages[0]["summary"] == entry["summary"]


def test_the_next_request_sends_the_block_cache_marked_with_the_edit_and_beta(server: FakeAnthropicServer,
                                                                              tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path)
    compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))
    server.enqueue(text_reply("Hello again."))
    harness.session.prompt("What did I paste?")
    body, headers = server.records[-1].body, server.records[-1].headers
    first = body["messages"][0]
    assert first["role"] == "assistant" and first["content"][0]["type"] == "compaction"
    assert first["content"][0]["content"] == BLOCK and first["content"][0]["cache_control"]["type"] == "ephemeral"
    assert [e["type"] for e in edits(body)] == ["compact_20260112"]
    assert "compact-2026-01-12" in headers["anthropic-beta"]
    assert len(json.dumps(body["messages"])) < len(PASTE) // 4 and server.rejections == []  # the paste is gone


def test_the_same_model_is_sent_our_kept_blocks_and_the_recall_hint_after_the_block(server: FakeAnthropicServer,
                                                                                   tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path / "session.jsonl", str(tmp_path), 1_700_000_000_000)
    recall = [tool for tool in session_tools(store, settings()) if tool.name == "recall"]
    harness = two_turns(server, tmp_path, store=store, extra_tools=recall)
    compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))
    server.enqueue(text_reply("Hello again."))
    harness.session.prompt("What did I paste?")
    first = server.records[-1].body["messages"][0]
    assert [part["type"] for part in first["content"]] == ["compaction", "text"]
    after = first["content"][1]["text"]
    assert after.startswith("<user-messages>") and '"PASTED word' in after and RECALL_HINT in after
    assert server.rejections == []


def test_another_model_is_sent_the_readable_summary_not_the_block(server: FakeAnthropicServer, tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path)
    entry = compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))
    harness.session.set_model(LiteLLMModel(OTHER, api_base=server.base_url, api_key="test"))
    server.enqueue(text_reply("Hello again."))
    harness.session.prompt("What did I paste?")
    body = server.records[-1].body
    assert body["model"] == "claude-sonnet-4-5" and "compaction" not in str(body["messages"][0])
    assert entry["summary"][:40] in str(body["messages"][0]) and "context_management" not in body


REFUSED_BLOCK = AnthropicReply(status=400, error_type="invalid_request_error",
                               error_message="compaction blocks are not accepted for this request")


def sends_a_block(body: dict[str, Any]) -> bool:
    return any(isinstance(part, dict) and part.get("type") == "compaction"
               for message in body["messages"] for part in (message.get("content") or ())
               if isinstance(message.get("content"), list))


def test_a_request_whose_block_is_refused_is_sent_again_with_the_readable_summary(server: FakeAnthropicServer,
                                                                                  tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path)
    entry = compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))
    server.enqueue(REFUSED_BLOCK, text_reply("Hello again."))
    harness.session.prompt("What did I paste?")
    refused, resent = server.records[-2].body, server.records[-1].body
    assert sends_a_block(refused) and not sends_a_block(resent) and "context_management" not in resent
    assert entry["summary"][:40] in json.dumps(resent["messages"][0])
    last = [e["message"] for e in harness.entries() if e["type"] == "message"][-1]
    assert last["role"] == "assistant" and last["stopReason"] == "stop"
    assert last["content"] == [{"type": "text", "text": "Hello again."}]
    [notice] = [e for e in harness.of_type("notice") if "compaction block" in e.text]
    assert "readable summary" in notice.text


def test_once_its_block_is_refused_the_session_sends_the_text_straight_away(server: FakeAnthropicServer,
                                                                            tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path)
    compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))
    server.enqueue(REFUSED_BLOCK, text_reply("Hello again."))
    harness.session.prompt("What did I paste?")
    asked = len(server.records)
    server.enqueue(text_reply("Still here."))
    harness.session.prompt("And now?")
    assert len(server.records) == asked + 1 and not sends_a_block(server.records[-1].body)


def test_a_400_the_text_gets_too_is_not_blamed_on_the_block(server: FakeAnthropicServer, tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path)
    compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))
    server.enqueue(REFUSED_BLOCK, REFUSED_BLOCK)  # the text is refused as well: the block was not the cause
    harness.session.prompt("What did I paste?")
    server.enqueue(text_reply("Hello again."))
    harness.session.prompt("And now?")
    assert sends_a_block(server.records[-1].body) and not sends_a_block(server.records[-2].body)


def test_local_engine_never_asks_the_provider(server: FakeAnthropicServer, tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path, engine="local")
    entry = compact(harness, text_reply(SUMMARY))
    assert all("context_management" not in body for body in server.requests)
    assert entry["details"]["engine"] == "local" and entry["summary"].startswith(SUMMARY)


def test_auto_stays_local_where_the_part_to_summarize_is_under_the_trigger(server: FakeAnthropicServer,
                                                                           tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path, paste="PASTED " + "word " * 4_000)
    entry = compact(harness, text_reply(SUMMARY))
    assert "context_management" not in server.requests[-1]
    assert entry["details"]["engine"] == "local" and "engineFallbacks" not in entry["details"]


def test_auto_stays_local_where_the_cache_expired_and_the_serialized_text_costs_less(server: FakeAnthropicServer,
                                                                                    tmp_path: Path) -> None:
    first = two_turns(server, tmp_path)
    later = time.time_ns() // 1_000_000 + 3_600_000  # an hour on: nothing of it is left in the cache
    store = SessionStore.open(first.path, str(first.cwd), later)
    harness = make_harness(server, tmp_path / "resumed", settings=settings(), info=SONNET, store=store,
                           now_ms=lambda: later)
    harness.path = first.path
    entry = compact(harness, text_reply(SUMMARY))
    assert "context_management" not in server.requests[-1]
    prices = entry["details"]["summaryRequest"]["expectedInputTokens"]
    assert prices["prefix"] > prices["serialized"] and entry["details"]["engine"] == "local"


def test_provider_setting_asks_the_provider_even_where_ours_would_cost_less(server: FakeAnthropicServer,
                                                                           tmp_path: Path) -> None:
    first = two_turns(server, tmp_path)
    later = time.time_ns() // 1_000_000 + 3_600_000
    store = SessionStore.open(first.path, str(first.cwd), later)
    harness = make_harness(server, tmp_path / "resumed", settings=settings("provider"), info=SONNET, store=store,
                           now_ms=lambda: later)
    harness.path = first.path
    entry = compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))
    assert "context_management" in server.requests[-1] and entry["details"]["engine"] == ANTHROPIC_COMPACTION


def test_provider_setting_on_a_model_without_the_feature_says_why_ours_wrote_it(server: FakeAnthropicServer,
                                                                               tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path, engine="provider", info=PLAIN)
    entry = compact(harness, text_reply(SUMMARY))
    assert "context_management" not in server.requests[-1]
    assert entry["details"]["engine"] == "local"
    assert entry["details"]["engineFallbacks"] == [
        {"engine": "provider", "reason": "anthropic/claude-sonnet-4-6 has no server-side compaction."}]


@pytest.mark.parametrize(("refusal", "reason"), [
    (AnthropicReply(status=400, error_type="invalid_request_error", error_message="compaction is not available"),
     "compaction is not available"),
    (AnthropicReply(blocks=(Compaction(None),)), "null content"),
    (AnthropicReply(blocks=(Compaction(BLOCK),), cut_after=4), "the provider's compaction failed"),
], ids=["a 400", "null content", "a stream cut mid-block"])
def test_a_refused_provider_compaction_falls_back_to_ours(server: FakeAnthropicServer, tmp_path: Path,
                                                          refusal: AnthropicReply, reason: str) -> None:
    harness = two_turns(server, tmp_path)
    entry = compact(harness, refusal, text_reply(SUMMARY))
    assert "context_management" in server.requests[-2] and "context_management" not in server.requests[-1]
    assert entry["details"]["engine"] == "local" and entry["summary"].startswith(SUMMARY)
    [note] = entry["details"]["engineFallbacks"]
    assert note["engine"] == ANTHROPIC_COMPACTION and reason in note["reason"]
    assert "providerCompaction" not in entry["details"]


def test_a_refused_provider_and_a_failed_summary_still_write_the_model_free_one(server: FakeAnthropicServer,
                                                                                tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path)
    refused = AnthropicReply(status=400, error_type="invalid_request_error", error_message="nope")
    entry = compact(harness, refused, replace(refused, repeat=True))
    assert entry["details"]["engine"] == "local" and entry["details"]["fallback"] is True
    assert [note["engine"] for note in entry["details"]["engineFallbacks"]] == [ANTHROPIC_COMPACTION]
    assert "PASTED" in entry["summary"]  # the model-free summary quotes the user's message


class HeldCompaction(FakeAnthropicServer):
    """The fake, holding a request that asks for the compaction edit until ``release`` (``asked`` says it came)."""

    def __init__(self) -> None:
        super().__init__(min_cache_tokens=0)
        self.asked, self.release = threading.Event(), threading.Event()

    def handle(self, exchange: Exchange) -> None:
        body = exchange.json_body()
        if isinstance(body, dict) and body.get("context_management", {}).get("edits", [{}])[0].get(
                "pause_after_compaction"):
            self.asked.set()
            self.release.wait(10)
        super().handle(exchange)


def test_cancelling_the_provider_engine_mid_request_leaves_the_session_file_unchanged(tmp_path: Path) -> None:
    held = HeldCompaction()
    held.start()
    try:
        harness = two_turns(held, tmp_path)
        before = harness.path.read_bytes()
        held.enqueue(AnthropicReply(blocks=(Compaction(BLOCK),)), text_reply(SUMMARY))
        token = CancelToken()
        threading.Thread(target=lambda: held.asked.wait(10) and token.cancel(), daemon=True).start()
        assert harness.session.compact(cancel=token) is None
        assert held.asked.is_set() and harness.path.read_bytes() == before
        assert harness.of_type("compaction_end")[-1].aborted is True
    finally:
        held.release.set()
        held.stop()


def test_uncompact_restores_what_the_provider_engine_replaced(server: FakeAnthropicServer, tmp_path: Path) -> None:
    harness = two_turns(server, tmp_path)
    assert compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))["details"]["engine"] == ANTHROPIC_COMPACTION
    harness.session.uncompact()
    server.enqueue(text_reply("Hello again."))
    harness.session.prompt("What did I paste?")
    body = server.records[-1].body
    assert "PASTED" in str(body["messages"][0]) and "compaction" not in str(body["messages"][0])


def test_recall_finds_what_the_provider_engine_replaced(server: FakeAnthropicServer, tmp_path: Path) -> None:
    store = SessionStore.create(tmp_path / "session.jsonl", str(tmp_path), 1_700_000_000_000)
    recall = [tool for tool in session_tools(store, settings()) if tool.name == "recall"]
    harness = two_turns(server, tmp_path, store=store, extra_tools=recall)
    assert compact(harness, AnthropicReply(blocks=(Compaction(BLOCK),)))["details"]["engine"] == ANTHROPIC_COMPACTION
    server.enqueue(tool_reply("recall", {"query": "PASTED"}, thinking="Look it up."), text_reply("It was a word list."))
    harness.session.prompt("Quote the start of what I pasted.")
    assert server.rejections == []
    [result] = [m for m in server.records[-1].body["messages"] if m["role"] == "user"
                and any(part.get("type") == "tool_result" for part in m["content"])]
    assert "PASTED word word word" in json.dumps(result) and server.records[-1].body["messages"][0]["content"][0][
        "type"] == "compaction"


# ---- OpenAI: our summary, and the window /responses/compact returned for the same model and key ----------------

GPT = ModelInfo("openai/gpt-5.1", "openai", 400_000, 128_000, reasoning=True, server_compaction=OPENAI_COMPACTION)


def openai_session(server: FakeResponsesServer, tmp_path: Path, engine: str) -> tuple[AgentSession, Path]:
    cwd = tmp_path / "work"
    cwd.mkdir()
    path = tmp_path / "session.jsonl"
    session = AgentSession(store=SessionStore.create(path, str(cwd), 1_700_000_000_000),
                           model=ResponsesModel(GPT, api_base=server.base_url, api_key="sk-fake"),
                           settings=settings(engine), tools=default_tools(), system_prompt="You are terse.", cwd=cwd,
                           emit=lambda event: None)
    server.enqueue(responses_text("Noted."), responses_text("Done."))
    session.prompt("PASTED " + "word " * 2_000)
    session.prompt(padded("SECOND", 300))
    return session, path


def compaction_entry(path: Path) -> dict[str, Any]:
    [entry] = [e for e in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if e["type"] == "compaction"]
    return entry


def test_openai_engine_keeps_our_summary_and_the_window_for_the_same_model(tmp_path: Path) -> None:
    with FakeResponsesServer().start() as server:
        session, path = openai_session(server, tmp_path, "provider")
        server.enqueue(responses_text(SUMMARY))
        assert session.compact() is not None
        entry = compaction_entry(path)
        assert [r.path for r in server.records][-2:] == ["/v1/responses", "/v1/responses/compact"]
        server.enqueue(responses_text("Hello again."))
        session.prompt("What did I paste?")
        sent = server.requests[-1]["input"]
        assert server.rejections == []
    assert entry["summary"].startswith(SUMMARY) and entry["details"]["engine"] == OPENAI_COMPACTION
    held = entry["details"]["providerCompaction"]
    assert (held["model"], held["account"]) == ("gpt-5.1", account_of("sk-fake"))
    assert [item["type"] for item in held["window"]][-1] == "compaction"
    assert any(item.get("type") == "compaction" for item in sent) and SUMMARY not in json.dumps(sent)


def test_openai_engine_is_not_chosen_by_auto_since_it_costs_ours_and_more(tmp_path: Path) -> None:
    with FakeResponsesServer().start() as server:
        session, path = openai_session(server, tmp_path, "auto")
        server.enqueue(responses_text(SUMMARY))
        assert session.compact() is not None
        assert "/v1/responses/compact" not in [r.path for r in server.records]
    assert compaction_entry(path)["details"]["engine"] == "local"


def test_a_refused_openai_compaction_leaves_our_summary_alone(tmp_path: Path) -> None:
    with FakeResponsesServer().start() as server:
        session, path = openai_session(server, tmp_path, "provider")
        server.enqueue(responses_text(SUMMARY), responses_error(400, "no compaction today"))
        assert session.compact() is not None
    entry = compaction_entry(path)
    assert entry["details"]["engine"] == "local" and "providerCompaction" not in entry["details"]
    [note] = entry["details"]["engineFallbacks"]
    assert note["engine"] == OPENAI_COMPACTION and "no compaction today" in note["reason"]
