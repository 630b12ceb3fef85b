"""``retry.provider.maxReplyBytes`` counts every byte a reply makes us hold (issue 42, item 1). Only text,
thinking and argument bytes were counted: a chat stream opening a new tool call with a 20 KB id and name in
every chunk, or a Responses stream of one-character deltas each naming a new 100 KB item, grew past a gigabyte
with the cap at 1 MB. Each attack runs through the real CLI with its address space capped at 1 GiB: the reply
must be stopped at the cap with the usual sentence, not by the memory limit."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from capped_cli import run_capped
from fakes.raw_events import RawAnswer, RawEventServer

CAP = 1_000_000


@pytest.fixture()
def raw() -> Iterator[RawEventServer]:
    server = RawEventServer().start()
    yield server
    server.stop()


def new_call_every_chunk() -> Iterator[dict[str, Any]]:
    """Chat completions: each chunk opens tool call number n with a 20 KB id and a 20 KB name, no arguments."""
    for n in itertools.count():
        call = {"index": n, "id": f"{n:08d}" + "i" * 20_000, "type": "function",
                "function": {"name": f"{n:08d}" + "n" * 20_000, "arguments": ""}}
        yield {"id": "c", "object": "chat.completion.chunk", "model": "m",
               "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}


def new_item_every_delta() -> Iterator[dict[str, Any]]:
    """Responses: one-character text deltas, each naming a new 100 KB item id."""
    yield {"type": "response.created", "response": {"id": "resp_1"}}
    for n in itertools.count():
        yield {"type": "response.output_text.delta", "output_index": 0, "item_id": f"msg_{n:08d}" + "m" * 100_000,
               "delta": "x"}


def new_message_every_event() -> Iterator[dict[str, Any]]:
    """Responses: message items arriving whole, one character each, each with a new 100 KB id."""
    yield {"type": "response.created", "response": {"id": "resp_1"}}
    for n in itertools.count():
        item = {"type": "message", "id": f"msg_{n:08d}" + "m" * 100_000, "role": "assistant",
                "content": [{"type": "output_text", "text": "x"}]}
        yield {"type": "response.output_item.done", "output_index": n, "item": item}


@pytest.mark.parametrize(("model", "events"), [
    ("openai/attacker", new_call_every_chunk),
    ("openai/gpt-4.1", new_item_every_delta),
    ("openai/gpt-4.1", new_message_every_event),
])
def test_a_reply_made_of_ids_and_names_is_stopped_at_the_cap_within_bounded_memory(
    tmp_path: Path, raw: RawEventServer, model: str, events: Any
) -> None:
    raw.enqueue(RawAnswer(events()))
    # (A window this large keeps the post-turn compaction check, which counts the stopped reply, quiet.)
    args = ["--model", model, "--api-key", "sk-test", "--context-window", "8000000", "--no-session", "-p", "hi"]
    models = None
    if model == "openai/attacker":
        args[2:2] = ["--api-base", raw.base_url]
    else:  # OpenAI's Responses API, moved to the fake server as pi moves it
        models = {"providers": {"openai": {"baseUrl": raw.base_url}}}
    done = run_capped(tmp_path, args, cwd=tmp_path, models=models, timeout=60,
                      settings={"retry": {"maxRetries": 0, "provider": {"maxReplyBytes": CAP}}})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == [f"pi-compact: Stopped the reply from {raw.base_url}: it passed 1 MB without ending "
                     "(retry.provider.maxReplyBytes); what it streamed until then is kept."], done.stderr[-2000:]
    assert done.returncode == 1
    assert raw.hung_up.wait(5)  # the connection was dropped
