"""A hostile model (through the scripted server) and a hostile pi session file: lone UTF-16 surrogates and
arguments nested a thousand deep are repaired or reported to the model, never a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agent_harness import INFO, SETTINGS
from builders import assistant, chain, user, write_session
from model_paths import chat_model
from scripted_server import Reply, ScriptedServer
from typer.testing import CliRunner

from pi_compact.agent.events import SessionEvent
from pi_compact.agent.session import AgentSession
from pi_compact.agent.tools import default_tools
from pi_compact.cli.typer_app import build_app
from pi_compact.jstext import repair_json, valid_text
from pi_compact.session.store import SessionStore

LONE = "\ud800"


def _session(
    server: ScriptedServer, tmp_path: Path, model_path: str, store: SessionStore | None = None
) -> AgentSession:
    cwd = tmp_path / "work"
    cwd.mkdir(exist_ok=True)
    events: list[SessionEvent] = []
    model = chat_model(model_path, INFO, api_base=server.base_url, api_key="test", retry=SETTINGS.retry)
    return AgentSession(store=store or SessionStore.create(tmp_path / "s.jsonl", str(cwd), 1_700_000_000_000),
                        model=model, settings=SETTINGS, tools=default_tools(), system_prompt="sys", cwd=cwd,
                        emit=events.append)


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    return json.dumps({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def _sent_text(request: dict[str, Any]) -> str:
    return json.dumps(request["messages"], ensure_ascii=False)


def test_valid_text_replaces_only_lone_surrogates() -> None:
    assert valid_text(f"a{LONE}b\udfffc😀") == "a\ufffdb\ufffdc😀"
    deep: Any = json.loads("[" * 900 + json.dumps(LONE) + "]" * 900)
    repair_json(deep)
    for _ in range(900):
        deep = deep[0]
    assert deep == "\ufffd"


def test_a_lone_surrogate_in_a_reply_is_stored_repaired_and_the_next_turn_is_sent(
    scripted_server: ScriptedServer, tmp_path: Path, model_path: str
) -> None:
    scripted_server.enqueue(Reply(text=f"bad {LONE} text", thinking=f"hm {LONE}"), Reply(text="second"))
    session = _session(scripted_server, tmp_path, model_path)
    first = session.prompt("hi")
    assert first is not None and first["content"][-1]["text"] == "bad \ufffd text"
    second = session.prompt("again")
    assert second is not None and second["content"][-1]["text"] == "second"
    assert "bad \ufffd text" in _sent_text(scripted_server.requests[-1])
    stored = (tmp_path / "s.jsonl").read_text(encoding="utf-8")
    assert "\\ud800" not in stored and "bad \ufffd text" in stored


def test_a_pi_session_file_holding_a_lone_surrogate_opens_and_continues(
    scripted_server: ScriptedServer, tmp_path: Path, model_path: str
) -> None:
    path = tmp_path / "pi.jsonl"
    write_session(path, chain(user("question MARK"), assistant("answer MARK")))
    # As pi's JSON.stringify writes a lone surrogate: the escape, in valid UTF-8.
    path.write_text(path.read_text(encoding="utf-8").replace("MARK", "\\ud800"), encoding="utf-8")
    store = SessionStore.open(path, str(tmp_path), 1_700_000_000_000)
    scripted_server.enqueue(Reply(text="continued"))
    session = _session(scripted_server, tmp_path, model_path, store)
    final = session.prompt("go on")
    assert final is not None and final["content"][-1]["text"] == "continued"
    sent = _sent_text(scripted_server.requests[-1])
    assert "question \ufffd" in sent and "answer \ufffd" in sent


@pytest.mark.parametrize("depth", [100, 500, 1000, 5000])
def test_tool_call_arguments_nested_a_thousand_deep_are_an_error_text_for_the_model(
    scripted_server: ScriptedServer, tmp_path: Path, model_path: str, depth: int
) -> None:
    nested = "[" * depth + "]" * depth
    arguments = '{"path": ' + nested + "}"
    scripted_server.enqueue(
        Reply(raw_events=(_chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {
            "name": "read", "arguments": arguments}}]}), _chunk({}, "tool_calls"))),
        Reply(text="understood"),
    )
    session = _session(scripted_server, tmp_path, model_path)
    final = session.prompt("read it")
    assert final is not None and final["content"][-1]["text"] == "understood"
    results = [m for m in (e.get("message") for e in session.store.entries) if m and m.get("role") == "toolResult"]
    assert len(results) == 1 and results[0]["isError"]
    assert "not valid JSON" in results[0]["content"][0]["text"]


def test_invalid_tool_call_json_is_reported_as_invalid_json_not_a_missing_argument(
    scripted_server: ScriptedServer, tmp_path: Path, model_path: str
) -> None:
    scripted_server.enqueue(
        Reply(raw_events=(_chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {
            "name": "read", "arguments": '{"path": "a.py",'}}]}), _chunk({}, "tool_calls"))),
        Reply(text="ok"),
    )
    session = _session(scripted_server, tmp_path, model_path)
    session.prompt("read it")
    results = [m for m in (e.get("message") for e in session.store.entries) if m and m.get("role") == "toolResult"]
    text = results[0]["content"][0]["text"]
    assert "not valid JSON" in text and '{"path": "a.py",' in text
    assert "missing" not in text.lower()


def test_print_mode_prints_a_reply_holding_a_lone_surrogate(
    scripted_server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.chdir(tmp_path)
    scripted_server.enqueue(Reply(text=f"bad {LONE} text"))
    done = CliRunner().invoke(build_app(), ["--model", "openai/scripted", "--api-base", scripted_server.base_url,
                                            "--api-key", "k", "--context-window", "10000", "-p", "hi", "--no-session"])
    assert done.exit_code == 0, done.output
    assert done.stdout == "bad \ufffd text\n"
