"""``RetryWatcher``: a ``ChatModel`` that reports each retry of the model it wraps to a callback.

Callers that only want the final message (the compaction summarizer uses ``complete()``) never see
``Retrying`` events; wrapping the model lets whoever shows progress learn about them anyway, without
the caller changing. Everything else passes through untouched, including an ``AuthError`` raised by
``stream()`` itself. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from pi_compact.llm.protocol import CancelToken, ChatModel, ChatRequest, ModelInfo, Retrying, StreamEvent


class RetryWatcher:
    """Streams from ``model`` and calls ``on_retry`` for each ``Retrying`` event (which is still yielded)."""

    def __init__(self, model: ChatModel, on_retry: Callable[[Retrying], None]) -> None:
        self._model = model
        self._on_retry = on_retry

    @property
    def info(self) -> ModelInfo:
        return self._model.info

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        events = self._model.stream(request, cancel)  # not inside the generator: errors raise here
        return self._watch(events)

    def _watch(self, events: Iterator[StreamEvent]) -> Iterator[StreamEvent]:
        for event in events:
            if isinstance(event, Retrying):
                self._on_retry(event)
            yield event
