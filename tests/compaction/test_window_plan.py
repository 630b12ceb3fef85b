"""The window plan (issue 43): one value holds every budget of a conversation, derived once from a model's
facts, the settings and the thinking level; the output cap and the thinking budget never depend on a prompt."""

from __future__ import annotations

from pi_compact.compaction.window import ANSWER_FLOOR, plan_window
from pi_compact.model_facts import ModelInfo
from pi_compact.settings import CompactionSettings, Settings

SONNET = ModelInfo("anthropic/claude-sonnet-4-5", "anthropic", 200_000, 64_000, reasoning=True)
GPT = ModelInfo("openai/gpt-5", "openai", 400_000, 128_000, reasoning=True)
LOCAL = ModelInfo("local", "local", 16_384, 1_024)


def test_medium_thinking_on_a_200k_window_sends_its_budget_with_room_for_an_answer_after_it() -> None:
    plan = plan_window(Settings(), SONNET, "medium")
    assert (plan.thinking_budget, plan.output_cap, plan.answer_room) == (8_192, 8_192 + ANSWER_FLOOR, ANSWER_FLOOR)
    assert plan.threshold == 200_000 - 16_384 - 4_000  # the cap and the 2 % estimate margin left free


def test_without_thinking_the_cap_is_what_the_reserve_leaves_and_pis_threshold_stands() -> None:
    plan = plan_window(Settings(), SONNET, "off")
    assert (plan.thinking_budget, plan.output_cap) == (0, 16_384 - 4_000)
    assert plan.threshold == 183_616


def test_a_reserve_larger_than_the_cap_needs_keeps_pis_threshold_and_asks_no_more_than_pi() -> None:
    plan = plan_window(Settings(compaction=CompactionSettings(reserve_tokens=50_000)), SONNET, "medium")
    assert plan.output_cap == 32_000 + 8_192  # pi's number is the ceiling
    assert plan.threshold == 150_000


def test_high_thinking_moves_the_threshold_down_by_its_budget() -> None:
    plan = plan_window(Settings(), SONNET, "high")
    assert (plan.thinking_budget, plan.output_cap) == (16_384, 16_384 + ANSWER_FLOOR)
    assert plan.threshold == 200_000 - 24_576 - 4_000


def test_a_model_that_reasons_by_effort_gets_room_for_its_reasoning_but_sends_no_budget() -> None:
    plan = plan_window(Settings(), GPT, "medium")
    assert plan.thinking_budget == 0 and plan.output_cap == 8_192 + ANSWER_FLOOR


def test_the_models_own_output_limit_caps_the_plan() -> None:
    plan = plan_window(Settings(), LOCAL, "off")
    assert plan.output_cap == 1_024
    assert plan.threshold == 16_384 - 4_096  # the reserve fitted to the small window decides


def test_an_unknown_window_plans_no_cap_and_no_threshold() -> None:
    plan = plan_window(Settings(), None, "medium")
    assert (plan.output_cap, plan.thinking_budget, plan.threshold, plan.window) == (0, 0, 0, 0)


def test_a_prompt_fits_only_while_it_leaves_the_cap_and_the_margin_free() -> None:
    plan = plan_window(Settings(), SONNET, "medium")
    assert plan.fits(200_000 - plan.headroom) and not plan.fits(200_000 - plan.headroom + 1)


def test_a_tiny_reserve_gets_a_short_cap_without_thinking_and_room_for_an_answer_with_it() -> None:
    tiny = Settings(compaction=CompactionSettings(reserve_tokens=2_000))
    assert plan_window(tiny, SONNET, "off").output_cap == 256  # the least cap: the reserve leaves less
    assert plan_window(tiny, SONNET, "off").threshold == 200_000 - 256 - 4_000
    assert plan_window(tiny, SONNET, "high").output_cap == 16_384 + 1_024  # the budget and 1,024 for the answer
