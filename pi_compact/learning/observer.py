"""LearningModel: a ``ChatModel`` decorator that learns a model's real window from its overflow errors.

When a reply fails with an overflow error stating the limit ("maximum context length is 8192 tokens",
"prompt is too long: 210000 tokens > 200000 maximum", ...), the window is remembered for the model in
the book and used from then on, unless the user chose the window (``--context-window`` or settings:
theirs wins). ``report`` is told once when a learned window is learned or first used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from pi_compact.cancel import CancelToken
from pi_compact.learning.book import book_path, remember_window
from pi_compact.llm.overflow import stated_window
from pi_compact.llm.protocol import ChatModel, ChatRequest, Done, ModelInfo, StreamEvent


class LearningModel:
    """Wraps ``model``; its ``info`` carries the learned window once there is one."""

    def __init__(self, model: ChatModel, report: Callable[[str], None] | None = None) -> None:
        self._model = model
        self._report = report
        self._info: ModelInfo | None = None
        self._told = False

    @property
    def inner(self) -> ChatModel:
        """The model this one wraps (which adapter serves the requests)."""
        return self._model

    @property
    def info(self) -> ModelInfo:
        return self._info or self._model.info

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        # Called eagerly: a problem found before sending (no API key) is raised by this call, as the
        # protocol says, not on the first ``next``.
        events = self._model.stream(request, cancel)
        self._tell_if_learned_before()
        return self._watch(events)

    def _watch(self, events: Iterator[StreamEvent]) -> Iterator[StreamEvent]:
        for event in events:
            if isinstance(event, Done) and event.message.get("stopReason") == "error":
                self._learn(str(event.message.get("errorMessage") or ""))
            yield event

    def _tell_if_learned_before(self) -> None:
        info = self.info
        if not self._told and info.window_source == "learned":
            self._told = True
            self._say(f"Using the {info.context_window:,}-token context window {info.model}'s provider stated "
                      f"in an earlier overflow error (remembered in {book_path()}).")

    def _learn(self, error: str) -> None:
        window = stated_window(error)
        info = self.info
        if window is None or window == info.context_window:
            return
        remember_window(info.model, window)
        self._told = True
        if info.window_source in ("flag", "settings"):
            self._say(f"The provider of {info.model} states a {window:,}-token context window, but the "
                      f"{info.context_window:,} tokens from the {info.window_source} stay in force.")
            return
        self._info = replace(info, context_window=window, window_source="learned")
        self._say(f"Learned from the provider: {info.model} has a {window:,}-token context window (not "
                  f"{info.context_window:,}); using it from now on, in this and later sessions.")

    def _say(self, text: str) -> None:
        if self._report is not None:
            self._report(text)

    def __getattr__(self, name: str) -> object:
        return getattr(self._model, name)  # e.g. ``ready`` of a lazily resolved model


__all__ = ["LearningModel"]
