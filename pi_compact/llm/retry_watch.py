"""``RetryWatcher``: a ``ChatModel`` that reports each retry of the model it wraps to a callback.

Callers that only want the final message (the summarizer uses ``complete()``) never see ``Retrying``
events; wrapping the model lets whoever shows progress learn of them anyway. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from pi_compact.cancel import CancelToken
from pi_compact.llm.protocol import ChatModel, ChatRequest, Retrying, StreamEvent, WrappedModel


class RetryWatcher(WrappedModel):
    """Streams from ``model`` and calls ``on_retry`` for each ``Retrying`` event (which is still yielded)."""

    def __init__(self, model: ChatModel, on_retry: Callable[[Retrying], None]) -> None:
        super().__init__(model)
        self._on_retry = on_retry

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        events = self.wrapped.stream(request, cancel)  # not inside the generator: errors raise here
        return self._watch(events)

    def _watch(self, events: Iterator[StreamEvent]) -> Iterator[StreamEvent]:
        for event in events:
            if isinstance(event, Retrying):
                self._on_retry(event)
            yield event
