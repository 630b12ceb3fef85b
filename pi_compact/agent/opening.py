"""The entries that say which model and thinking level a session uses: pi's opening pair, a switch's
``model_change``, and ``thinking_level_change`` when the level changes.

pi opens a session without messages with its model and its thinking level. We record them when first
needed (the first prompt or model switch) rather than at start-up, which must not wait for the model
to resolve; like every entry they reach the file with the first answer. Without a usable model pi
records only the thinking level, and so do we. The level is the session's, clamped to the model
(below); "off" when the model is unusable.

The level asked for, in pi's order: ``--thinking``, else the level a resumed session last recorded, else
``defaultThinkingLevel``, else pi's default ("medium"; a model that cannot think runs "off"). The level in
force is the asked one clamped to the model (``llm.thinking.clamp_level``); a clamp of a level the user
chose is told once per model. An entry is written only when the level in force differs from the file's
latest (pi's ``setThinkingLevel``).
"""

from __future__ import annotations

from collections.abc import Callable

from pi_compact.errors import PiCompactError
from pi_compact.llm.protocol import ChatModel, ModelInfo
from pi_compact.llm.thinking import DEFAULT_LEVEL, LEVELS, Clamped, clamp_level, supported_levels
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


def recorded_level(store: SessionStore) -> str | None:
    """The newest level on the current branch (None: none), reading no other old entry of a resumed file."""
    changes, _ = store.customs_on_path(store.leaf_id, None, "thinking_level_change")
    level = changes[-1].get("thinkingLevel") if changes else None
    return level if isinstance(level, str) else None


def level_entry(level: str) -> dict[str, str]:
    """A ``thinking_level_change`` entry's fields, as pi writes them."""
    return {"type": "thinking_level_change", "thinkingLevel": level}


def next_level(info: ModelInfo, current: str) -> str:
    """The level after ``current`` among those ``info``'s model can do, wrapping round (pi's Shift+Tab)."""
    levels = supported_levels(info)
    if current not in levels:
        return levels[0]
    return levels[(levels.index(current) + 1) % len(levels)]


class ThinkingLevel:
    """The session's thinking level: what the user asked for, what the file last recorded, and the entries
    that keep the two in step (the opening pair once, then one ``thinking_level_change`` per change)."""

    def __init__(self, store: SessionStore, opening: Opening, *, flag: str | None, default: str | None,
                 notify: Callable[[str], None], now_ms: Callable[[], int]) -> None:
        self._store, self._opening, self._notify, self._now = store, opening, notify, now_ms
        self.recorded = recorded_level(store)  # the file's latest level (None: none yet)
        chosen = flag or self.recorded or default
        self.asked = chosen if chosen in LEVELS else DEFAULT_LEVEL
        self.chosen = chosen in LEVELS  # the user's (or the file's) choice: a clamp of it is told
        self._told: set[tuple[str, str]] = set()  # (model, asked) clamps already told

    def current(self, model: ChatModel) -> str:
        """The level in force on ``model`` (the one asked for while the model is still resolving)."""
        try:
            return self.in_force(model.info).level if model.ready else self.asked
        except PiCompactError:
            return self.asked

    def in_force(self, info: ModelInfo) -> Clamped:
        return clamp_level(info, self.asked)

    def open(self, model: ChatModel) -> None:
        """A new session's opening pair, the first time anything is written."""
        written = self._opening.record(model, lambda info: self.in_force(info).level)
        if written is not None:
            self.recorded = written

    def sync(self, info: ModelInfo) -> str:
        """The level in force on ``info``'s model; a clamp of the user's choice is told once, and a level
        other than the file's latest (pi's "off" when it has none) is recorded."""
        notice = self._clamp_notice(info)
        if notice is not None:
            self._notify(notice)
        level = self.in_force(info).level
        if level != (self.recorded or "off"):
            self._store.append(level_entry(level), self._now())
            self.recorded = level
        return level

    def set(self, model: ChatModel, level: str) -> Clamped:
        """``/thinking LEVEL`` (and the cycle key): the level from now on, clamped to the model."""
        self.open(model)
        self.asked, self.chosen = level, True
        self.sync(model.info)
        return self.in_force(model.info)

    def cycle(self, model: ChatModel) -> str:
        """The next level the model can do, wrapping round (pi's Shift+Tab)."""
        return self.set(model, next_level(model.info, self.current(model))).level

    def _clamp_notice(self, info: ModelInfo) -> str | None:
        clamped = self.in_force(info)
        key = (info.model, self.asked)
        if not clamped.changed or not self.chosen or key in self._told:
            return None
        self._told.add(key)
        levels = ", ".join(supported_levels(info))
        return (f"Thinking level {self.asked} is not available on {info.model_id} (it does {levels}); "
                f"using {clamped.level}.")


__all__ = ["Opening", "ThinkingLevel", "level_entry", "next_level", "record_model", "recorded_level"]
