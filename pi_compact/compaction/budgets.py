"""The compaction budgets of one context window, derived once from the settings (pure).

``Budgets.of(settings, window)`` is the one place ``window - reserveTokens`` is written: the threshold
past which compaction runs, the share of it where a background summary starts, the room a branch summary
may take, and how big a kept tail may be before it leaves the summary no room. Callers make one value for
the model they talk to and pass it on instead of doing the subtraction themselves. The settings given are
the ones in force (fitted to the window, ``threshold.fit_to_window``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pi_compact.settings import CompactionSettings


@dataclass(frozen=True)
class Budgets:
    """What ``reserveTokens`` and ``keepRecentTokens`` mean on one window."""

    window: int
    reserve: int
    keep: int
    soft_percent: int = CompactionSettings().soft_threshold_percent
    enabled: bool = True  # ``compaction.enabled``: whether the threshold triggers at all

    @classmethod
    def of(cls, settings: CompactionSettings, window: int) -> Budgets:
        return cls(window, settings.reserve_tokens, settings.keep_recent_tokens, settings.soft_threshold_percent,
                   settings.enabled)

    @property
    def threshold(self) -> int:
        """Context tokens past which (strictly) compaction runs: pi's ``window - reserveTokens``."""
        return self.window - self.reserve

    @property
    def soft_threshold(self) -> int:
        """Context tokens past which a background summary starts: ``softThresholdPercent`` of the threshold."""
        return self.threshold * self.soft_percent // 100

    def past(self, context_tokens: int) -> bool:
        """Is a context of ``context_tokens`` due for automatic compaction?"""
        return self.enabled and context_tokens > self.threshold

    @property
    def keep_crowds_threshold(self) -> bool:
        """Does the kept tail take half the threshold or more (so a summary has little room left)?"""
        return self.window > 0 and self.keep * 2 >= self.threshold


__all__ = ["Budgets"]
