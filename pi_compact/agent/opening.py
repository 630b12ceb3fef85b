"""The entries that say which model a session uses: pi's opening pair, and a switch's ``model_change``.

pi opens a session without messages with its model and its thinking level. We record them when first
needed (the first prompt or model switch) rather than at start-up, which must not wait for the model
to resolve; like every entry they reach the file with the first answer. Without a usable model pi
records only the thinking level, and so do we. The level is the session's, clamped to the model
(``agent.thinking``); "off" when the model is unusable.
"""

from __future__ import annotations

from collections.abc import Callable

from pi_compact.errors import PiCompactError
from pi_compact.llm.protocol import ChatModel, ModelInfo
from pi_compact.session.store import SessionStore


def record_model(store: SessionStore, info: ModelInfo, now_ms: int) -> None:
    """A ``model_change`` entry: pi's provider name and the id without the litellm prefix."""
    store.append({"type": "model_change", "provider": info.provider, "modelId": info.model_id}, now_ms)


class Opening:
    """Records a new session's opening entries once, when ``record`` is first called."""

    def __init__(self, store: SessionStore, *, due: bool, now_ms: Callable[[], int]) -> None:
        self._store = store
        self._due = due  # only a session that starts without messages has them still to write
        self._now = now_ms

    def record(self, model: ChatModel, level_for: Callable[[ModelInfo], str]) -> str | None:
        """Write the opening pair if still due; returns the thinking level written (None: nothing written)."""
        if not self._due:
            return None
        self._due = False
        try:
            info = model.info
        except PiCompactError:
            info = None  # the prompt itself reports why the model is unusable
        level = "off"
        if info is not None:
            record_model(self._store, info, self._now())
            level = level_for(info)
        self._store.append({"type": "thinking_level_change", "thinkingLevel": level}, self._now())
        return level


__all__ = ["Opening", "record_model"]
