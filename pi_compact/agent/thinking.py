"""The session's thinking level: the one asked for, and the one in force for the current model.

Asked for, in pi's order: ``--thinking``, else the level a resumed session last recorded, else
``defaultThinkingLevel``, else pi's default ("medium"; a model that cannot think runs "off"). The level
in force is the asked one clamped to the model (``llm.thinking.clamp_level``); a clamp of a level the
user chose is told once per model. ``thinking_level_change`` entries are pi's shape, and one is
written only when the level in force differs from the file's latest (pi's ``setThinkingLevel``).
"""

from __future__ import annotations

from pi_compact.llm.protocol import ModelInfo
from pi_compact.llm.thinking import DEFAULT_LEVEL, LEVELS, Clamped, clamp_level, supported_levels


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
    """What the user asked for and what the file last recorded; clamps per model without writing."""

    def __init__(self, *, flag: str | None, recorded: str | None, default: str | None) -> None:
        chosen = flag or recorded or default
        self.asked = chosen if chosen in LEVELS else DEFAULT_LEVEL
        self.chosen = chosen in LEVELS  # the user's (or the file's) choice: a clamp of it is told
        self.recorded = recorded  # the file's latest level (None: none yet)
        self._told: set[tuple[str, str]] = set()  # (model, asked) clamps already told

    def ask(self, level: str) -> None:
        """The user chose ``level`` (``/thinking``, the cycle key)."""
        self.asked, self.chosen = level, True

    def in_force(self, info: ModelInfo) -> Clamped:
        return clamp_level(info, self.asked)

    def clamp_notice(self, info: ModelInfo) -> str | None:
        """One sentence the first time the asked level is clamped on ``info``'s model (None otherwise)."""
        clamped = self.in_force(info)
        key = (info.model, self.asked)
        if not clamped.changed or not self.chosen or key in self._told:
            return None
        self._told.add(key)
        levels = ", ".join(supported_levels(info))
        return (f"Thinking level {self.asked} is not available on {info.model_id} (it does {levels}); "
                f"using {clamped.level}.")


__all__ = ["ThinkingLevel", "level_entry", "next_level"]
