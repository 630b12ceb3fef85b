"""The compaction budgets of one context window, derived once from the settings (pure).

``Budgets.of(settings, window)`` is the one place ``window - reserveTokens`` is written: the threshold
past which compaction runs, the share of it where a background summary starts, the room a branch summary
may take, and how big a kept tail may be before it leaves the summary no room. Callers make one value for
the model they talk to and pass it on instead of doing the subtraction themselves. The settings given are
the ones in force (fitted to the window, ``threshold.fit_to_window``). ``answer_room`` is what every request
must leave free beside its prompt (the session plan's output cap and the estimate's margin:
``compaction.window.WindowPlan.headroom``); where it exceeds ``reserveTokens`` the threshold moves down to
leave it, so near the window a session compacts instead of shrinking the cap or the thinking budget.
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
    answer_room: int = 0  # what every request needs beside its prompt (0: ``reserveTokens`` alone)

    @classmethod
    def of(cls, settings: CompactionSettings, window: int, answer_room: int = 0) -> Budgets:
        return cls(window, settings.reserve_tokens, settings.keep_recent_tokens, settings.soft_threshold_percent,
                   settings.enabled, answer_room)

    @property
    def threshold(self) -> int:
        """Context tokens past which (strictly) compaction runs: pi's ``window - reserveTokens``, lower where
        the answer room (the planned output cap, its thinking budget inside) needs more than the reserve."""
        return self.window - max(self.reserve, self.answer_room)

    @property
    def known_threshold(self) -> int:
        """``threshold`` where the window is known, else 0 (what rules scaled to the threshold read as unknown)."""
        return self.threshold if self.window > 0 else 0

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
