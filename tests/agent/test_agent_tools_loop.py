"""The tool loop end to end: tool failures reach the model as results, and the session file grows
message by message in pi's entry shapes."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from agent_harness import AGENT_SYSTEM, INFO, SETTINGS, Harness, make_harness
from scripted_server import Reply, ScriptedServer, ToolCallReply

from pi_compact.agent.session import AgentSession
from pi_compact.agent.tools import default_tools
from pi_compact.llm.openai.client import OpenAICompatModel
from pi_compact.session.store import SessionStore


def _tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def _run_one_call(h: Harness, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The model makes one tool call, then answers; returns the request that carried the result."""
    h.server.enqueue(Reply(tool_calls=(ToolCallReply(name, args, id="call_1"),)), Reply(text="Understood."))
    final = h.session.prompt(f"Please use {name}.")
    assert final is not None and final["content"] == [{"type": "text", "text": "Understood."}]
    return h.agent_requests()[-1]


def _tool_result_entries(h: Harness) -> list[dict[str, Any]]:
    return [e["message"] for e in h.entries() if e["type"] == "message" and e["message"]["role"] == "toolResult"]


def test_edit_with_missing_text_comes_back_to_the_model_as_an_error(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    (h.cwd / "notes ü.txt").write_text("alpha\nbeta\n", encoding="utf-8")
    request = _run_one_call(h, "edit", {"path": "notes ü.txt", "oldText": "gamma", "newText": "delta"})
    expected = "oldText not found in notes ü.txt; read the file and copy the text exactly."
    assert _tool_messages(request) == [{"role": "tool", "tool_call_id": "call_1", "content": expected}]
    [result] = _tool_result_entries(h)
    assert (result["isError"], result["toolName"], result["content"]) == (
        True, "edit", [{"type": "text", "text": expected}]
    )
    assert (h.cwd / "notes ü.txt").read_text(encoding="utf-8") == "alpha\nbeta\n"


def test_edit_with_ambiguous_text_comes_back_to_the_model_as_an_error(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    (h.cwd / "twice.txt").write_text("same\nsame\n", encoding="utf-8")
    request = _run_one_call(h, "edit", {"path": "twice.txt", "oldText": "same", "newText": "other"})
    expected = "oldText occurs 2 times in twice.txt; add surrounding lines to make it unique."
    assert _tool_messages(request)[0]["content"] == expected
    assert _tool_result_entries(h)[0]["isError"] is True
    assert (h.cwd / "twice.txt").read_text(encoding="utf-8") == "same\nsame\n"


def test_unknown_tool_comes_back_to_the_model_as_an_error(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    request = _run_one_call(h, "teleport", {"to": "mars"})
    content = _tool_messages(request)[0]["content"]
    assert content.startswith("Unknown tool 'teleport'; available tools: ")
    assert _tool_result_entries(h)[0]["isError"] is True


def test_bash_timeout_in_the_loop_is_an_error_result_and_does_not_hang(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    started = time.monotonic()
    request = _run_one_call(h, "bash", {"command": "echo started; sleep 30", "timeout": 1})
    assert time.monotonic() - started < 10
    content = _tool_messages(request)[0]["content"]
    assert content.startswith("started\n\n[Command timed out after 1 s; its process group was killed.]")
    assert _tool_result_entries(h)[0]["isError"] is True


def test_bash_output_cap_reaches_the_model_with_its_notice(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    request = _run_one_call(h, "bash", {"command": "seq 1 5000"})
    lines = _tool_messages(request)[0]["content"].split("\n")
    assert (lines[0], lines[1999]) == ("3001", "5000")
    assert lines[2001].startswith("[Output truncated: showing the last 2000 of 5000 lines")
    assert _tool_result_entries(h)[0]["isError"] is False


def test_every_message_is_in_the_file_when_the_next_step_starts(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    h = make_harness(scripted_server, tmp_path)
    # The tool itself reads the session file: the assistant message that called it must be there.
    request = _run_one_call(h, "bash", {"command": f"cat '{h.path}'"})
    seen = [json.loads(line) for line in _tool_messages(request)[0]["content"].split("\n\n[Exit")[0].splitlines()]
    assert [e["type"] for e in seen] == ["session", "model_change", "thinking_level_change", "message", "message"]
    assert [e["message"]["role"] for e in seen[3:]] == ["user", "assistant"]
    assert seen[4]["message"]["stopReason"] == "toolUse"


def test_session_file_holds_pi_entry_shapes_in_order(scripted_server: ScriptedServer, tmp_path: Path) -> None:
    h = make_harness(scripted_server, tmp_path)
    _run_one_call(h, "ls", {})
    header, model_change, thinking, *entries = h.entries()
    assert (header["type"], header["version"], header["cwd"]) == ("session", 3, str(h.cwd))
    assert (model_change["type"], thinking["type"]) == ("model_change", "thinking_level_change")
    assert [e["message"]["role"] for e in entries] == ["user", "assistant", "toolResult", "assistant"]
    assert [e["parentId"] for e in entries] == [thinking["id"], *(e["id"] for e in entries[:-1])]
    # pi's keys; a reply's entry also names the request it answered (ours, which pi ignores: issue 43)
    assert all(set(e) - {"requestDigest"} == {"type", "id", "parentId", "timestamp", "message"} for e in entries)
    assert ["requestDigest" in e for e in entries] == [False, True, False, True]
    user, call, result, answer = (e["message"] for e in entries)
    assert user["content"] == [{"type": "text", "text": "Please use ls."}]
    assert call["content"] == [{"type": "toolCall", "id": "call_1", "name": "ls", "arguments": {}}]
    assert (call["stopReason"], call["provider"], call["model"], call["api"]) == (
        "toolUse", "openai", "scripted", "openai-completions"
    )
    assert set(call["usage"]) == {"input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost"}
    assert (result["toolCallId"], result["toolName"], result["isError"]) == ("call_1", "ls", False)
    assert answer["stopReason"] == "stop"
    assert all(isinstance(m["timestamp"], int) for m in (user, call, result, answer))


def test_a_prompt_runs_as_many_tool_turns_as_the_model_asks_for(
    scripted_server: ScriptedServer, tmp_path: Path
) -> None:
    # pi has no cap; the agent used to stop after 200 model turns, silently and as if done. (The
    # direct client and an in-memory session keep 200 turns quick.)
    model = OpenAICompatModel(INFO, api_base=scripted_server.base_url, api_key="test", retry=SETTINGS.retry)
    session = AgentSession(store=SessionStore.in_memory(str(tmp_path), 0), model=model, settings=SETTINGS,
                           tools=default_tools(), system_prompt=AGENT_SYSTEM, cwd=tmp_path, emit=lambda event: None,
                           auto_compact=False)
    turns = 205
    scripted_server.enqueue(
        # A different limit each time: the same calls over and over would stop the loop.
        *(Reply(tool_calls=(ToolCallReply("ls", {"path": ".", "limit": 1000 + n}, id=f"call_{n}"),))
          for n in range(turns)),
        Reply(text="All listed."),
    )
    final = session.prompt("List the directory again and again.")
    assert final is not None and final["content"] == [{"type": "text", "text": "All listed."}]
    assert len(scripted_server.requests) == turns + 1
    assert sum(1 for m in session.messages if m["role"] == "toolResult") == turns
