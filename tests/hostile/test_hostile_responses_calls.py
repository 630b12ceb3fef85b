"""Responses function calls without item ids stay apart (issue 42, item 7): two such calls became one
``None|None`` call with both argument strings run together, and neither ran. Calls are kept apart by their output
index; a reply whose calls cannot be paired is refused with one clear sentence. Through the real CLI against a
server sending exactly those events."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from capped_cli import run_capped
from fakes.raw_events import RawAnswer, RawEventServer

USAGE = {"input_tokens": 10, "output_tokens": 5, "input_tokens_details": {"cached_tokens": 0}}


@pytest.fixture()
def raw() -> Iterator[RawEventServer]:
    server = RawEventServer().start()
    yield server
    server.stop()


def call_events(calls: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A reply of function calls (items as given: no ``id``), their arguments streamed by output index only."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": "resp_1"}}]
    for index, call in enumerate(calls):
        arguments = str(call.get("arguments", ""))
        item = {"type": "function_call", **{k: v for k, v in call.items() if k != "arguments"}, "arguments": ""}
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        events.append({"type": "response.function_call_arguments.delta", "output_index": index, "delta": arguments})
        events.append({"type": "response.output_item.done", "output_index": index,
                       "item": {**item, "arguments": arguments}})
    events.append({"type": "response.completed", "response": {"id": "resp_1", "usage": USAGE}})
    return events


def text_events(text: str) -> list[dict[str, Any]]:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": text}]}
    return [{"type": "response.created", "response": {"id": "resp_2"}},
            {"type": "response.output_item.added", "output_index": 0, "item": {**item, "content": []}},
            {"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1", "delta": text},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {"id": "resp_2", "usage": USAGE}}]


def _run(tmp_path: Path, raw: RawEventServer) -> Any:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    (project / "a.txt").write_text("alpha\n", encoding="utf-8")
    (project / "b.txt").write_text("beta\n", encoding="utf-8")
    return run_capped(tmp_path, ["--model", "openai/gpt-4.1", "--api-key", "sk-test", "--no-session", "-p",
                                 "read a.txt and b.txt"], cwd=project,
                      models={"providers": {"openai": {"baseUrl": raw.base_url}}})


def test_two_calls_without_item_ids_both_run_and_both_results_go_back(tmp_path: Path, raw: RawEventServer) -> None:
    raw.enqueue(RawAnswer(call_events([{"call_id": "call_a", "name": "read", "arguments": '{"path": "a.txt"}'},
                                       {"call_id": "call_b", "name": "read", "arguments": '{"path": "b.txt"}'}])),
                RawAnswer(text_events("Both read.")))
    done = _run(tmp_path, raw)
    assert (done.returncode, done.stdout.strip()) == (0, "Both read."), done.stderr
    sent = raw.requests[1]["input"]
    calls = [(item["call_id"], item["name"], json.loads(item["arguments"])) for item in sent
             if item.get("type") == "function_call"]
    assert calls == [("call_a", "read", {"path": "a.txt"}), ("call_b", "read", {"path": "b.txt"})]
    assert all("id" not in item for item in sent if item.get("type") == "function_call")
    outputs = {item["call_id"]: item["output"] for item in sent if item.get("type") == "function_call_output"}
    assert set(outputs) == {"call_a", "call_b"}
    assert "alpha" in str(outputs["call_a"]) and "beta" in str(outputs["call_b"])


@pytest.mark.parametrize(("calls", "words"), [
    ([{"name": "read", "arguments": '{"path": "a.txt"}'}],
     "the function call at output index 0 has no call_id, so its result could not be paired with it"),
    ([{"call_id": "call_a", "name": "read", "arguments": '{"path": "a.txt"}'},
      {"call_id": "call_a", "name": "read", "arguments": '{"path": "b.txt"}'}],
     "two function calls have the call_id call_a, so their results could not be told apart"),
])
def test_a_reply_whose_calls_cannot_be_paired_is_refused_in_one_sentence(
    tmp_path: Path, raw: RawEventServer, calls: list[Mapping[str, Any]], words: str
) -> None:
    raw.enqueue(RawAnswer(call_events(calls)))
    done = _run(tmp_path, raw)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 1
    assert lines == [f"pi-compact: The Responses stream could not be used: {words}."], done.stderr
    assert len(raw.requests) == 1  # nothing ran, nothing was retried


def test_arguments_for_a_call_that_was_never_started_are_refused(tmp_path: Path, raw: RawEventServer) -> None:
    events = call_events([{"call_id": "call_a", "name": "read", "arguments": '{"path": "a.txt"}'}])
    events.insert(-1, {"type": "response.function_call_arguments.delta", "output_index": 7, "delta": "{}"})
    raw.enqueue(RawAnswer(events))
    done = _run(tmp_path, raw)
    assert done.returncode == 1
    assert done.stderr.strip() == ("pi-compact: The Responses stream could not be used: it sent function call "
                                   "arguments for output index 7, which started no call."), done.stderr
