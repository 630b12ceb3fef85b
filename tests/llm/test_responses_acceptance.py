"""Issue 34 item 4, end to end against the validating fake Responses server: a 10-call tool loop of the agent on
a reasoning model carries its reasoning on every request and nothing is refused; the session it writes has the
entries pi writes; pi 0.73.1 (when installed) continues our session and we continue pi's, side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.pi_probe import pi_installed, run_pi
from fakes.responses_reply import call_reply, text_reply
from fakes.responses_server import FakeResponsesServer, openai_server  # noqa: F401 (the ``server`` fixture)
from responses_harness import openai_settings

from pi_compact.cli.wiring import build_runtime
from pi_compact.options import AppOptions

CALLS = 10
needs_pi = pytest.mark.skipif(not pi_installed(), reason="pi 0.73.1 is not installed in node_modules")



def files(cwd: Path, count: int) -> None:
    for number in range(count):
        (cwd / f"f{number}.txt").write_text(f"value {number}\n", encoding="utf-8")


def run_ours(server: FakeResponsesServer, cwd: Path, session: Path, prompt: str, model: str = "openai/o4-mini") -> None:
    runtime = build_runtime(AppOptions(cwd=cwd, model=model, session=session, thinking="medium"),
                            openai_settings(server), lambda _event: None)
    try:
        runtime.session.prompt(prompt)
    finally:
        runtime.session.close()


def entries(session: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]


def assistant_messages(session: Path) -> list[dict[str, Any]]:
    return [entry["message"] for entry in entries(session)
            if entry["type"] == "message" and entry["message"]["role"] == "assistant"]


def reasoning_ids(body: dict[str, Any]) -> list[str]:
    return [item["id"] for item in body["input"] if item.get("type") == "reasoning"]


def loop(server: FakeResponsesServer, calls: int) -> None:
    server.enqueue(*(call_reply("read", {"path": f"f{n}.txt"}, reasoning=f"Now file {n}.") for n in range(calls)),
                   text_reply("All read.", reasoning="That was all."))


def test_a_ten_call_tool_loop_carries_its_reasoning_on_every_request(server: FakeResponsesServer,
                                                                      tmp_path: Path) -> None:
    files(tmp_path, CALLS)
    loop(server, CALLS)
    run_ours(server, tmp_path, tmp_path / "s.jsonl", "Read the ten files.")
    records = server.records
    assert len(records) == CALLS + 1 and server.rejections == []
    issued = [item for record in records for item in record.output or [] if item["type"] == "reasoning"]
    for number, record in enumerate(records):
        # Request n carries the n reasoning items issued before it, unchanged (encrypted content included).
        sent = [item for item in record.body["input"] if item.get("type") == "reasoning"]
        assert sent == issued[:number]
        assert record.body["input"][0]["role"] == "developer" and record.body["store"] is False


def test_a_session_on_responses_records_what_pi_records(server: FakeResponsesServer, tmp_path: Path) -> None:
    files(tmp_path, 1)
    loop(server, 1)
    run_ours(server, tmp_path, tmp_path / "s.jsonl", "Read f0.txt.")
    first, last = assistant_messages(tmp_path / "s.jsonl")
    issued = server.records[0].output or []
    assert set(first) == {"role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp",
                          "responseId"}
    assert (first["api"], first["provider"], first["model"]) == ("openai-responses", "openai", "o4-mini")
    thinking, call = first["content"]
    assert json.loads(thinking["thinkingSignature"]) == issued[0] and call["id"].count("|") == 1
    assert set(last["content"][1]) == {"type", "text", "textSignature"}


@needs_pi
def test_pi_continues_a_session_we_wrote_on_responses(server: FakeResponsesServer, tmp_path: Path) -> None:
    files(tmp_path, 2)
    loop(server, 1)
    session = tmp_path / "s.jsonl"
    run_ours(server, tmp_path, session, "Read f0.txt.")
    ours = server.records[-1].body
    server.enqueue(call_reply("read", {"path": "f1.txt"}, reasoning="One more."), text_reply("Both read."))
    run = run_pi("openai", server.base_url, "Now f1.txt.", tmp_path, extra_args=("--session", str(session)))
    assert run.returncode == 0, run.stderr
    assert server.rejections == []
    pis = server.records[2].body  # pi's first request on our session
    assert reasoning_ids(pis) == reasoning_ids(ours) + [item["id"] for item in server.records[1].output or []
                                                        if item["type"] == "reasoning"]
    assert list(pis) == list(ours)  # the same top-level keys in the same order
    assert [item.get("type", "message") for item in pis["input"][1:]] == [
        item.get("type", "message") for item in ours["input"][1:]] + ["reasoning", "message", "message"]


@needs_pi
def test_we_continue_a_session_pi_wrote_on_responses(server: FakeResponsesServer, tmp_path: Path) -> None:
    files(tmp_path, 2)
    loop(server, 1)
    session = tmp_path / "pi.jsonl"
    run = run_pi("openai", server.base_url, "Read f0.txt.", tmp_path, extra_args=("--session", str(session)))
    assert run.returncode == 0, run.stderr
    pis = server.records[-1].body
    loop(server, 0)
    run_ours(server, tmp_path, session, "Anything else?")
    assert server.rejections == []
    ours = server.records[-1].body
    # pi's reasoning items, message ids and call ids go back exactly as pi itself sent them, then its last reply's.
    sent_by_pi = len(pis["input"])
    assert ours["input"][1:sent_by_pi] == pis["input"][1:sent_by_pi]
    last_reply = [item for item in server.records[1].output or [] if item["type"] == "reasoning"]
    assert [item for item in ours["input"][sent_by_pi:] if item.get("type") == "reasoning"] == last_reply
    assert [message["api"] for message in assistant_messages(session)] == ["openai-responses"] * 3
