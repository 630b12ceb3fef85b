"""pi's models.json, the rest of it (issue 43 case 6): provider ``headers`` (resolved as ``apiKey`` is) and every
``compat`` flag pi 0.73.1 honours for chat completions, on a scripted server that refuses what such servers
refuse (``fakes.chat_checks``), and side by side with pi on the same file and the same session.

The session: a question, a reply of the model's own (thinking and a ``read`` call), the tool result, and the
new prompt right after it, so every message rule has something to act on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.chat_checks import assistant_after_tool, needs_header, no_stream_options, tool_result_names
from fakes.pi_probe import PI_CLI, pi_installed, run_pi_models
from scripted_server import Reply, ScriptedServer

from pi_compact.llm.protocol import ChatRequest, Done, ToolSpec
from pi_compact.llm.resolve import create_model, resolve_model
from pi_compact.messages import Message
from pi_compact.session.store import SessionStore
from pi_compact.settings import Settings
from pi_compact.settings.pi_models import parse_pi_models

THOUGHT = "The file will tell; read it first."
READ = ToolSpec("read", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
NEEDS_PI = pytest.mark.skipif(not pi_installed(), reason=f"pi 0.73.1 is not installed at {PI_CLI} (npm install)")


def history() -> list[Message]:
    reply = {"role": "assistant", "api": "openai-completions", "provider": "lab", "model": "lab-model",
             "content": [{"type": "thinking", "thinking": THOUGHT},
                         {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}],
             "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
             "stopReason": "toolUse", "timestamp": 2}
    result = {"role": "toolResult", "toolCallId": "call_1", "toolName": "read",
              "content": [{"type": "text", "text": "hello"}], "isError": False, "timestamp": 3}
    return [{"role": "user", "content": [{"type": "text", "text": "What does a.txt say?"}], "timestamp": 1},
            reply, result]


def tree(base_url: str, compat: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> dict[str, Any]:
    provider: dict[str, Any] = {"baseUrl": base_url, "api": "openai-completions", "apiKey": "sk-lab",
                                "models": [{"id": "lab-model", "reasoning": True, "contextWindow": 32000,
                                            "maxTokens": 4096}]}
    if compat is not None:
        provider["compat"] = compat
    if headers is not None:
        provider["headers"] = headers
    return {"providers": {"lab": provider}}


def session_file(tmp_path: Path) -> SessionStore:
    store = SessionStore.create(tmp_path / "session.jsonl", str(tmp_path), 1_700_000_000_000)
    for message in history():
        store.append_message(message, 1_700_000_000_000)
    return store


def ask_ours(server: ScriptedServer, models: dict[str, Any], store: SessionStore) -> None:
    pi_models, warnings = parse_pi_models(json.dumps(models), "models.json")
    assert warnings == []
    settings = Settings(pi_models=pi_models)
    model = create_model(resolve_model("lab/lab-model", settings=settings), settings=settings)
    prompt = {"role": "user", "content": [{"type": "text", "text": "next"}], "timestamp": 4}
    request = ChatRequest("You are terse.", [*history(), prompt], [READ], thinking="medium",
                          session_id=store.session_id)
    done = list(model.stream(request))[-1]
    assert isinstance(done, Done) and done.message["stopReason"] == "stop", done


def ask_pi(models: dict[str, Any], store: SessionStore, tmp_path: Path, environ: dict[str, str] | None = None) -> None:
    done = run_pi_models(models, tmp_path, "lab", "lab-model", "--session", str(store.path), environ=environ,
                         prompt="next")
    assert done.returncode == 0, done.stderr[-2000:]


def features(body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """What the compat flags change in a request, and nothing else (the two tools' prompts and tools differ)."""
    messages = body["messages"]
    first_tool = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    replies = [m for m in messages if m["role"] == "assistant"]

    def marked(message: dict[str, Any] | None) -> bool:
        content = (message or {}).get("content")
        return isinstance(content, list) and any("cache_control" in part for part in content)

    return {
        "stream_options": "stream_options" in body,
        "store": body.get("store"),
        "cap_field": next((key for key in ("max_tokens", "max_completion_tokens") if key in body), None),
        "after_the_tool_result": [(m["role"], m.get("name"), m.get("content") if m["role"] == "assistant" else None)
                                  for m in messages[first_tool:]],
        "thinking_as_text": [part.get("text") for part in replies[0]["content"]]
        if isinstance(replies[0].get("content"), list) else replies[0].get("content"),
        "reasoning_content": [m.get("reasoning_content") for m in replies],
        "strict": sorted({str(t["function"].get("strict")) for t in body.get("tools") or []}),
        "tool_stream": body.get("tool_stream"),
        "thinking": {key: body[key] for key in ("reasoning_effort", "reasoning", "thinking", "enable_thinking",
                                                "chat_template_kwargs") if key in body},
        "marks": (marked(messages[0]), "cache_control" in (body.get("tools") or [{}])[-1], marked(messages[-1])),
        "affinity": sorted(name for name in ("session_id", "x-client-request-id", "x-session-affinity")
                           if name in headers),
        "gateway_key": headers.get("x-gateway-key"),
    }


ALL_FLAGS = {"supportsUsageInStreaming": False, "requiresToolResultName": True,
             "requiresAssistantAfterToolResult": True, "requiresThinkingAsText": True,
             "requiresReasoningContentOnAssistantMessages": True, "supportsStore": True, "maxTokensField": "max_tokens",
             "supportsStrictMode": True, "zaiToolStream": True, "sendSessionAffinityHeaders": True,
             "cacheControlFormat": "anthropic"}
STRICT_SERVER = [no_stream_options, tool_result_names, assistant_after_tool, needs_header("X-Gateway-Key", "gw-secret")]


def strict_server(server: ScriptedServer) -> ScriptedServer:
    server.checks.extend(STRICT_SERVER)
    return server


def test_a_gateway_that_needs_its_header_and_pis_compat_flags_accepts_our_request(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_KEY", "gw-secret")
    strict_server(scripted_server).enqueue(Reply(text="ok"))
    store = session_file(tmp_path)
    ask_ours(scripted_server, tree(scripted_server.base_url, ALL_FLAGS, {"X-Gateway-Key": "GATEWAY_KEY"}), store)
    [body] = scripted_server.requests
    found = features(body, scripted_server.request_headers[0])
    assert found["after_the_tool_result"] == [("tool", "read", None),
                                              ("assistant", None, "I have processed the tool results."),
                                              ("user", None, None)]
    assert found["thinking_as_text"] == [THOUGHT] and found["reasoning_content"] == ["", None]  # (not the bridge: pi's)
    assert (found["stream_options"], found["store"], found["cap_field"], found["strict"], found["tool_stream"]) == (
        False, False, "max_tokens", ["False"], True)
    assert found["marks"] == (True, True, True)
    assert found["affinity"] == ["session_id", "x-client-request-id", "x-session-affinity"]
    assert found["gateway_key"] == "gw-secret"


def test_a_header_command_sends_its_output(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    scripted_server.checks.append(needs_header("X-Gateway-Key", "from-command"))
    scripted_server.enqueue(Reply(text="ok"))
    ask_ours(scripted_server, tree(scripted_server.base_url, headers={"X-Gateway-Key": "!echo from-command"}),
             session_file(tmp_path))
    assert scripted_server.request_headers[0]["x-gateway-key"] == "from-command"


def test_without_the_flags_that_server_refuses_the_request(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    strict_server(scripted_server)
    pi_models, _ = parse_pi_models(json.dumps(tree(scripted_server.base_url)), "models.json")
    settings = Settings(pi_models=pi_models)
    model = create_model(resolve_model("lab/lab-model", settings=settings), settings=settings)
    done = list(model.stream(ChatRequest("You are terse.", history(), [READ])))[-1]
    assert isinstance(done, Done) and done.message["stopReason"] == "error"


@NEEDS_PI
def test_pi_and_pi_compact_send_the_same_for_every_flag(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GATEWAY_KEY", "gw-secret")
    strict_server(scripted_server).enqueue(Reply(text="ok"), Reply(text="ok"))
    models = tree(scripted_server.base_url, ALL_FLAGS, {"X-Gateway-Key": "GATEWAY_KEY"})
    store = session_file(tmp_path)
    ask_pi(models, store, tmp_path, {"GATEWAY_KEY": "gw-secret"})
    ask_ours(scripted_server, models, store)
    pi_body, our_body = scripted_server.requests
    pi_headers, our_headers = scripted_server.request_headers
    assert features(our_body, our_headers) == features(pi_body, pi_headers)


@NEEDS_PI
@pytest.mark.parametrize("style", ["openai", "openrouter", "deepseek", "zai", "qwen", "qwen-chat-template"])
def test_pi_and_pi_compact_say_the_thinking_level_alike(
    scripted_server: ScriptedServer, tmp_path: Path, style: str
) -> None:
    scripted_server.enqueue(Reply(text="ok"), Reply(text="ok"))
    models = tree(scripted_server.base_url, {"thinkingFormat": style})
    store = session_file(tmp_path)
    ask_pi(models, store, tmp_path)
    ask_ours(scripted_server, models, store)
    pi_body, our_body = scripted_server.requests
    assert features(our_body, {})["thinking"] == features(pi_body, {})["thinking"]
    assert features(our_body, {})["thinking"]  # every style says something at medium


@NEEDS_PI
def test_pi_and_pi_compact_send_the_same_without_flags(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    scripted_server.enqueue(Reply(text="ok"), Reply(text="ok"))
    models = tree(scripted_server.base_url)
    store = session_file(tmp_path)
    ask_pi(models, store, tmp_path)
    ask_ours(scripted_server, models, store)
    pi_body, our_body = scripted_server.requests
    ours, theirs = features(our_body, {}), features(pi_body, {})
    # Where we differ from pi on purpose without a flag: litellm's keys (``max_tokens``, no ``store``, no
    # ``strict``), which every OpenAI-compatible server takes; the rest is pi's.
    for key in ("store", "cap_field", "strict"):
        ours.pop(key), theirs.pop(key)
    assert ours == theirs
