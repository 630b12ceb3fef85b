"""A custom ``anthropic-messages`` provider of pi's models.json (a gateway in front of Claude) is cached like the
built-in one: pi's three breakpoints, the system block included (issue 43 case 6: it got two, the system prompt
of a reasoning model went as a "developer" message and was left unmarked), its ``headers`` are sent, and its
``compat`` flags act, side by side with pi 0.73.1 on the fake Anthropic server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_checks import count_cache_breakpoints
from fakes.anthropic_server import FakeAnthropicServer
from fakes.anthropic_stream import text_reply
from fakes.pi_probe import PI_CLI, pi_installed, run_pi_models

from pi_compact.llm.protocol import ChatRequest, Done, ToolSpec
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.settings import Settings
from pi_compact.settings.pi_models import parse_pi_models

READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
USER = {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}


def gateway(base_url: str, compat: dict[str, Any] | None = None) -> dict[str, Any]:
    provider: dict[str, Any] = {
        "baseUrl": base_url, "api": "anthropic-messages", "apiKey": "sk-gw", "headers": {"X-Gateway-Key": "!echo gw1"},
        "models": [{"id": "claude-sonnet-4-5", "reasoning": True, "contextWindow": 200000, "maxTokens": 64000}]}
    if compat is not None:
        provider["compat"] = compat
    return {"providers": {"gw": provider}}


def ask_ours(models: dict[str, Any], cache: str = "short") -> None:
    pi_models, warnings = parse_pi_models(json.dumps(models), "models.json")
    assert warnings == []
    settings = Settings(pi_models=pi_models)
    model = create_model(resolve_model("gw/claude-sonnet-4-5", settings=settings), settings=settings)
    done = list(model.stream(ChatRequest("You are terse. " * 400, [USER], [READ], thinking="medium", cache=cache)))
    assert isinstance(done[-1], Done) and done[-1].message["stopReason"] == "stop", done[-1]


def ask_pi(models: dict[str, Any], tmp_path: Path) -> None:
    done = run_pi_models(models, tmp_path, "gw", "claude-sonnet-4-5", "--no-session")
    assert done.returncode == 0, done.stderr[-2000:]


def system_marked(body: dict[str, Any]) -> bool:
    system = body.get("system")
    return isinstance(system, list) and any("cache_control" in part for part in system)


def ttls(body: dict[str, Any]) -> set[str | None]:
    marks = [part["cache_control"] for part in body.get("system") or [] if "cache_control" in part]
    marks += [tool["cache_control"] for tool in body.get("tools") or [] if "cache_control" in tool]
    return {mark.get("ttl") for mark in marks}


def test_a_custom_anthropic_provider_gets_three_breakpoints_and_its_headers() -> None:
    with FakeAnthropicServer().start() as server:
        server.enqueue(text_reply("ok"))
        ask_ours(gateway(server.base_url))
        [record] = server.records
    assert record.error is None
    assert count_cache_breakpoints(record.body) == 3 and system_marked(record.body)
    assert record.headers["x-gateway-key"] == "gw1"


def test_without_long_retention_the_marks_carry_no_hour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CACHE_RETENTION", "long")
    with FakeAnthropicServer().start() as server:
        server.enqueue(text_reply("ok"), text_reply("ok"))
        ask_ours(gateway(server.base_url))
        ask_ours(gateway(server.base_url, {"supportsLongCacheRetention": False}))
        long, short = server.records
    assert ttls(long.body) == {"1h"} and ttls(short.body) == {None}


def test_without_eager_tool_streaming_the_fine_grained_beta_is_asked_for() -> None:
    with FakeAnthropicServer().start() as server:
        server.enqueue(text_reply("ok"))
        ask_ours(gateway(server.base_url, {"supportsEagerToolInputStreaming": False}))
        [record] = server.records
    assert "fine-grained-tool-streaming-2025-05-14" in record.headers["anthropic-beta"].split(",")


@pytest.mark.skipif(not pi_installed(), reason=f"pi 0.73.1 is not installed at {PI_CLI} (npm install)")
def test_pi_and_pi_compact_mark_and_authenticate_the_gateway_alike(tmp_path: Path) -> None:
    with FakeAnthropicServer().start() as server:
        server.enqueue(text_reply("ok"), text_reply("ok"))
        ask_pi(gateway(server.base_url), tmp_path)
        ask_ours(gateway(server.base_url))
        theirs, ours = server.records
    assert (count_cache_breakpoints(ours.body), system_marked(ours.body), ours.headers["x-gateway-key"]) == (
        count_cache_breakpoints(theirs.body), system_marked(theirs.body), theirs.headers["x-gateway-key"])
