"""The loop guard: when automatic compaction stops helping, stop it and say why (pure state).

A compaction is futile when it frees less than ``MIN_FREED_SHARE`` of the context, leaves it past the
threshold, writes nothing because nothing would be gained, or when the context is back past the
threshold within ``REFILL_TURNS`` turns. After ``LIMIT`` futile compactions in a row, automatic
compaction stops for the session (manual ``/compact`` still works; ``/autocompact on`` resets the guard),
so no more than ``LIMIT`` futile summarizer calls are ever made in a row. The session asks the guard
before each automatic compaction and tells the user once, with ``diagnosis``' top consumers.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_FREED_SHARE = 0.2
REFILL_TURNS = 2
LIMIT = 2


@dataclass
class LoopGuard:
    """Per-session record of how well automatic compactions worked."""

    streak: int = 0  # futile compactions in a row
    stopped: bool = False
    _turns_since: int | None = None  # turns watched since a compaction that looked useful
    _last_turn: int | None = None

    def compacted(self, before: int, after: int, threshold: int) -> None:
        """Record an automatic compaction that was written: ``before``/``after`` context tokens."""
        freed = (before - after) / before if before > 0 else 0.0
        if freed < MIN_FREED_SHARE or after > threshold:
            self.futile()
        else:
            self._turns_since = 0  # useful so far: see whether the context refills at once

    def futile(self) -> None:
        """Record a futile automatic compaction (also one that wrote nothing for lack of gain)."""
        self.streak += 1
        self._turns_since = None

    def observe(self, turn: int, tokens: int, threshold: int) -> None:
        """The context after turn number ``turn`` (a turn already seen is ignored)."""
        if turn == self._last_turn or self._turns_since is None:
            self._last_turn = turn
            return
        self._last_turn = turn
        self._turns_since += 1
        if tokens > threshold:
            self.futile()  # back over the threshold within REFILL_TURNS turns
        elif self._turns_since >= REFILL_TURNS:
            self.streak, self._turns_since = 0, None  # that compaction really helped

    @property
    def should_stop(self) -> bool:
        return not self.stopped and self.streak >= LIMIT

    def stop(self) -> None:
        self.stopped = True

    def reset(self) -> None:
        self.streak, self.stopped, self._turns_since, self._last_turn = 0, False, None, None


__all__ = ["LIMIT", "MIN_FREED_SHARE", "REFILL_TURNS", "LoopGuard"]
