"""The budgets of one window, derived once: pi's threshold, the soft threshold, when the keep crowds it."""

from __future__ import annotations

from pi_compact.compaction.budgets import Budgets
from pi_compact.settings import CompactionSettings


def test_the_threshold_is_the_window_less_the_reserve_and_triggers_strictly_past_it() -> None:
    budgets = Budgets.of(CompactionSettings(reserve_tokens=16_384), 200_000)
    assert budgets.threshold == 183_616
    assert not budgets.past(183_616) and budgets.past(183_617)


def test_compaction_off_is_never_past_the_threshold() -> None:
    assert not Budgets.of(CompactionSettings(enabled=False, reserve_tokens=1000), 10_000).past(9_999)


def test_the_soft_threshold_is_its_percent_of_the_threshold() -> None:
    settings = CompactionSettings(reserve_tokens=4_096, soft_threshold_percent=70)
    assert Budgets.of(settings, 16_384).soft_threshold == 12_288 * 70 // 100


def test_a_keep_of_half_the_threshold_crowds_it() -> None:
    assert Budgets(16_384, 4_096, 6_144).keep_crowds_threshold
    assert not Budgets(16_384, 4_096, 6_143).keep_crowds_threshold


def test_a_headroom_over_the_reserve_moves_the_threshold_down_to_leave_it() -> None:
    settings = CompactionSettings(reserve_tokens=16_384)
    assert Budgets.of(settings, 200_000, 28_576).threshold == 171_424
    assert Budgets.of(settings, 200_000, 12_000).threshold == 183_616  # inside the reserve: pi's threshold stands


def test_the_known_threshold_of_an_unknown_window_is_zero_not_minus_the_reserve() -> None:
    settings = CompactionSettings(reserve_tokens=4_096)
    assert Budgets.of(settings, 0).threshold == -4_096
    assert Budgets.of(settings, 0).known_threshold == 0
    assert Budgets.of(settings, 16_384).known_threshold == 12_288
