"""A compaction planned ahead (compaction/ahead.py): the soft threshold, and when an earlier plan still holds."""

from __future__ import annotations

from dataclasses import replace

from builders import assistant, chain, compaction, sized, user

from pi_compact.compaction.ahead import past_soft_threshold, plan_ahead, rebase
from pi_compact.compaction.budgets import Budgets
from pi_compact.compaction.plan import prepare_compaction
from pi_compact.settings import CompactionSettings

SETTINGS = CompactionSettings(reserve_tokens=2_000, keep_recent_tokens=400, token_estimator="chars4",
                              background=True, soft_threshold_percent=70)
MODEL = "openai/x"


def turns(count: int, start: int = 0) -> list[dict[str, object]]:
    """``count`` turns of a 100-token question and a 100-token answer."""
    messages: list[dict[str, object]] = []
    for number in range(start, start + count):
        messages += [user(f"Q{number} " + sized(99)), assistant(f"A{number} " + sized(99))]
    return messages


def test_soft_threshold_is_the_share_of_window_minus_reserve() -> None:
    budgets = Budgets.of(SETTINGS, 10_000)
    assert budgets.soft_threshold == 5_600
    assert past_soft_threshold(5_601, budgets, SETTINGS) and not past_soft_threshold(5_600, budgets, SETTINGS)


def test_soft_threshold_needs_background_and_automatic_compaction_on() -> None:
    assert not past_soft_threshold(9_000, Budgets.of(SETTINGS, 10_000), replace(SETTINGS, background=False))
    assert not past_soft_threshold(9_000, Budgets.of(SETTINGS, 10_000), replace(SETTINGS, enabled=False))


def test_unchanged_path_rebases_to_the_foreground_plan() -> None:
    path = chain(*turns(6))
    ahead = plan_ahead(path, SETTINGS, MODEL)
    assert ahead is not None
    assert rebase(ahead, path, SETTINGS, MODEL) == prepare_compaction(path, SETTINGS)


def test_entries_added_since_keep_the_cut_and_join_the_kept_tail() -> None:
    path = chain(*turns(6), *turns(2, start=6))
    ahead = plan_ahead(path[:12], SETTINGS, MODEL)
    assert ahead is not None
    plan = rebase(ahead, path, SETTINGS, MODEL)
    assert plan is not None
    assert plan.first_kept_entry_id == ahead.plan.first_kept_entry_id == "test-id-8"  # Q4
    assert plan.summarize_entry_ids == ahead.plan.summarize_entry_ids
    assert plan.kept_messages == tuple(e["message"] for e in path[8:])
    foreground = prepare_compaction(path, SETTINGS)
    assert foreground is not None and plan.tokens_before == foreground.tokens_before
    assert foreground.first_kept_entry_id == "test-id-12"  # what the foreground would cut now


def test_a_compaction_written_since_voids_the_plan() -> None:
    path = chain(*turns(6))
    ahead = plan_ahead(path, SETTINGS, MODEL)
    assert ahead is not None
    later = chain(*turns(6), compaction("s", "test-id-8"), *turns(1, start=6))
    assert rebase(ahead, later, SETTINGS, MODEL) is None


def test_another_branch_voids_the_plan() -> None:
    path = chain(*turns(6))
    ahead = plan_ahead(path, SETTINGS, MODEL)
    assert ahead is not None
    assert rebase(ahead, path[:10], SETTINGS, MODEL) is None  # moved to an earlier entry
    other = chain(*turns(5), user("other branch " + sized(99)), *turns(1, start=6))
    other[10]["id"], other[11]["parentId"] = "other-10", "other-10"
    assert rebase(ahead, other, SETTINGS, MODEL) is None


def test_other_budgets_or_model_void_the_plan() -> None:
    path = chain(*turns(6))
    ahead = plan_ahead(path, SETTINGS, MODEL)
    assert ahead is not None
    assert rebase(ahead, path, replace(SETTINGS, keep_recent_tokens=600), MODEL) is None
    assert rebase(ahead, path, SETTINGS, "openai/y") is None


def test_nothing_to_summarize_plans_nothing() -> None:
    assert plan_ahead(chain(*turns(1)), SETTINGS, MODEL) is None
