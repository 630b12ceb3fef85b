"""The seam's small helpers: complete() and CancelToken."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from pi_compact.cancel import CancelToken
from pi_compact.llm.protocol import (
    ChatModel,
    ChatRequest,
    Done,
    ModelInfo,
    StreamEvent,
    TextDelta,
    assistant_message,
    complete,
)

INFO = ModelInfo("openai/fake", "openai", 1000, None)


class ListModel(ChatModel):
    """A ChatModel that replays a fixed list of events."""

    def __init__(self, events: list[StreamEvent]) -> None:
        self.events = events

    @property
    def info(self) -> ModelInfo:
        return INFO

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        return iter(self.events)


def test_complete_returns_the_done_message() -> None:
    done = assistant_message(INFO, [{"type": "text", "text": "hi"}], stop_reason="stop")
    assert complete(ListModel([TextDelta("hi"), Done(done)]), ChatRequest("", [])) is done


def test_complete_reports_a_stream_without_done_as_an_error() -> None:
    message = complete(ListModel([TextDelta("hi")]), ChatRequest("", []))
    assert message["stopReason"] == "error"
    assert message["errorMessage"] == "The model stream ended without a final message"


def test_cancel_token_wait_returns_early_once_cancelled() -> None:
    token = CancelToken()
    threading.Timer(0.05, token.cancel).start()
    started = time.monotonic()
    assert token.wait(5) is True
    assert time.monotonic() - started < 1
    assert token.cancelled and token.wait(0) is True


def test_cancel_token_wait_times_out_when_not_cancelled() -> None:
    token = CancelToken()
    assert token.wait(0.01) is False
    assert not token.cancelled
