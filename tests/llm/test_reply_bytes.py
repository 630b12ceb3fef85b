"""What ``retry.provider.maxReplyBytes`` counts (issue 42, item 1): every byte a reply makes us hold, on the
assembler every path shares and in the Responses reader before it, not only text, thinking and arguments."""

from __future__ import annotations

import json
from typing import Any

from pi_compact.llm.assemble import ENTRY_BYTES, MessageAssembler, Pieces
from pi_compact.llm.http_sse import SseEvent
from pi_compact.llm.openai.chunks import ChunkReader
from pi_compact.llm.openai.responses_events import ResponsesReader
from pi_compact.llm.protocol import ModelInfo

INFO = ModelInfo("openai/scripted", "openai", 1000, None)


def call_chunk(index: int, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
    call = {"index": index, "id": call_id, "function": {"name": name, "arguments": arguments}}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


def feed(assembler: MessageAssembler, chunk: dict[str, Any]) -> None:
    for _ in assembler.feed(chunk):
        pass


def test_ids_names_and_each_new_call_are_counted() -> None:
    assembler = MessageAssembler(INFO, 1)
    feed(assembler, call_chunk(0, "i" * 20_000, "n" * 20_000))
    assert assembler.size == 40_000 + ENTRY_BYTES
    feed(assembler, call_chunk(0, "i" * 20_000, "n" * 20_000, "{}"))  # the same id and name again: nothing new held
    assert assembler.size == 40_002 + ENTRY_BYTES
    feed(assembler, call_chunk(1, "j", "m"))
    assert assembler.size == 40_004 + 2 * ENTRY_BYTES


def test_a_message_id_and_the_response_id_are_counted() -> None:
    assembler = MessageAssembler(INFO, 1)
    feed(assembler, {"choices": [], "response_id": "r" * 1000})
    feed(assembler, {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]})
    feed(assembler, {"choices": [{"index": 0, "delta": {"text_signature": "s" * 5000}, "finish_reason": None}]})
    assert assembler.size == 1000 + 1 + 5000


def test_what_the_reader_holds_is_added_to_the_count() -> None:
    assembler = MessageAssembler(INFO, 1)
    feed(assembler, {"choices": [{"index": 0, "delta": {"content": "abc"}, "finish_reason": None}],
                     "held_bytes": 700})
    assert assembler.size == 703


def test_the_responses_reader_counts_the_item_ids_it_remembers() -> None:
    events = [SseEvent(None, json.dumps({"type": "response.output_text.delta", "output_index": n,
                                         "item_id": f"msg_{n}" + "m" * 10_000, "delta": "x"})) for n in range(3)]
    held = [chunk["held_bytes"] for chunk in _take(ResponsesReader().chunks(events), 3)]
    assert held[0] > 10_000 and held[2] > 3 * 10_000 and held[0] < held[1] < held[2]


def test_unknown_fields_of_a_chat_delta_are_not_passed_on() -> None:
    data = json.dumps({"choices": [{"index": 0, "delta": {"content": "x", "junk": "j" * 1000}}]})
    chunk = next(iter(ChunkReader("m", []).chunks([SseEvent(None, data)])))
    assert chunk["choices"][0]["delta"] == {"content": "x"}


def test_pieces_join_many_small_deltas_in_order() -> None:
    pieces = Pieces("start:")
    for n in range(2000):
        pieces.add(str(n % 10))
    assert pieces.text() == "start:" + "".join(str(n % 10) for n in range(2000))


def _take(chunks: Any, count: int) -> list[dict[str, Any]]:
    out = []
    for chunk in chunks:
        out.append(chunk)
        if len(out) == count:
            return out
    return out
