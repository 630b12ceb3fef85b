"""``triggers.decide``: the one decision of when an automatic compaction runs, one behaviour per test."""

from __future__ import annotations

from typing import Any

from pi_compact.agent.compaction.reasons import OVERFLOW_GIVE_UP, REASONS, SKIP_TEXT, words
from pi_compact.agent.compaction.triggers import Point, decide
from pi_compact.settings import CompactionSettings

BUDGETS = CompactionSettings(reserve_tokens=1_000, keep_recent_tokens=500)
WINDOW = 10_000  # threshold 9,000


def ask(point: Point = "before_prompt", tokens: int = 100, **values: Any) -> str | None:
    values.setdefault("threshold", 9_000)  # the plan's (``compaction.window``): window - reserveTokens here
    return decide(point, tokens=tokens, context_window=WINDOW, budgets=values.pop("budgets", BUDGETS), **values)


def test_a_small_context_needs_nothing() -> None:
    assert ask(tokens=100) is None


def test_past_the_threshold_compacts_for_threshold() -> None:
    assert ask(tokens=9_001) == "threshold"


def test_exactly_at_the_threshold_does_not_compact() -> None:
    assert ask(tokens=9_000) is None


def test_an_overflowed_reply_compacts_for_overflow() -> None:
    assert ask("reply", overflowed=True) == "overflow"


def test_an_overflow_left_from_the_last_run_compacts_before_the_prompt() -> None:
    assert ask("before_prompt", overflowed=True) == "overflow"


def test_an_overflow_given_up_on_is_not_compacted_again() -> None:
    assert ask("reply", overflowed=True, overflow_given_up=True) is None


def test_a_given_up_overflow_before_a_prompt_still_checks_the_threshold() -> None:
    assert ask("before_prompt", tokens=9_500, overflowed=True, overflow_given_up=True) == "threshold"


def test_after_the_run_an_overflow_was_already_handled() -> None:
    assert ask("after_run", tokens=9_500, overflowed=True) is None


def test_a_reply_never_compacts_for_the_threshold() -> None:
    assert ask("reply", tokens=9_500) is None


def test_between_tool_turns_past_the_threshold_compacts() -> None:
    assert ask("tool_turn", tokens=9_500) == "threshold"


def test_after_a_model_switch_past_the_new_threshold_compacts() -> None:
    assert ask("model_switch", tokens=9_500) == "threshold"


def test_auto_compaction_off_decides_nothing() -> None:
    assert ask(tokens=9_500, auto=False) is None
    assert ask("reply", overflowed=True, auto=False) is None


def test_compaction_disabled_in_the_settings_skips_the_threshold() -> None:
    off = CompactionSettings(enabled=False, reserve_tokens=1_000, keep_recent_tokens=500)
    assert ask(tokens=9_500, budgets=off) is None


def test_a_stopped_loop_guard_decides_nothing() -> None:
    assert ask(tokens=9_500, guard_stopped=True) is None


def test_a_cancelled_turn_starts_nothing() -> None:
    assert ask("after_run", tokens=9_500, cancelled=True) is None


def test_a_finished_background_summary_is_committed_below_the_threshold() -> None:
    assert ask("tool_turn", tokens=7_000, summary_ready=True) == "threshold"


# ---- the words per reason --------------------------------------------------------------------------


def test_every_reason_has_its_words() -> None:
    assert words("threshold").failed("500") == "Auto-compaction failed: 500"
    assert words("overflow").failed("x") == "Context overflow recovery failed: x"
    assert words("manual").failed("x") == "Compaction failed: x"
    assert words("threshold").cancelled == "Auto-compaction cancelled; nothing was written."
    assert words("threshold").label(83.4) == "Auto-compacting (context 83% full)…"
    assert words("threshold").label(None) == "Auto-compacting (context ?% full)…"
    assert words("manual").label(50.0) == "Compacting context…"
    assert [r for r, w in REASONS.items() if not w.automatic] == ["manual"]


def test_nothing_to_compact_is_written_once() -> None:
    assert SKIP_TEXT["no_messages"] == "Nothing to compact (no messages yet)."
    assert OVERFLOW_GIVE_UP.startswith("Context overflow recovery failed")
