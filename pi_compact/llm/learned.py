"""Context windows learned from providers' overflow errors: the book on disk and ``LearningModel``.

When a reply fails with an overflow error that states the limit ("maximum context length is 8192
tokens"), the window is remembered for the model and used from then on, unless the user chose the
window (flag or settings: theirs wins). The book is one small JSON object ``{model: window}`` in the
user cache directory, written atomically; one that cannot be read or written counts as empty.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

from pi_compact.cancel import CancelToken
from pi_compact.llm.overflow import stated_window
from pi_compact.llm.protocol import ChatModel, ChatRequest, Done, ModelInfo, StreamEvent, WrappedModel
from pi_compact.paths import cache_dir

FILE_NAME = "learned-windows.json"


def book_path() -> Path:
    """Where the book lives: in pi-compact's cache directory, beside the local model's files."""
    return cache_dir() / FILE_NAME


def _read(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): v for k, v in data.items() if type(v) is int and v > 0}


def learned_window(model: str) -> int | None:
    """The window learned for ``model``, if any."""
    return _read(book_path()).get(model)


def remember_window(model: str, window: int) -> bool:
    """Record ``window`` for ``model``; False when it could not be written (it is then only used now)."""
    path = book_path()
    book = _read(path)
    book[model] = window
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(book, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        return False
    return True


class LearningModel(WrappedModel):
    """Wraps ``model``; its ``info`` carries the learned window once there is one. ``report`` is told
    once when a window is learned or a learned one is first used."""

    def __init__(self, model: ChatModel, report: Callable[[str], None] | None = None) -> None:
        super().__init__(model)
        self._report = report
        self._info: ModelInfo | None = None
        self._told = False

    @property
    def info(self) -> ModelInfo:
        return self._info or self.wrapped.info

    def stream(self, request: ChatRequest, cancel: CancelToken | None = None) -> Iterator[StreamEvent]:
        # Called eagerly: a problem found before sending (no API key) is raised by this call, as the
        # protocol says, not on the first ``next``.
        events = self.wrapped.stream(request, cancel)
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


__all__ = ["LearningModel", "book_path", "learned_window", "remember_window"]
